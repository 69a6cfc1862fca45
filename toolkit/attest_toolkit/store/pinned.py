"""`attest fixture push|pull`: attest fixtures kept in the object store, pinned by digest in the lock.

An object's key is `<prefix>/<name>/<hex>.attest.json`, where `sha256:<hex>` is the fixture's
canonical digest (`fixture.canonical_digest`: a reformat is not a change), so an object never
changes once written and a push of an unchanged fixture uploads nothing. `pull` recomputes the digest
of what the store returns and refuses an object that does not match its pin: whoever can write to the
bucket cannot change what a test replays without changing the lock line a reviewer sees.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .. import fixture as fx
from ..errors import AttestError
from ..secrets import Secrets, environment_secrets
from .client import (
    ObjectStore,
    StoreConfig,
    StoreError,
    StoreUsageError,
    config_from_env,
    configured,
    stored,
    usage,
)
from .lock import Lock, lock_path, read_lock, write_lock

DEFAULT_PREFIX = "attest"  # not ctxmesh's `fixtures/`, whose runs are listed by prefix
PREFIX_VARIABLE = "ATTEST_STORE_PREFIX"


@dataclass(frozen=True)
class Pinned:
    name: str
    digest: str
    transferred: bool  # False: already in the store (push) or already here (pull)


def object_key(prefix: str, name: str, digest: str) -> str:
    return f"{prefix.strip('/')}/{name}/{digest.removeprefix('sha256:')}{fx.SUFFIX}"


def push(
    config: StoreConfig,
    names: list[str],
    fixtures_dir: Path | None = None,
    lock: Path | None = None,
    prefix: str = DEFAULT_PREFIX,
) -> tuple[Path, list[Pinned]]:
    """Upload each named fixture (read, validated and scanned first) and pin it in the lock."""
    lock = lock or lock_path(fixtures_dir)
    paths = {name: usage(fx.fixture_path, name, fixtures_dir) for name in names}
    pins, store, secrets = _open(config, lock)
    done = []
    for name, path in paths.items():
        doc = stored(fx.read_fixture, path, secrets)
        digest = fx.canonical_digest(doc)
        key = object_key(prefix, name, digest)
        fresh = not store.exists(key)
        if fresh:
            store.put(key, fx.dumps({**doc, "digest": digest}).encode("utf-8"))
        pins[name] = digest
        done.append(Pinned(name, digest, fresh))
    stored(write_lock, lock, pins)
    return lock, done


def pulled_line(lock: Path, done: list[Pinned]) -> str:
    """What `attest fixture pull` did, on one line."""
    fetched = sum(1 for item in done if item.transferred)
    return f"attest fixture pull: {fetched} fetched, {len(done) - fetched} up to date ({lock})"


def pull(
    config: StoreConfig,
    names: list[str] | None = None,
    fixtures_dir: Path | None = None,
    lock: Path | None = None,
    prefix: str = DEFAULT_PREFIX,
) -> tuple[Path, list[Pinned]]:
    """Fetch the pinned fixtures that are missing or differ here, each verified against its pin."""
    lock = lock or lock_path(fixtures_dir)
    pins, store, secrets = _open(config, lock)
    done = []
    for name, digest in _wanted(pins, names, lock).items():
        path = usage(fx.fixture_path, name, fixtures_dir)
        if _local_digest(path, secrets) == digest:
            done.append(Pinned(name, digest, False))
            continue
        doc = fetch(store, prefix, name, digest, secrets)
        stored(fx.write_fixture, path, doc, secrets)
        done.append(Pinned(name, digest, True))
    return lock, done


def fetch(store: ObjectStore, prefix: str, name: str, digest: str, secrets: Secrets) -> fx.Fixture:
    """A pinned fixture from the store, refused unless its content has exactly the pinned digest."""
    key = object_key(prefix, name, digest)
    where = store.url(key)
    data = store.get(key, fx.MAX_FIXTURE_BYTES)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise StoreError("not a fixture (not UTF-8 text)", where) from None
    doc = stored(fx.parse_fixture, text, where)
    actual = fx.canonical_digest(doc)
    if actual != digest:
        raise StoreError(
            f"digest mismatch: the object's content is {actual[:19]}…, the lock pins {digest[:19]}…; "
            "refusing it (the object was changed after it was pushed)",
            where,
        )
    stored(fx.scan, doc, where, secrets, "pull")
    return doc


def pinned_reader(fixtures_dir: Path | None = None) -> Callable[[str, str], fx.Fixture] | None:
    """Reads pinned fixtures by (name, digest) for the comment's table, or None without a store."""
    if not configured():
        return None
    prefix = os.environ.get(PREFIX_VARIABLE) or DEFAULT_PREFIX
    store, secrets = ObjectStore(config_from_env()), environment_secrets()

    def read(name: str, digest: str) -> fx.Fixture:
        path = fx.fixture_path(name, fixtures_dir)
        if _local_digest(path, secrets) == digest:
            return fx.read_fixture(path, secrets)
        return fetch(store, prefix, name, digest, secrets)

    return read


def _open(config: StoreConfig, lock: Path) -> tuple[Lock, ObjectStore, Secrets]:
    return usage(read_lock, lock), ObjectStore(config), environment_secrets()


def _wanted(pins: Lock, names: list[str] | None, lock: Path) -> Lock:
    if not names:
        return pins
    unknown = [n for n in names if n not in pins]
    if unknown:
        raise StoreUsageError(f"not pinned: {', '.join(unknown)} (push it first)", lock)
    return {n: pins[n] for n in names}


def _local_digest(path: Path, secrets: Secrets) -> str | None:
    """The canonical digest of the fixture here, or None when it is missing or unreadable."""
    if not path.is_file():
        return None
    try:
        return fx.canonical_digest(fx.read_fixture(path, secrets))
    except (AttestError, json.JSONDecodeError):
        return None
