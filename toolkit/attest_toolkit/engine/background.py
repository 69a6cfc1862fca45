"""An aiohttp application served on loopback from a thread of its own.

The replay engine, the recording proxy and the tests' scripted providers all run this way, so the
caller's thread stays free to run the agent (or the test) that talks to them.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

from aiohttp import web


class BackgroundServer:
    def __init__(
        self, build: Callable[[], web.Application], name: str, shutdown_timeout: float = 60.0
    ) -> None:
        self._build = build
        self._shutdown_timeout = shutdown_timeout
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name=name, daemon=True)
        self._runner: web.AppRunner | None = None
        self.base_url = ""

    def start(self, host: str = "127.0.0.1", port: int = 0) -> str:
        self._thread.start()
        return asyncio.run_coroutine_threadsafe(self._start(host, port), self._loop).result()

    async def _start(self, host: str, port: int) -> str:
        self._runner = web.AppRunner(
            self._build(), access_log=None, handle_signals=False, shutdown_timeout=self._shutdown_timeout
        )
        await self._runner.setup()
        site = web.TCPSite(self._runner, host, port, reuse_address=True)
        await site.start()
        sock = site._server.sockets[0]  # type: ignore[union-attr]  # the port the OS chose for port 0
        self.base_url = f"http://{host}:{sock.getsockname()[1]}"
        return self.base_url

    def call(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Run `fn(*args)` on the server's loop thread, so its state has one writer."""

        async def wrapper() -> Any:
            return fn(*args)

        return asyncio.run_coroutine_threadsafe(wrapper(), self._loop).result()

    def stop(self) -> None:
        """Stop after the answers in flight are finished."""
        if self._runner is not None:
            asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result()
            self._runner = None
        if self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join()
        if not self._loop.is_closed():
            self._loop.close()
