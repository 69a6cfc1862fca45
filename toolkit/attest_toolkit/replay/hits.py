"""A session's hit table: what a runner needs to answer the session's hits in its own process.

The engine hands it when the session opens (`handed`), over the runner's private control pipe: the
served values a call's key is computed with, and for each recording (in order) its key and, when the
fast path could serve it, the HTTP head and body it would send. A runner that holds the table of
the same loaded fixture already gets its token alone. `HitTable` is one session's use of a table:
which recordings are taken, by whichever process took them.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..normalize.served import Sent

if TYPE_CHECKING:
    from .index import Recording

# status, reason, headers (as the wire has them), body: a stream's events joined, as vcrpy hands them
# (the client's SSE decoder reads them from one chunk as from many; replay has no pacing to keep).
Frame = tuple[int, bytes, list[tuple[bytes, bytes]], bytes]


def handed(
    recordings: Sequence[Recording], served: dict[str, str], token: str | None, have: Any
) -> dict[str, Any]:
    """The table of a session serving `recordings` (with `served` values), as the open's answer
    carries it; the token alone when the runner holds this loaded fixture's table (`have`)."""
    if token is not None and have == token:
        return {"token": token}
    heads: list[str | None] = []
    bodies: list[str | None] = []
    events: list[list[int] | None] = []  # a stream's event lengths: a runner may hand them one by one
    for rec in recordings:
        wire = rec.wire
        end = wire.find(b"\r\n\r\n") if wire is not None else -1
        heads.append(wire[:end].decode("latin-1") if wire is not None and end >= 0 else None)
        bodies.append(base64.b64encode(rec.body).decode("ascii") if wire is not None else None)
        events.append([len(e) for e in rec.events if e] if rec.events is not None else None)
    keys = [rec.key for rec in recordings]
    return {
        "token": token,
        "served": served,
        "keys": keys,
        "heads": heads,
        "bodies": bodies,
        "events": events,
    }


def _frame(head: str | None, body: str | None) -> Frame | None:
    if head is None or body is None:
        return None
    status_line, *lines = head.encode("latin-1").split(b"\r\n")
    _version, status, reason = status_line.split(b" ", 2)  # the wire's: "HTTP/1.1 200 OK", "HTTP/1.1 599 "
    headers = [tuple(line.split(b": ", 1)) for line in lines]
    return int(status), reason, headers, base64.b64decode(body)  # type: ignore[return-value]


@dataclass
class Table:
    """One loaded fixture's (or one session's fixtures') recordings as a runner answers them."""

    token: str | None  # the engine's name for the loaded fixture; None: a session's own fixtures
    served: dict[str, str]
    by_key: dict[str, tuple[int, ...]]
    frames: list[Frame | None]
    # The key of each call already seen by a session of this table, by the call as sent.
    keys: dict[Sent, str] = field(default_factory=dict)

    @classmethod
    def handed(cls, data: dict[str, Any], held: Table | None) -> Table | None:
        """The table an open's answer hands (None: none; or one this runner no longer holds)."""
        if "keys" not in data:
            return held if held is not None and held.token == data.get("token") else None
        by_key: dict[str, list[int]] = {}
        for position, key in enumerate(data["keys"]):
            by_key.setdefault(key, []).append(position)
        frames = [_frame(h, b) for h, b in zip(data["heads"], data["bodies"], strict=True)]
        return cls(data["token"], data["served"], {k: tuple(v) for k, v in by_key.items()}, frames)


class HitTable:
    """One session's recordings, each taken once, the recordings of a key in order (as
    `Session._next` takes them: a recording already taken, by either process, is passed over)."""

    def __init__(self, table: Table) -> None:
        self.table = table
        self.used = bytearray(len(table.frames))
        self.cursor: dict[str, int] = {}
        self.served = 0  # recordings this process answered with

    def next(self, key: str) -> int | None:
        """The position of the next unused recording for `key` this process can answer with; None
        when there is none (the call goes over HTTP, where the engine diagnoses it)."""
        positions = self.table.by_key.get(key)
        if positions is None:
            return None
        taken = self.cursor.get(key, 0)
        while taken < len(positions) and self.used[positions[taken]]:
            taken += 1
        self.cursor[key] = taken
        if taken == len(positions) or self.table.frames[positions[taken]] is None:
            return None
        return positions[taken]

    def take(self, position: int) -> Frame:
        self.used[position] = 1
        self.served += 1
        frame = self.table.frames[position]
        assert frame is not None  # `next` names only recordings with a frame
        return frame

    def mark(self, position: int) -> None:
        """The engine took the recording at `position`."""
        if 0 <= position < len(self.used):
            self.used[position] = 1
