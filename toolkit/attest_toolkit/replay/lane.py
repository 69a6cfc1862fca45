"""The lane: a test runner answers its own replayed hits, and tells its engine what it served.

A call made from the runner's process (an SDK client built in the test) is a hit almost every time.
When a session opens, the engine hands the runner the session's hit table (`hits.HitTable`: each
recording's key and the bytes the fast path would send; a fixture the runner already holds is named,
not sent again). The runner computes the call's key itself (the same function, with the session's
served values and the same `.env` secrets as the engine), takes the next unused recording for it,
and answers the call in its own process: nothing crosses. It writes one line to the engine,
`<session> <position>`, before the caller sees the answer, and never waits for a reply; the engine
takes and counts that recording as if it had served it. Anything else (a miss, live forwarding, an
ended session, a recording the fast path would not serve) goes over HTTP, where the engine diagnoses
and counts it as always.

The engine writes the same line when it takes a recording of a session the runner holds (a
subprocess's call, a client the lane does not patch, an ignore rule's match): each side reads the
other's lines before it takes anything, so a recording serves once, in order, whichever process asked.
The runner tells the engine at the close how many it served, so none is ever left uncounted.
Subprocesses and other languages only ever use HTTP.
"""

from __future__ import annotations

import os
import re
import select
import socket
import threading
from collections.abc import Callable, Iterator
from typing import Any

from ..credentials.scan import Secrets
from ..normalize.served import Sent, key_as_sent, remember_key
from ..providers import RECORDED, route
from .hits import Frame, HitTable, Table

FD_VAR = "ATTEST_LANE_FD"  # the engine's end of the pair, passed by the runner that starts it
TIMEOUT = 30.0  # seconds the runner waits for room to write a line before it stops using the lane
TABLES_KEPT = 256  # fixtures whose hit table a runner keeps between sessions
PROVIDERS = frozenset(RECORDED)  # the model calls a recording can answer
_DECODED = re.compile(r"%3[aA]|%2[fF]")


def split_target(target: str) -> tuple[str, str, str, str] | None:
    """(session id, provider, path, query) of a model call's target, when aiohttp would route it as
    it is (no `+`, no dot segments, no escapes but an escaped `:` or `/` in the path after the
    provider, which boto3 sends in every Bedrock model id and aiohttp decodes); None for anything else."""
    if not target.startswith("/r/") or any(c in target for c in "+#") or "/." in target or "//" in target:
        return None
    path, _, query = target.partition("?")
    parts = path.split("/", 4)
    if len(parts) < 5 or parts[3] not in PROVIDERS:
        return None
    tail = parts[4]
    if "%" in target:
        if "%" in query or "%" in parts[2] or "%" in _DECODED.sub("", tail):
            return None
        tail = _DECODED.sub(lambda m: ":" if m.group(0)[2] in "aA" else "/", tail)
        if "/." in tail or "//" in tail or tail.startswith("."):
            return None
    return parts[2], *route(parts[3], "/" + tail), query


def note(sid: str, position: int) -> bytes:
    """The line that says "session `sid`'s recording at `position` is taken"."""
    return f"{sid} {position}\n".encode("ascii")


def read_notes(buffer: bytearray) -> Iterator[tuple[str, int]]:
    """The whole lines at the front of `buffer`, taken from it; a line that is not a note is skipped."""
    end = buffer.rfind(b"\n")
    if end < 0:
        return
    lines, buffer[:] = bytes(buffer[:end]).split(b"\n"), buffer[end + 1 :]
    for line in lines:
        words = line.split()
        if len(words) == 2 and words[1].isdigit():
            yield words[0].decode("ascii", "replace"), int(words[1])


