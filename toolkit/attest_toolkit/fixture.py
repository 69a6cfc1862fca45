"""The fixture: format v1 and v2, validation, the credential scan, and atomic reads and writes.

A fixture is a JSON document (see `schemas/fixture.schema.json`) written with sorted keys and two-space
indentation, so a re-record is a readable diff, and addressed by the sha256 of its canonical content,
so a reformat is not a change.
"""

from __future__ import annotations

import contextlib
import fcntl
import glob
import hashlib
import json
import os
import re
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from . import __version__
from .errors import AttestError, CredentialFound, FixtureError, UsageError, describe_os_error, read_text
from .normalize import eventstream
from .normalize.body import encoded_text
from .normalize.streams import find_streamed_secret
from .normalize.walk import named_secret
from .secret_names import is_secret_key
from .secrets import REDACTED, Secrets, environment_secrets, redact_argv
from .validation import first_error, json_pointer, load_schema

FORMAT = "attest-fixture"
# Version 2 adds the tool channel and the declared tool servers. A fixture without tools is still
# written as version 1, so toolkits that read only version 1 keep reading it; one with tools is
# version 2, so such a toolkit refuses it instead of replaying the model against live tools.
VERSION = 2
MODEL_ONLY_VERSION = 1
SUFFIX = ".attest.json"
DEFAULT_DIR = Path("tests/attest/fixtures")
SCHEMA = "fixture.schema.json"
PLAIN_CHANNEL = "http"  # plain HTTP the test process sent to hosts that are not model providers

Fixture = dict[str, Any]
Interaction = dict[str, Any]


# The documented cap on a fixture file (README): a bigger one is refused before it is read.
MAX_FIXTURE_BYTES = 64 * 1024 * 1024


def check_name(name: str) -> str:
    """The schema's name pattern keeps a fixture inside its directory: no `/`, no `..`, not absolute."""
    if not re.fullmatch(load_schema(SCHEMA)["properties"]["name"]["pattern"], name):
        raise UsageError(
            f"fixture name {name!r} must be letters, digits, '.', '_' or '-', starting with a letter or digit"
        )
    return name


def fixture_path(name: str, fixtures_dir: str | Path | None = None) -> Path:
    """`tests/attest/fixtures/<name>.attest.json`, or the same file under `fixtures_dir`."""
    return Path(fixtures_dir or DEFAULT_DIR) / f"{check_name(name)}{SUFFIX}"


def name_of(path: str | Path) -> str:
    name = Path(path).name
    return name[: -len(SUFFIX)] if name.endswith(SUFFIX) else Path(path).stem


def canonical_digest(doc: Fixture) -> str:
    body = {k: v for k, v in doc.items() if k != "digest"}
    raw = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(raw.encode("utf-8")).hexdigest()


