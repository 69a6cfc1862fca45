"""The lane: a private socket between a test runner and its engine, for the runner's own HTTP clients.

A test's calls made from the runner's process (an SDK client built in the test or at module level)
would each cost a loopback HTTP round trip through the client's HTTP stack and the engine's parser.
The runner instead hands the engine what a lookup needs (the target, which names the session, the
body and the two headers the key reads) over a socket pair made when the engine starts, and the engine answers with the
recording's head and body. The engine answers a lane request exactly as its HTTP fast path would,
on the same loop, from the same session: a hit is taken and counted there; anything else (a miss,
live forwarding, lenient matching, an ended session) is answered "not here", with nothing changed,
and the client sends the request over HTTP as before. Subprocesses and other languages only ever
use HTTP.

Frames: a request is `!II` (header length, body length), a JSON header
`[method, target, content_type, content_encoding]`, then the body. An answer is
`!III` (head length, body length, event count, or NOT_STREAMED), the recording's HTTP head (status
line and headers as the wire has them), one `!I` size per event, then the body; a head length of 0
means "not here".
"""

from __future__ import annotations

import json
import os
import socket
import struct
import threading
from typing import TYPE_CHECKING, Any

# No asyncio here: the runner imports this module, the engine's end is in engine.runner.

if TYPE_CHECKING:
    from .store import Recording

REQUEST = struct.Struct("!II")
ANSWER = struct.Struct("!III")
SIZE = struct.Struct("!I")
NOT_STREAMED = 0xFFFFFFFF
NOT_HERE = ANSWER.pack(0, 0, 0)
FD_VAR = "ATTEST_LANE_FD"  # the engine's end of the pair, passed by the runner that starts it
TIMEOUT = 30.0  # seconds the runner waits for an answer before it stops using the lane


def request_frame(header: list[Any], body: bytes) -> bytes:
    encoded = json.dumps(header, separators=(",", ":")).encode("utf-8")
    return REQUEST.pack(len(encoded), len(body)) + encoded + body


def take_request(buffer: bytearray) -> tuple[bytes, bytes] | None:
    """The next whole request frame's (header, body), taken from the front of `buffer`; None until
    one has arrived."""
    if len(buffer) < REQUEST.size:
        return None
    header_len, body_len = REQUEST.unpack_from(buffer)
    start, end = REQUEST.size + header_len, REQUEST.size + header_len + body_len
    if len(buffer) < end:
        return None
    header, body = bytes(buffer[REQUEST.size : start]), bytes(buffer[start:end])
    del buffer[:end]
    return header, body


def answer_frame(rec: Recording) -> bytes:
    assert rec.wire is not None  # a lane hit is one the fast path could serve: it has wire bytes
    head = rec.wire[: rec.wire.index(b"\r\n\r\n")]
    if rec.events is None:
        return ANSWER.pack(len(head), len(rec.body), NOT_STREAMED) + head + rec.body
    events = [e for e in rec.events if e]  # as on the wire, where an empty chunk would end the stream
    sizes = b"".join(SIZE.pack(len(e)) for e in events)
    return ANSWER.pack(len(head), sum(map(len, events)), len(events)) + head + sizes + b"".join(events)


class Lane:
    """The runner's end: one request at a time, from this process only (a forked child shares the
    socket, so it uses HTTP). Once anything goes wrong the lane is closed and every call uses HTTP."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.sock.settimeout(TIMEOUT)
        self.pid = os.getpid()
        self.lock = threading.Lock()
        self.closed = False

    @classmethod
    def pair(cls) -> tuple[Lane, socket.socket]:
        """A lane, and the engine's end of it, to pass to the engine process."""
        ours, theirs = socket.socketpair()
        return cls(ours), theirs

    def ask(self, header: list[Any], body: bytes) -> tuple[bytes, list[bytes] | None, bytes] | None:
        """(head, events or None, body) for a hit; None when the request must go over HTTP."""
        if self.closed or os.getpid() != self.pid:
            return None
        with self.lock:
            try:
                self.sock.sendall(request_frame(header, body))
                head_len, body_len, count = ANSWER.unpack(self._read(ANSWER.size))
                if head_len == 0:
                    return None
                head = self._read(head_len)
                sizes = None if count == NOT_STREAMED else struct.unpack(f"!{count}I", self._read(4 * count))
                payload = self._read(body_len)
            except (OSError, struct.error):  # the engine went away or stalled: HTTP from now on
                self.close()
                return None
        if sizes is None:
            return head, None, payload
        view, events, start = memoryview(payload), [], 0
        for size in sizes:
            events.append(bytes(view[start : start + size]))
            start += size
        return head, events, payload

    def _read(self, size: int) -> bytes:
        data = bytearray(size)
        view, got = memoryview(data), 0
        while got < size:
            n = self.sock.recv_into(view[got:])
            if n == 0:
                raise ConnectionResetError("the engine closed the lane")
            got += n
        return bytes(data)

    def close(self) -> None:
        self.closed = True
        self.sock.close()
