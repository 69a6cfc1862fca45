"""`attest fixture verify`: is a fixture sound as it sits in the repository?

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


def stale_hashes(doc: fx.Fixture, secrets: Secrets) -> str | None:
    """A description of the first interaction whose stored hashes differ from its request's, or None."""
    for number, item in enumerate(fx.model_interactions(doc), start=1):
        key = request_key(
            item["provider"], item["method"], item["path"], item.get("query", ""), item["request"], secrets
        )
        changed = [c for c in COMPONENTS if key.hashes[c] != item["hashes"][c]]
        if changed:
            return f"interaction {number}: stored hashes do not match its request ({', '.join(changed)})"
    for number, item in enumerate(fx.tool_interactions(doc), start=1):
        call = call_key(
            item["server"],
            item.get("method", "POST"),
            item.get("path", "/"),
            item.get("query", ""),
            item["request"],
            secrets,
        )
        if call.hash != item["hash"]:
            return f"tool interaction {number}: stored hash does not match its request"
    return None


def verify_fixture(path: str | Path, secrets: Secrets | None = None) -> Verified:
    """Read (validate + scan) a fixture and check its digest and hashes; FixtureError on a problem."""
    secrets = secrets if secrets is not None else environment_secrets()
    doc = fx.read_fixture(path, secrets)
    if fx.canonical_digest(doc) != doc["digest"]:
        raise FixtureError("digest does not match the content (changed since it was written)", path)
    problem = stale_hashes(doc, secrets)
    if problem:
        raise FixtureError(problem, path)
    return Verified(Path(path), doc["name"], len(fx.model_interactions(doc)), doc["digest"])