def new_source(
    command: list[str], *, expect_fail: bool = False, exit_code: int | None = None, test: str | None = None
) -> dict:
    """`test`: the pytest node id, when a test recorded the fixture (`--attest-record`). The command is
    kept with its credentials redacted (`redact_argv`)."""
    return {
        "command": redact_argv(command, Secrets.of([])),
        "flags": {"expect_fail": expect_fail},
        "exit_code": exit_code,
        "recorded_at": datetime.now(timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z"),
        "toolkit_version": __version__,
        **({"test": test} if test else {}),
    }


def new_fixture(
    name: str,
    source: dict,
    model: list[Interaction],
    tool: list[Interaction] | None = None,
    tools: dict[str, dict] | None = None,
    plain: list[Interaction] | None = None,
) -> Fixture:
    """`plain`: the plain HTTP channel (`plain_http`), written only when it holds something; a
    toolkit that predates it carries it and never serves it."""
    with_tools = bool(tool or tools)
    channels: dict[str, list[Interaction]] = {"model": model}
    if with_tools:
        channels["tool"] = list(tool or [])
    if plain:
        channels[PLAIN_CHANNEL] = list(plain)
    doc: Fixture = {
        "format": FORMAT,
        "version": VERSION if with_tools else MODEL_ONLY_VERSION,
        "name": name,
        "source": source,
        "channels": channels,
    }
    if with_tools:
        doc["tools"] = dict(tools or {})
    doc["digest"] = canonical_digest(doc)
    return doc


def dumps(doc: Fixture) -> str:
    return json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


# --- the credential scan -------------------------------------------------------------------------


def find_credential(doc: Any, secrets: Secrets) -> tuple[str, str] | None:
    """(JSON pointer, kind) of the first credential in `doc`, or None. Never the value itself."""
    if _plainly_clean(doc, secrets):
        return None
    return _first_credential(doc, secrets)


def _plainly_clean(doc: Any, secrets: Secrets) -> bool:
    """True when no credential can be in `doc`: no secret-named value, nothing in a stream or a base64
    body, and nothing in its strings scanned together (`Secrets.none_in`); else the exact walk says
    where."""
    strings: list[str] = []
    stack: list[Any] = [doc]
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            strings.append(node)
        elif isinstance(node, dict):
            if named_secret(node) or (
                ("sse" in node or "base64" in node) and _body_credential(node, [], secrets)
            ):
                return False
            for key, value in node.items():
                if not isinstance(value, str):
                    stack.append(value)
                elif value and value != REDACTED and is_secret_key(key):
                    return False
                else:
                    strings.append(value)
        elif isinstance(node, list):
            stack.extend(node)
    return secrets.none_in(strings)


def _first_credential(doc: Any, secrets: Secrets) -> tuple[str, str] | None:
    stack: list[tuple[Any, list[str | int]]] = [(doc, [])]
    while stack:
        node, where = stack.pop()
        if isinstance(node, dict):
            named = named_secret(node)
            for key, value in node.items():
                secret_named = is_secret_key(key) or (named and key == "value")
                if secret_named and isinstance(value, str) and value and value != REDACTED:
                    return json_pointer([*where, key]), f'value of a "{key}" key'
                stack.append((value, [*where, key]))
            hit = _body_credential(node, where, secrets)
            if hit:
                return hit
        elif isinstance(node, list):
            stack.extend((v, [*where, i]) for i, v in enumerate(node))
        elif isinstance(node, str):
            kind = secrets.find(node)
            if kind:
                return json_pointer(where), kind
    return None


def _body_credential(
    body: dict[str, Any], where: list[str | int], secrets: Secrets
) -> tuple[str, str] | None:
    """A credential only a reader of the whole body sees: streamed across SSE or event-stream events, or
    base64-encoded."""
    events = body.get("sse")
    if isinstance(events, list) and all(isinstance(e, str) for e in events):
        found = find_streamed_secret(events, secrets)
        if found:
            return json_pointer([*where, "sse", found[0]]), found[1]
    frames = body.get("eventstream")
    if isinstance(frames, list) and frames:
        found = find_streamed_secret(eventstream.as_sse(frames), secrets)
        if found:
            return json_pointer([*where, "eventstream", found[0]]), found[1]
    text = encoded_text(body)
    kind = secrets.find(text) if text is not None else None
    if kind:
        return json_pointer([*where, "base64"]), f"{kind}, base64-encoded"
    return None


def scan(doc: Fixture, path: str | Path, secrets: Secrets, action: str) -> None:
    hit = find_credential(doc, secrets)
    if hit:
        where, kind = hit
        raise CredentialFound(f"credential found at {where} ({kind}); refusing to {action} it", path)


# --- reading and writing -------------------------------------------------------------------------


def parse_fixture(text: str, path: str | Path) -> Fixture:
    try:
        return _parse(text, path)
    except RecursionError:
        raise FixtureError("nested too deeply to be a fixture", path) from None


def _parse(text: str, path: str | Path) -> Fixture:
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise FixtureError(
            f"not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})", path
        ) from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise FixtureError(f'not an attest fixture (no "format": "{FORMAT}")', path)
    version = doc.get("version")
    if isinstance(version, int) and version > VERSION:
        raise FixtureError(
            f"fixture format version {version} is newer than this toolkit reads ({VERSION}); upgrade attest-toolkit",
            path,
        )
    problem = first_error(SCHEMA, doc)
    if problem:
        raise FixtureError(problem, path)
    return doc


def read_fixture(path: str | Path, secrets: Secrets | None = None) -> Fixture:
    """Read, validate and scan a fixture. Errors name the file and the problem on one line."""
    path = Path(path)
    missing = "no such fixture; record it with `attest capture`"
    text = read_text(path, FixtureError, "fixture", missing, MAX_FIXTURE_BYTES)
    doc = parse_fixture(text, path)
    scan(doc, path, secrets if secrets is not None else environment_secrets(), "read")
    return doc


def check_digest(doc: Fixture, path: str | Path) -> None:
    """Refuse a fixture changed since it was written: replay matches on the hashes stored beside each
    request, so an edited request would be ignored in silence; a deliberate edit is sealed first."""
    if canonical_digest(doc) != doc["digest"]:
        raise FixtureError(
            "digest does not match the content (changed since it was written); "
            f"if the edit is deliberate, seal it: attest fixture seal {name_of(path)}",
            path,
        )


def read_for_replay(path: str | Path, secrets: Secrets | None = None) -> Fixture:
    """`read_fixture`, and the digest checked: what every replay reads."""
    doc = read_fixture(path, secrets)
    check_digest(doc, path)
    return doc


def write_fixture(path: str | Path, doc: Fixture, secrets: Secrets | None = None) -> Path:
    """Scan, stamp the digest, and write atomically at mode 0600 (temp file, fsync, rename)."""
    path = Path(path)
    doc = {**doc, "digest": canonical_digest(doc)}
    scan(doc, path, secrets if secrets is not None else environment_secrets(), "write")
    _validate_before_write(doc, path)
    atomic_write(path, dumps(doc))
    return path


def _validate_before_write(doc: Fixture, path: Path) -> None:
    problem = first_error(SCHEMA, doc)
    if problem:
        raise FixtureError(f"refusing to write an invalid fixture: {problem}", path)


def atomic_write(path: Path, text: str, mode: int = 0o600) -> None:
    """Write `text` to `path` so that a reader sees the old file or the new one, never a part.

    The temp file's name carries the writer's pid, so a later write can tell a temp file left by a
    killed writer (removed) from one a live writer is still filling (kept). A full disk or a
    read-only file system is one line naming the file; the old file stays as it was."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        remove_stale_temp_files(path)
        _write_and_rename(path, text, mode)
    except OSError as exc:
        raise AttestError(f"cannot write: {describe_os_error(exc)}", path) from None
    with contextlib.suppress(OSError):
        dirfd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dirfd)
        finally:
            os.close(dirfd)


def _write_and_rename(path: Path, text: str, mode: int) -> None:
    import tempfile  # here, with shutil under it: a replay that only reads fixtures starts without them

    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.{os.getpid()}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
        os.chmod(path, mode)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on `path`'s directory: writers that read, merge and write a fixture
    (pytest workers recording under xdist) take turns, so none writes over another's merge. The
    lock is on the directory itself, so no lock file is left in the repository."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path.parent, os.O_RDONLY)
    except OSError as exc:
        raise AttestError(f"cannot write: {describe_os_error(exc)}", path) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, another user's
        return True
    return True


def remove_stale_temp_files(path: Path) -> None:
    """Remove temp files of `path` whose writer is gone (killed during a write)."""
    prefix = f".{path.name}."
    for candidate in path.parent.glob(f"{glob.escape(prefix)}*.tmp"):
        pid = candidate.name[len(prefix) :].split(".", 1)[0]
        if pid.isdigit() and not _pid_alive(int(pid)):
            with contextlib.suppress(FileNotFoundError):
                candidate.unlink()


def model_interactions(doc: Fixture) -> list[Interaction]:
    return doc["channels"]["model"]


def tool_interactions(doc: Fixture) -> list[Interaction]:
    return doc["channels"].get("tool", [])


def plain_interactions(doc: Fixture) -> list[Interaction]:
    return doc["channels"].get(PLAIN_CHANNEL, [])
