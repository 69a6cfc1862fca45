"""The engine's hot path: a model call that hits a recording, answered without aiohttp's web layer.

Almost every request a replay sees is a hit. For those, one connection parses HTTP/1.1 with httptools
(llhttp, the parser aiohttp and Node use) and answers with the recording's bytes built at load time,
in one write. Everything else (a miss, live forwarding, the tool channel, OTLP, lenient matching, a
large, chunked or `Expect` body, a closing connection, an unusual target) hands the connection, from
the first byte of that request, to aiohttp's own protocol, which serves it exactly as before. The first
hand-over is when aiohttp is imported and its application built; the connection is not read meanwhile.

A runner may also send a call it would make over HTTP on its control link instead (the Vitest helper
does, for its own process's `fetch`): `answer_call` gives it the same hit, or nothing, and the call
then goes over HTTP.
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

import httptools

from ..normalize.served import Sent
from .lane import split_target

if TYPE_CHECKING:
    from .index import Recording

FAST_MAX_BODY = 8 * 1024 * 1024  # larger bodies go through aiohttp, which applies the 64 MiB limit
KEEPALIVE_TIMEOUT = 75.0  # seconds an idle connection stays open, aiohttp's default
_METHODS = frozenset({"GET", "POST", "PUT", "PATCH", "DELETE"})


class Hits(Protocol):
    def hit(self, sid: str, sent: Sent) -> Recording | None:
        """The recording that answers `sent` from its prebuilt bytes, taken; None: the web layer serves it."""
        ...


class FastConnections:
    """The protocol factory for the engine's listener, and the connections it still owns."""

    def __init__(self, app: Hits, slow: Callable[[], Awaitable[Callable[[], Any]]]) -> None:
        self.app = app
        self.slow = slow  # awaited for aiohttp's protocol factory, for the connections handed over
        self.ready: Callable[[], Any] | None = None  # that factory, once it is there
        self.open: set[FastPath] = set()

    def __call__(self) -> FastPath:
        return FastPath(self)

    async def web(self) -> Callable[[], Any]:
        self.ready = await self.slow()
        return self.ready

    def close(self) -> None:
        for conn in list(self.open):
            conn.close()


class _Request:
    """What the parser saw of the current request."""

    __slots__ = ("body", "content_length", "eligible", "headers", "url")

    def __init__(self) -> None:
        self.url = b""
        self.headers: dict[bytes, bytes] = {}
        self.body: list[bytes] = []
        self.content_length = 0
        self.eligible = True


