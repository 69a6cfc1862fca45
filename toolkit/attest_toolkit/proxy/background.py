"""An aiohttp application served on loopback from a thread of its own.

The replay engine, the recording proxy and the tests' scripted providers all run this way, so the
caller's thread stays free to run the agent (or the test) that talks to them. With a front (the
engine's fast path) the listener is the front's, and aiohttp's application is built, aiohttp imported,
only when the front first hands it a connection.
"""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

from . import listeners

if TYPE_CHECKING:
    from aiohttp import web


class RequestDeadline:
    """Wraps aiohttp's protocol for one connection: a connection that has not sent a complete request
    head within `seconds` of connecting is dropped, so idle or trickling clients cannot pile up."""

    def __init__(self, inner: Any, seconds: float) -> None:
        self._inner = inner
        self._seconds = seconds
        self._tail = b""  # the last bytes seen, to find the end of the head across reads
        self._timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._timer = asyncio.get_running_loop().call_later(self._seconds, transport.close)
        self._inner.connection_made(transport)

    def data_received(self, data: bytes) -> None:
        if self._timer is not None:
            seen = self._tail + data
            if b"\r\n\r\n" in seen:
                self._timer.cancel()
                self._timer = None
            self._tail = seen[-3:]
        self._inner.data_received(data)

    def connection_lost(self, exc: Exception | None) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._inner.connection_lost(exc)

    def __getattr__(self, name: str) -> Any:  # everything else is aiohttp's own
        return getattr(self._inner, name)


def _with_deadline(factory: Callable[[], Any], seconds: float) -> Callable[[], Any]:
    return lambda: RequestDeadline(factory(), seconds)


# Awaited for aiohttp's protocol factory (its application built on the first call).
WebProtocol = Callable[[], Awaitable[Callable[[], Any]]]


class Front(Protocol):
    """A protocol factory in front of aiohttp's (see engine.fastpath), closing its own connections."""

    def __call__(self) -> asyncio.Protocol: ...

    def close(self) -> None: ...


class BackgroundServer:
    def __init__(
        self,
        build: Callable[[], web.Application],
        name: str,
        shutdown_timeout: float = 60.0,
        auto_decompress: bool = True,
        request_timeout: float | None = None,
        front: Callable[[WebProtocol], Front] | None = None,
    ) -> None:
        self._build = build
        self._front = front  # given the way to aiohttp's protocol factory, the one the listener uses instead
        self._front_made: Front | None = None
        self._shutdown_timeout = shutdown_timeout
        self._auto_decompress = auto_decompress  # False: request bodies stay as sent, for forwarding
        self._request_timeout = request_timeout  # seconds a new connection has to send a request head
        self._listener: asyncio.Server | None = None
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name=name, daemon=True)
        listeners.own(self._thread)
        self._runner: web.AppRunner | None = None
        self._web: asyncio.Future[Callable[[], Any]] | None = None
        self._started = False
        self.base_url = ""

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        return self._loop

    def start(self, host: str = "127.0.0.1", port: int = 0, sock: socket.socket | None = None) -> str:
        """Listen on host:port, or on `sock`, a listening socket made elsewhere (in another network
        namespace: image.netns); the URL names its own address."""
        self._thread.start()
        self._started = True
        return asyncio.run_coroutine_threadsafe(self._start(host, port, sock), self._loop).result()

    async def _start(self, host: str, port: int, given: socket.socket | None = None) -> str:
        if self._request_timeout is None and self._front is None:
            from aiohttp import web  # with no front, aiohttp is the listener

            await self.web_protocol()
            assert self._runner is not None
            site: web.BaseSite = (
                web.SockSite(self._runner, given)
                if given is not None
                else web.TCPSite(self._runner, host, port, reuse_address=True)
            )
            await site.start()
            sock = site._server.sockets[0]  # type: ignore[union-attr]  # the port the OS chose for port 0
        else:
            factory: Callable[[], Any]
            if self._front is not None:
                self._front_made = self._front(self.web_protocol)
                factory = self._front_made
            else:
                factory = await self.web_protocol()
            if self._request_timeout is not None:
                factory = _with_deadline(factory, self._request_timeout)
            loop = asyncio.get_running_loop()
            self._listener = await (
                loop.create_server(factory, sock=given)
                if given is not None
                else loop.create_server(factory, host, port, reuse_address=True)
            )
            sock = self._listener.sockets[0]
        address, bound_port = sock.getsockname()[:2]
        self.base_url = f"http://{address if given is not None else host}:{bound_port}"
        return self.base_url

    async def web_protocol(self) -> Callable[[], Any]:
        """aiohttp's protocol factory; the first call builds the application and its runner."""
        if self._web is None:
            self._web = asyncio.ensure_future(self._setup())
        return await asyncio.shield(self._web)

    async def _setup(self) -> Callable[[], Any]:
        app = self._build()  # first: the engine's build imports aiohttp its own way (engine.aiohttp_imported)
        from aiohttp import web

        self._runner = web.AppRunner(
            app,
            access_log=None,
            handle_signals=False,
            shutdown_timeout=self._shutdown_timeout,
            auto_decompress=self._auto_decompress,
        )
        await self._runner.setup()
        server = self._runner.server
        assert server is not None
        return server

    async def _cleanup(self) -> None:
        if self._listener is not None:
            self._listener.close()  # stop accepting; the runner finishes the answers in flight
            self._listener = None
        if self._front_made is not None:
            self._front_made.close()  # its connections have no answer in flight: each is one write
        if self._web is not None:
            await asyncio.wait([self._web])  # a build under way finishes, so its runner is cleaned up
        if self._runner is not None:
            await self._runner.cleanup()

    def call(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Run `fn(*args)` on the server's loop thread, so its state has one writer."""

        async def wrapper() -> Any:
            return fn(*args)

        return asyncio.run_coroutine_threadsafe(wrapper(), self._loop).result()

    def stop(self) -> None:
        """Stop after the answers in flight are finished."""
        if self._started:
            asyncio.run_coroutine_threadsafe(self._cleanup(), self._loop).result()
            self._runner, self._started = None, False
        if self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join()
        if not self._loop.is_closed():
            self._loop.close()