class Lane:
    """The runner's end. Once anything goes wrong the lane is closed and every call uses HTTP.

    Threads take turns on a lock held for a lookup and one write: nothing waits on the engine. A
    forked child shares the socket, so it uses HTTP (the engine then tells the parent what it took)."""

    def __init__(self, sock: socket.socket, secrets: Secrets) -> None:
        self.sock = sock
        self.sock.setblocking(False)
        self.secrets = secrets  # what the engine redacts: `.env` in the directory both started in
        self.held: dict[str, HitTable] = {}  # open session -> its hit table
        # Reads the answers of opens the runner did not wait for (replay.loaded): a table comes with one.
        self.awaiting: Callable[[str], None] | None = None
        self.tables: dict[str, Table] = {}  # fixture path -> the table the engine handed for it
        self.pid = os.getpid()
        self.lock = threading.Lock()
        self.closed = False
        self._received = bytearray()
        self._writable = _poller(sock, select.POLLOUT if hasattr(select, "POLLOUT") else 0)

    @classmethod
    def pair(cls, secrets: Secrets) -> tuple[Lane, socket.socket]:
        """A lane, and the engine's end of it, to pass to the engine process."""
        ours, theirs = socket.socketpair()
        return cls(ours, secrets), theirs

    def wanted(self, fixtures: list[str]) -> dict[str, Any] | None:
        """What a session's open asks for: its hit table, or the one held for its fixture (named by
        its token); None when the lane is closed."""
        if self.closed:
            return None
        held = self.tables.get(fixtures[0]) if len(fixtures) == 1 else None
        return {"have": held.token} if held is not None else {}

    def hold(self, sid: str, fixtures: list[str], handed: dict[str, Any]) -> None:
        """Answer session `sid`'s hits from the table the engine handed at its open."""
        table = Table.handed(handed, self.tables.get(fixtures[0]) if len(fixtures) == 1 else None)
        if table is None or self.closed:
            return
        if table.token is not None:
            self.tables.pop(fixtures[0], None)
            self.tables[fixtures[0]] = table
            while len(self.tables) > TABLES_KEPT:  # the oldest first; its next open sends it again
                del self.tables[next(iter(self.tables))]
        self.held[sid] = HitTable(table)

    def release(self, sid: str) -> int | None:
        """Stop answering session `sid`; how many of its calls this process answered (None: it held
        no table for it)."""
        table = self.held.pop(sid, None)
        return table.served if table is not None else None

    def answer(self, sid: str, sent: Sent) -> Frame | None:
        """The recording that answers `sent` in session `sid`, taken, and the engine told; None when
        the call must go over HTTP."""
        if self.closed or os.getpid() != self.pid:
            return None
        table = self.held.get(sid)
        if table is None and self.awaiting is not None:
            self.awaiting(sid)
            table = self.held.get(sid)
        if table is None:
            return None
        key = table.table.keys.get(sent)
        computed = key is None
        if key is None:
            key = key_as_sent(sent, table.table.served, self.secrets)[0].key
        with self.lock:
            if computed:  # under the lock: threads share the table's keys
                remember_key(table.table.keys, sent, key)
            try:
                self._take_notes()
                position = table.next(key)
                if position is None:
                    return None
                self._send(note(sid, position))
            except OSError:  # the engine went away or stalled: HTTP from now on
                self.close()
                return None
            return table.take(position)

    def _take_notes(self) -> None:
        """What the engine took meanwhile, marked taken in the tables held."""
        while True:
            try:
                data = self.sock.recv(1 << 16)
            except BlockingIOError:
                break
            if not data:
                raise ConnectionResetError("the engine closed the lane")
            self._received += data
        for sid, position in read_notes(self._received):
            table = self.held.get(sid)
            if table is not None:
                table.mark(position)

    def _send(self, line: bytes) -> None:
        """Write `line` whole: a line is far smaller than the socket's buffer, so the first send takes
        it unless the engine has stopped reading; then wait for room, up to TIMEOUT."""
        view = memoryview(line)
        while view:
            try:
                view = view[self.sock.send(view) :]
            except BlockingIOError:
                if not self._writable(TIMEOUT):
                    raise TimeoutError("the engine stopped reading the lane") from None

    def close(self) -> None:
        self.closed = True
        self.sock.close()


def _poller(sock: socket.socket, events: int) -> Callable[[float], bool]:
    """A wait for `sock` to be ready for `events`, up to a timeout in seconds: True when it is."""
    if not hasattr(select, "poll"):  # Windows
        return lambda timeout: bool(select.select([], [sock], [], timeout)[1])
    poll = select.poll()
    poll.register(sock, events)
    return lambda timeout: bool(poll.poll(timeout * 1000))
