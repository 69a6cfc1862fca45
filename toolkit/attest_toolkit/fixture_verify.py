"""`attest fixture verify` and `attest fixture seal`: is a fixture sound as it sits in the repository,
and sealing a deliberate hand edit so that it is again.

Beyond what every read does (schema validation and the credential scan), verify checks that the
digest still matches the content (content-addressed: a reformat keeps it, an edit does not) and that
each interaction's stored hashes are the ones its stored request gives today, since the engine looks
recordings up by those hashes and a stale one could never match.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from . import fixture as fx
from .errors import FixtureError
from .normalize import COMPONENTS, request_key
from .secrets import Secrets, environment_secrets
from .tools.match import call_key


@dataclass(frozen=True)
class Verified:
    path: Path
    name: str
    interactions: int
    digest: str


def model_hashes(item: fx.Interaction, secrets: Secrets) -> dict[str, str]:
    """The hashes a model interaction's stored request gives today."""
    key = request_key(
        item["provider"], item["method"], item["path"], item.get("query", ""), item["request"], secrets
    )
    return dict(key.hashes)


def tool_hash(item: fx.Interaction, secrets: Secrets) -> str:
    """The hash a tool interaction's stored request gives today."""
    return call_key(
        item["server"],
        item.get("method", "POST"),
        item.get("path", "/"),
        item.get("query", ""),
        item["request"],
        secrets,
    ).hash


def stale_hashes(doc: fx.Fixture, secrets: Secrets) -> str | None:
    """A description of the first interaction whose stored hashes differ from its request's, or None."""
    for number, item in enumerate(fx.model_interactions(doc), start=1):
        hashes = model_hashes(item, secrets)
        changed = [c for c in COMPONENTS if hashes[c] != item["hashes"][c]]
        if changed:
            return f"interaction {number}: stored hashes do not match its request ({', '.join(changed)})"
    for number, item in enumerate(fx.tool_interactions(doc), start=1):
        if tool_hash(item, secrets) != item["hash"]:
            return f"tool interaction {number}: stored hash does not match its request"
    return None


def verify_fixture(path: str | Path, secrets: Secrets | None = None) -> Verified:
    """Read (validate + scan) a fixture and check its digest and hashes; FixtureError on a problem."""
    secrets = secrets if secrets is not None else environment_secrets()
    doc = fx.read_for_replay(path, secrets)
    problem = stale_hashes(doc, secrets)
    if problem:
        raise FixtureError(problem, path)
    return Verified(Path(path), doc["name"], len(fx.model_interactions(doc)), doc["digest"])


def seal_fixture(path: str | Path, secrets: Secrets | None = None) -> list[str]:
    """Recompute every stored hash and the digest of a hand-edited fixture and write it back (still
    validated and scanned); one line per change, none when it was already sealed."""
    secrets = secrets if secrets is not None else environment_secrets()
    doc = fx.read_fixture(path, secrets)
    changes: list[str] = []
    for number, item in enumerate(fx.model_interactions(doc), start=1):
        hashes = model_hashes(item, secrets)
        changed = [c for c in COMPONENTS if hashes[c] != item["hashes"].get(c)]
        if changed:
            item["hashes"] = hashes
            changes.append(f"interaction {number}: hashes recomputed ({', '.join(changed)})")
    for number, item in enumerate(fx.tool_interactions(doc), start=1):
        fresh = tool_hash(item, secrets)
        if fresh != item["hash"]:
            item["hash"] = fresh
            changes.append(f"tool interaction {number}: hash recomputed")
    digest = fx.canonical_digest(doc)
    if digest != doc["digest"]:
        changes.append(f"digest {doc['digest']} -> {digest}")
        fx.write_fixture(path, doc, secrets)
    return changes