class FastPath(asyncio.Protocol):
    def __init__(self, owner: FastConnections) -> None:
        self.owner = owner
        self.transport: asyncio.Transport | None = None
        self.parser = httptools.HttpRequestParser(self)
        self.request = _Request()
        self.pending = bytearray()  # the bytes from the start of the request being read
        self.slow: Any = None  # aiohttp's protocol once the connection is handed over
        self.hand_over = False
        self.waiting = False  # handed over, aiohttp still loading: bytes are kept for it
        self.idle: asyncio.TimerHandle | None = None

    # --- asyncio ---------------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        self.owner.open.add(self)

    def data_received(self, data: bytes) -> None:
        if self.slow is not None:
            self.slow.data_received(data)
            return
        if self.waiting:
            self.pending += data
            return
        if self.idle is not None:
            self.idle.cancel()
            self.idle = None
        self.pending += data
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError:  # aiohttp answers a bad request its own way
            self.hand_over = True
        if self.hand_over:
            self._hand_over()

    def eof_received(self) -> bool | None:
        return self.slow.eof_received() if self.slow is not None else None

    def connection_lost(self, exc: Exception | None) -> None:
        self.owner.open.discard(self)
        if self.idle is not None:
            self.idle.cancel()
        if self.slow is not None:
            self.slow.connection_lost(exc)

    def pause_writing(self) -> None:
        if self.slow is not None:
            self.slow.pause_writing()

    def resume_writing(self) -> None:
        if self.slow is not None:
            self.slow.resume_writing()

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()

    def _hand_over(self) -> None:
        """aiohttp takes the connection from the first byte of the current request on."""
        self.owner.open.discard(self)
        if self.owner.ready is not None:
            self._give(self.owner.ready)
            return
        self.waiting = True
        if self.transport is not None:
            self.transport.pause_reading()
        asyncio.ensure_future(self.owner.web()).add_done_callback(self._loaded)

    def _loaded(self, made: asyncio.Future[Callable[[], Any]]) -> None:
        if self.transport is None or self.transport.is_closing():
            return  # the client left meanwhile
        if made.cancelled():  # the engine is stopping
            self.transport.close()
            return
        try:
            factory = made.result()
        except Exception:  # the application could not be built: said on the loop's log, not served
            self.transport.close()
            raise
        self._give(factory)
        self.transport.resume_reading()

    def _give(self, factory: Callable[[], Any]) -> None:
        self.waiting = False
        self.slow = factory()
        self.slow.connection_made(self.transport)
        pending, self.pending = bytes(self.pending), bytearray()
        if pending:
            self.slow.data_received(pending)

    # --- httptools callbacks ---------------------------------------------------------------------

    def on_message_begin(self) -> None:
        self.request = _Request()

    def on_url(self, url: bytes) -> None:
        self.request.url += url

    def on_header(self, name: bytes, value: bytes) -> None:
        name = name.lower()
        if name in self.request.headers:  # a repeated header: aiohttp decides what it means
            self.request.eligible = False
        self.request.headers[name] = value

    def on_headers_complete(self) -> None:
        req, headers = self.request, self.request.headers
        method = self.parser.get_method().decode("ascii", "replace")
        length = headers.get(b"content-length", b"0")
        req.eligible = (
            req.eligible
            and method in _METHODS
            and self.parser.get_http_version() == "1.1"
            and self.parser.should_keep_alive()
            and b"transfer-encoding" not in headers
            and b"expect" not in headers
            and b"upgrade" not in headers
            and length.isdigit()
            and int(length) <= FAST_MAX_BODY
        )
        req.content_length = int(length) if req.eligible else 0
        if not req.eligible:
            self.hand_over = True

    def on_body(self, body: bytes) -> None:
        if not self.hand_over:
            self.request.body.append(body)

    def on_message_complete(self) -> None:
        if self.hand_over:
            return
        size = self._size()
        found = self._answer() if size else None
        if found is None or self.transport is None:
            self.hand_over = True
            return
        if not self.transport.is_closing():
            self.transport.write(found)
        del self.pending[:size]
        self.idle = asyncio.get_running_loop().call_later(KEEPALIVE_TIMEOUT, self.close)

    def _size(self) -> int:
        """The request's length in `pending`, when its head is plain CRLF-delimited HTTP; else 0."""
        end = self.pending.find(b"\r\n\r\n")
        if end < 0:
            return 0
        head = self.pending[:end]
        if head.count(b"\n") != head.count(b"\r\n"):  # bare line feeds: let aiohttp judge them
            return 0
        size = end + 4 + self.request.content_length
        return size if size <= len(self.pending) else 0

    def _answer(self) -> bytes | None:
        """The recording's bytes for a hit on a strict session; None for anything aiohttp should do."""
        req = self.request
        content_type, encoding = req.headers.get(b"content-type"), req.headers.get(b"content-encoding")
        found = recording_for(
            self.owner.app,
            self.parser.get_method().decode("ascii"),
            req.url.decode("latin-1"),
            b"".join(req.body),
            encoding.decode("latin-1") if encoding is not None else None,
            content_type.decode("latin-1") if content_type is not None else None,
        )
        return found.wire if found is not None else None


def recording_for(
    app: Hits, method: str, target: str, body: bytes, encoding: str | None, content_type: str | None
) -> Recording | None:
    """The recording a call to `target` (`/r/<session>/<provider>/...`) hits, taken; None when the web
    layer must serve it (it then diagnoses and counts a miss)."""
    where = split_target(target)
    if where is None:
        return None
    sid, provider, path, query = where
    return app.hit(sid, Sent(provider, method, path, query, body, encoding, content_type))


def answer_call(app: Hits, call: dict[str, Any]) -> dict[str, Any] | None:
    """A call a runner sent on its control link rather than over HTTP: {"method", "target", "body"
    (base64), "content_type", "content_encoding"}. A hit answers with the HTTP head it would have been
    sent, its body, one chunk per recorded event (base64), and its key; anything the fast path would
    not serve answers None, with nothing taken, and the runner sends the call over HTTP."""
    method, body = str(call["method"]), base64.b64decode(call["body"], validate=True)
    if method not in _METHODS or len(body) > FAST_MAX_BODY:
        return None
    found = recording_for(
        app, method, str(call["target"]), body, call.get("content_encoding"), call.get("content_type")
    )
    if found is None or found.wire is None:
        return None
    head = found.wire[: found.wire.index(b"\r\n\r\n")].decode("latin-1")
    chunks = found.events if found.events is not None else (found.body,)
    encoded = [base64.b64encode(chunk).decode("ascii") for chunk in chunks if chunk]
    # The key, so that a runner holding the session's hit table (replay.hits) answers this call itself
    # when it sends it again.
    return {"head": head, "chunks": encoded, "key": found.key}
