"""Refreshing only what missed: replay what still matches, record only the misses, keep the rest's bytes.

A partial refresh (`attest capture --refresh NAME --only-misses`, pytest's `--attest-record=new`) loads
the existing fixture into a strict replay session in front of the recording proxy. A call that matches
a recording is served from it, as replay serves it; a call that misses goes to the provider and is
recorded. The new fixture holds the calls in the order the run made them. A replayed interaction is
the very object read from the file, so it is written back byte for byte and the diff shows only the
new ones. For `--only-misses` a recording the run did not use is dropped: the command is the
fixture's whole run, so a changed prompt replaces its old recording instead of leaving it behind,
unused, for a later replay to trip over. pytest's `new` keeps them all, as vcrpy's new_episodes does
(two tests may share a fixture): the file's interactions stay where they are, the new ones follow.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from aiohttp import web

from ..credentials.scan import Secrets
from ..errors import UsageError
from ..fixtures.document import Fixture, Interaction, model_interactions, read_fixture, tool_interactions
from ..normalize import Exchange
from ..normalize.served import key_as_sent, restore, restore_bytes
from ..replay.answers import sent_of, serve_recording
from ..replay.index import Recording, load
from ..replay.modes import Mode
from ..replay.session import Session


class ReplayFirst:
    """The existing fixture, served where the run's calls still match it."""

    def __init__(
        self, path: Path, secrets: Secrets, keep_unused: bool = False, match: str = "strict"
    ) -> None:
        """`match`: "lenient" serves the calls by position (a rebase, see `rebase`)."""
        self.path = path
        self.secrets = secrets
        self.keep_unused = keep_unused
        self.original = _bytes_of(path)
        self.doc: Fixture = read_fixture(path, secrets)
        if tool_interactions(self.doc) or self.doc.get("tools"):
            raise UsageError(
                "has a tool channel, which neither a partial refresh nor a rebase merges; refresh it whole",
                path,
            )
        loaded = load(path, secrets)
        self.session = Session(
            [loaded], Mode.STRICT, match=match, secrets=secrets if match == "lenient" else None
        )
        # Recording -> its interaction in the file, so a replayed call keeps the object read from it.
        self._interaction = {
            id(rec): item for rec, item in zip(loaded.recordings, model_interactions(self.doc), strict=True)
        }
        self.entries: list[Interaction] = []  # every call of the run, in order: replayed and new

    def interaction(self, found: Recording) -> Interaction:
        """The interaction in the file that `found` was loaded from."""
        return self._interaction[id(found)]

    @property
    def replayed(self) -> int:
        return self.session.counters.replayed

    @property
    def dropped(self) -> int:
        """Recordings the run did not use, left out of the refreshed fixture."""
        return 0 if self.keep_unused else len(self._interaction) - self.replayed

    def channel(self, recorded: list[Interaction]) -> list[Interaction]:
        """The refreshed fixture's model calls, given the ones this run `recorded` live."""
        return [*model_interactions(self.doc), *recorded] if self.keep_unused else self.entries

    async def serve(
        self, request: web.Request, provider: str, path: str, raw: bytes
    ) -> web.StreamResponse | None:
        """The recording this call still matches, served; None when it misses (it goes live)."""
        rk, path = key_as_sent(sent_of(request, provider, path, raw), self.session.served, self.secrets)
        found = self.session.lookup(rk.key, rk.hashes, rk.model, f"{request.method} {path}")
        if not isinstance(found, Recording):
            return None
        self.session.counters.replayed += 1
        self.entries.append(self.interaction(found))
        return await serve_recording(request, found)

    def restore(self, exchange: Exchange) -> Exchange:
        """`exchange` with the ids replay served (and the agent sent back) as the placeholders they stand
        for, so a new recording refers to the same `{{id_N}}` as the replayed one it follows. Its answer
        too: a provider echoes what it was sent (a Responses answer names its `previous_response_id`)."""
        served = self.session.served
        return dataclasses.replace(
            exchange,
            path=restore(exchange.path, served),
            query=restore(exchange.query, served),
            request_body=restore_bytes(exchange.request_body, served),
            response_body=restore_bytes(exchange.response_body, served),
        )

    def still_on_disk(self) -> bool:
        """True when the file still holds what this refresh started from (no other writer meanwhile)."""
        return _bytes_of(self.path) == self.original


def _bytes_of(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:  # read_fixture says what is wrong with it, on one line
        return None
