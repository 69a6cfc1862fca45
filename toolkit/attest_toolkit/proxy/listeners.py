"""attest's own listeners: who may call them, and which addresses are ours.

Who: a listener that records (the capture proxy, the pytest recording front, their tool routes) or
that can forward live (the engine's session routes) takes only the calls of the run it was started
for. Every URL it hands out carries a per-run secret as its first path segment (the engine's session
id plays that part there), and a request must also name a loopback Host, so neither another local
process nor a web page reaching loopback through DNS rebinding can add to a fixture or spend the
user's key: anything else gets 403 and is neither recorded nor forwarded.

Which threads: a listener's loop thread is attest's own, so the HTTP it sends (a front forwarding a
call to the provider) is never taken for the test's own plain HTTP (see `plain_http`).

Which addresses:
The recording proxy, the pytest recording front and the replay engine each point the provider
variables at themselves. A live call's upstream is read from the user's variables; should those
still point at one of ours (a runner started with the re-pointed environment, a nested run), the call
would be handed back and forth for ever. Each listener is known here while it runs, and named in the
environment it hands out, and a forward to any of them is refused in one line.
"""

from __future__ import annotations

import hmac
import ipaddress
import threading
import weakref
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from aiohttp import web

# Our listeners' base URLs, as the environment handed out by any of them names them.
LISTENERS_VAR = "ATTEST_LISTENERS"
_RUNNING: set[str] = set()  # this process's listeners while they run
_THREADS: weakref.WeakSet[threading.Thread] = weakref.WeakSet()  # their loop threads


FORBIDDEN = (
    "attest: this listener takes requests only from the run it was started for (its URL's secret and a "
    "loopback Host); nothing was recorded or forwarded"
)
Handler = Callable[["web.Request"], Awaitable["web.StreamResponse"]]


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def loopback_host(request: web.Request) -> bool:
    """True when the request names a loopback Host, as every client given our URL does; a page
    that reached loopback by DNS rebinding names its own host."""
    host = request.headers.get("Host", "")
    try:
        return is_loopback(urlsplit(f"//{host}").hostname or "")
    except ValueError:
        return False


def forbidden() -> web.Response:
    from aiohttp import web  # a request is being served, so aiohttp is loaded: the engine imports it late

    return web.json_response(
        {"error": {"message": FORBIDDEN, "type": "forbidden", "code": "attest_forbidden"}},
        status=403,
        headers={"x-should-retry": "false"},
    )


class Gate:
    """A recording listener's per-run secret, the first path segment of every URL it hands out."""

    def __init__(self) -> None:
        import secrets  # a recording listener's: the replay engine imports this module too

        self.prefix = "/" + secrets.token_urlsafe(24)

    def url(self, base_url: str) -> str:
        return base_url + self.prefix

    def app(self, inner: web.Application, client_max_size: int) -> web.Application:
        """`inner`'s routes, served under the secret only, to loopback Host names only."""
        from aiohttp import web  # `inner` is one: loaded already

        @web.middleware
        async def gate(request: web.Request, handler: Handler) -> web.StreamResponse:
            segment = request.raw_path[1:].partition("/")[0]
            if hmac.compare_digest(segment.encode(), self.prefix[1:].encode()) and loopback_host(request):
                return await handler(request)
            return forbidden()

        root = web.Application(client_max_size=client_max_size, middlewares=[gate])
        root.add_subapp(self.prefix, inner)
        return root


def _port_on_loopback(url: str) -> int | None:
    """The port of a loopback URL; None for any other host (ours only listen on loopback)."""
    try:
        parts = urlsplit(url.strip())
        host, port = parts.hostname or "", parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return None
    return port if is_loopback(host) else None


def origin(url: str) -> str:
    """`http://127.0.0.1:PORT`: where a URL listens, without its path (a listener's per-run secret) or
    any user and password."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}"


def own(thread: threading.Thread) -> None:
    """`thread` serves one of attest's listeners: what it sends is attest's, not the test's."""
    _THREADS.add(thread)


def own_thread() -> bool:
    return threading.current_thread() in _THREADS


def started(base_url: str) -> None:
    _RUNNING.add(origin(base_url))


def stopped(base_url: str) -> None:
    _RUNNING.discard(origin(base_url))


def known(env: Mapping[str, str]) -> list[str]:
    """Every listener of ours: this process's, and those the environment says it was handed out by."""
    return sorted(_RUNNING | set(env.get(LISTENERS_VAR, "").split()))


def handed_out(base_url: str, env: Mapping[str, str]) -> dict[str, str]:
    """The variable naming our listeners, for the environment a listener at `base_url` hands out."""
    return {LISTENERS_VAR: " ".join(sorted({*known(env), origin(base_url)}))}


def ours(url: str, env: Mapping[str, str]) -> bool:
    """True when `url` reaches one of our listeners (same port on loopback, whatever the name or path)."""
    port = _port_on_loopback(url)
    return port is not None and any(_port_on_loopback(own) == port for own in known(env))
