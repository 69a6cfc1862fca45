"""The lane: a private socket between a test runner and its engine, for the runner's own HTTP clients.

A test's calls made from the runner's process (an SDK client built in the test) would each cost a
loopback HTTP round trip through the client's HTTP stack and the engine's parser. Over the lane the
runner computes the request's key itself (the same function, with the session's served values and
the same `.env` secrets as the engine) and sends `<session> <key>`; the engine takes the next
recording for that key from the same session, on the same loop, exactly as its HTTP fast path would,
counts it, and answers with the recording's head and body. Anything else (a miss, live forwarding,
lenient matching, an ended session) is answered "not here", with nothing taken, and the client sends
the request over HTTP, where the engine diagnoses and counts it as always. Subprocesses and other
languages only ever use HTTP.

A request is one ASCII line. An answer is `!II` (head length, body length), the recording's HTTP head
(status line and headers as the wire has them), then its body; a head length of 0 means "not here".
"""

from __future__ import annotations

import os
import socket
import struct
import threading
from typing import TYPE_CHECKING

from ..providers import RECORDED, route
from ..secrets import Secrets

# No asyncio here: the runner imports this module; the engine's end is in engine.runner.

if TYPE_CHECKING:
    from .store import Recording

ANSWER = struct.Struct("!II")
NOT_HERE = ANSWER.pack(0, 0)
FD_VAR = "ATTEST_LANE_FD"  # the engine's end of the pair, passed by the runner that starts it
TIMEOUT = 30.0  # seconds the runner waits for an answer before it stops using the lane
PROVIDERS = frozenset(RECORDED)  # the model calls a recording can answer


def split_target(target: str) -> tuple[str, str, str, str] | None:
    """(session id, provider, path, query) of a model call's target, when aiohttp would route it as
    it is (no escapes, no `+`, no dot segments); None for anything else."""
    if not target.startswith("/r/") or any(c in target for c in "%+#") or "/." in target or "//" in target:
        return None
    path, _, query = target.partition("?")
    parts = path.split("/", 4)
    if len(parts) < 5 or parts[3] not in PROVIDERS:
        return None
    return parts[2], *route(parts[3], "/" + parts[4]), query


def take_request(buffer: bytearray) -> tuple[str, str] | None:
    """The next whole request's (session id, key), taken from the front of `buffer`; None until one
    has arrived. A line that is not two words is an empty pair, which names no session."""
    end = buffer.find(b"\n")
    if end < 0:
        return None
    words = bytes(buffer[:end]).decode("ascii", "replace").split()
    del buffer[: end + 1]
    return (words[0], words[1]) if len(words) == 2 else ("", "")


def answer_frame(rec: Recording) -> bytes:
    """The recording's head as the wire has it, and its whole body (a stream's events joined: the
    client's SSE decoder reads them from one chunk as from many, and replay has no pacing to keep)."""
    assert rec.wire is not None  # a lane hit is one the fast path could serve: it has wire bytes
    head = rec.wire[: rec.wire.index(b"\r\n\r\n")]
    return ANSWER.pack(len(head), len(rec.body)) + head + rec.body


class Lane:
    """The runner's end: one request at a time, from this process only (a forked child shares the
    socket, so it uses HTTP). Once anything goes wrong the lane is closed and every call uses HTTP."""

    def __init__(self, sock: socket.socket, secrets: Secrets) -> None:
        self.sock = sock
        self.sock.settimeout(TIMEOUT)
        self.secrets = secrets  # what the engine redacts: `.env` in the directory both started in
        self.sessions: dict[str, dict[str, str]] = {}  # open session -> its served values (see served)
        self.pid = os.getpid()
        self.lock = threading.Lock()
        self.closed = False
        self._received = bytearray()

    @classmethod
    def pair(cls, secrets: Secrets) -> tuple[Lane, socket.socket]:
        """A lane, and the engine's end of it, to pass to the engine process."""
        ours, theirs = socket.socketpair()
        return cls(ours, secrets), theirs

    def ask(self, sid: str, key: str) -> tuple[bytes, bytes] | None:
        """(head, body) of the next recording for `key` in session `sid`; None when the request must
        go over HTTP."""
        if self.closed or os.getpid() != self.pid:
            return None
        with self.lock:
            try:
                self.sock.sendall(f"{sid} {key}\n".encode("ascii", "replace"))
                head_len, body_len = ANSWER.unpack(self._read(ANSWER.size))
                return (self._read(head_len), self._read(body_len)) if head_len else None
            except OSError:  # the engine went away or stalled: HTTP from now on
                self.close()
                return None

    def _read(self, size: int) -> bytes:
        """The next `size` bytes of the answer; an answer usually arrives whole, in one receive."""
        while len(self._received) < size:
            data = self.sock.recv(max(1 << 16, size - len(self._received)))
            if not data:
                raise ConnectionResetError("the engine closed the lane")
            self._received += data
        taken = bytes(self._received[:size])
        del self._received[:size]
        return taken

    def close(self) -> None:
        self.closed = True
        self.sock.close()
