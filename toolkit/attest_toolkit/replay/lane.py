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
import re
import select
import socket
import struct
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..credentials.scan import Secrets
from ..providers import RECORDED, route

# asyncio is not imported here (the runner imports this module, and a run that never starts an event
# loop should not pay for it); the engine's end is in engine.runner.

if TYPE_CHECKING:
    import asyncio

    from .index import Recording

ANSWER = struct.Struct("!II")
NOT_HERE = ANSWER.pack(0, 0)
FD_VAR = "ATTEST_LANE_FD"  # the engine's end of the pair, passed by the runner that starts it
TIMEOUT = 30.0  # seconds the runner waits for an answer before it stops using the lane
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
    socket, so it uses HTTP). Once anything goes wrong the lane is closed and every call uses HTTP.

    The socket never blocks: a sync call waits for the answer in `poll` (as a socket with a timeout
    would), and an async call waits on its event loop, so a detector of blocking calls on the loop
    has nothing to find. A call given up half way (an async task cancelled while it waited) leaves
    its answer owed: the next call reads and drops it before its own."""

    def __init__(self, sock: socket.socket, secrets: Secrets) -> None:
        self.sock = sock
        self.sock.setblocking(False)
        self.secrets = secrets  # what the engine redacts: `.env` in the directory both started in
        self.sessions: dict[str, dict[str, str]] = {}  # open session -> its served values (see served)
        self.pid = os.getpid()
        self.lock = threading.Lock()
        self.closed = False
        self._received = bytearray()
        self._owed = 0  # answers to requests sent and not yet read; the last one is the caller's
        self._loop_thread: int | None = None  # the thread whose event loop holds the lock, if one does
        self._poller = _poller(sock)

    @classmethod
    def pair(cls, secrets: Secrets) -> tuple[Lane, socket.socket]:
        """A lane, and the engine's end of it, to pass to the engine process."""
        ours, theirs = socket.socketpair()
        return cls(ours, secrets), theirs

    def ask(self, sid: str, key: str) -> tuple[bytes, bytes] | None:
        """(head, body) of the next recording for `key` in session `sid`; None when the request must
        go over HTTP. Threads take turns; a call on the thread of an async call under way (sync code
        run on its event loop) uses HTTP rather than wait for a task that cannot run."""
        if not self._usable() or self._loop_thread == threading.get_ident():
            return None
        if not self.lock.acquire(timeout=TIMEOUT):
            return None
        try:
            self._send(f"{sid} {key}\n".encode("ascii", "replace"))
            while (answer := self._answer()) is None:
                if not self._poller(TIMEOUT):
                    raise TimeoutError("the engine did not answer on the lane")
                self._receive()
            return answer or None
        except OSError:  # the engine went away or stalled: HTTP from now on
            self.close()
            return None
        finally:
            self.lock.release()

    async def ask_async(self, sid: str, key: str) -> tuple[bytes, bytes] | None:
        """`ask` for a coroutine on an asyncio loop: it waits for the answer on the loop. None (HTTP)
        under another async library, or while another call has the lane (a task of this loop or of
        another thread's: waiting for it would block the loop)."""
        loop = _running_loop()
        if loop is None:  # not asyncio (trio): HTTP
            return None
        if not self._usable() or not self.lock.acquire(blocking=False):
            return None
        self._loop_thread = threading.get_ident()
        try:
            self._send(f"{sid} {key}\n".encode("ascii", "replace"))
            while (answer := self._answer()) is None:
                await self._readable(loop)
                self._receive()
            return answer or None
        except (OSError, NotImplementedError):  # gone, stalled, or a loop that cannot watch sockets
            self.close()
            return None
        finally:
            self._loop_thread = None
            self.lock.release()

    def _usable(self) -> bool:
        return not self.closed and os.getpid() == self.pid

    def _send(self, line: bytes) -> None:
        """Send a request line whole (a line is far smaller than the socket's buffer, so the first
        send takes it all but when the engine is not reading at all)."""
        if self.sock.send(line) != len(line):
            raise BlockingIOError("the lane's buffer is full: the engine is not reading")
        self._owed += 1

    def _receive(self) -> None:
        try:
            data = self.sock.recv(1 << 16)
        except BlockingIOError:  # woken with nothing to read
            return
        if not data:
            raise ConnectionResetError("the engine closed the lane")
        self._received += data

    def _answer(self) -> tuple[bytes, bytes] | tuple[()] | None:
        """The caller's answer once it has arrived whole ((head, body), or () for "not here"),
        dropping the answers owed to calls given up before it; None while it is still on its way."""
        while True:
            received = self._received
            if len(received) < ANSWER.size:
                return None
            head_len, body_len = ANSWER.unpack_from(received)
            end = ANSWER.size + head_len + body_len
            if len(received) < end:
                return None
            answer = (
                bytes(received[ANSWER.size : ANSWER.size + head_len]),
                bytes(received[ANSWER.size + head_len : end]),
            )
            del received[:end]
            self._owed -= 1
            if self._owed == 0:
                return answer if head_len else ()

    async def _readable(self, loop: asyncio.AbstractEventLoop) -> None:
        """Until the socket has something to read, on `loop`; TimeoutError after TIMEOUT."""
        ready: asyncio.Future[None] = loop.create_future()

        def settle(exc: BaseException | None) -> None:
            if not ready.done():
                ready.set_exception(exc) if exc is not None else ready.set_result(None)

        fd = self.sock.fileno()
        loop.add_reader(fd, settle, None)
        timer = loop.call_later(TIMEOUT, settle, TimeoutError("the engine did not answer on the lane"))
        try:
            await ready
        finally:
            timer.cancel()
            loop.remove_reader(fd)

    def close(self) -> None:
        self.closed = True
        self.sock.close()


def _running_loop() -> asyncio.AbstractEventLoop | None:
    asyncio = sys.modules.get("asyncio")  # a loop runs only where asyncio was imported
    try:
        return asyncio.get_running_loop() if asyncio is not None else None
    except RuntimeError:
        return None


def _poller(sock: socket.socket) -> Callable[[float], bool]:
    """A wait for `sock` to be readable, up to a timeout in seconds: True when it is."""
    if not hasattr(select, "poll"):  # Windows
        return lambda timeout: bool(select.select([sock], [], [], timeout)[0])
    poll = select.poll()
    poll.register(sock, select.POLLIN)
    return lambda timeout: bool(poll.poll(timeout * 1000))
