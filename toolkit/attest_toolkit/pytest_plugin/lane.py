"""The test runner's own HTTP clients, their hits answered in this process (see `replay.lane`).

The official SDKs send through httpx (openai: httpx2). While a runner has an engine, a request that
httpx's default transport would send to that engine's address is first looked up in the session's
hit table; a request to a provider host is shown to `bypass` (a call around a running replay is loud).
A hit is answered as the response the transport would have built from the socket (same status,
reason, headers and body; a recorded stream's events in one chunk, as vcrpy hands them), and anything
else goes out over HTTP as before. Requests to any other address are never touched, and transports a
user supplies are not patched, so they use HTTP.

A replay that keeps the SDKs' own URLs (a vcr-marked test, see `pytest_plugin.vcr`) names a session prefix
with `serve_hosts`: until it ends, a request to a provider's real host (`https://api.openai.com/v1/
chat/completions`) is sent as if the client had been pointed at that prefix (`<prefix>/openai/v1/
chat/completions`): the same key, lane, misses and counts as a client the variables pointed there,
while the client's `base_url` stays the provider's. The caller's response keeps the request it sent.
"""

from __future__ import annotations

import os
import sys
from types import ModuleType
from typing import Any

from ..guard.hosts import is_blocked_host
from ..normalize.served import Sent
from ..providers import RECORDED, provider_of_host
from ..replay import bypass
from ..replay.hits import Frame
from ..replay.lane import Lane, split_target
from . import plain_http

MODULES = ("httpx", "httpx2")
MAX_BODY = 8 * 1024 * 1024  # the HTTP fast path's limit: a larger body goes over HTTP as before
OFF_VAR = "ATTEST_LANE"  # "off": every call goes over HTTP (to compare, or to rule the lane out)

_lanes: dict[tuple[str, int], Lane] = {}  # the engine's (host, port) -> its lane
# A mocking library (pytest-httpx, respx) may swap httpx's methods in and out around ours: ours are
# put back on top when a session opens, a stale one of ours is unwrapped first (never stacked), and
# theirs are never undone.
_OURS = "_attest_lane_wraps"
_hosts_prefix: str | None = None  # see `serve_hosts`
_SLOTS = (("HTTPTransport", "handle_request"), ("AsyncHTTPTransport", "handle_async_request"))


def enabled() -> bool:
    return os.environ.get(OFF_VAR, "").strip().lower() not in ("off", "0", "false", "no")


def route(base_url: str, lane: Lane) -> None:
    """Offer requests to `base_url` (the engine's `http://host:port`) to `lane` from now on, in every
    httpx loaded by now; called again as tests import more of them."""
    host, _, port = base_url.removeprefix("http://").rpartition(":")
    if host and port.isdigit():
        _lanes[(host, int(port))] = lane
    patch_loaded()


def serve_hosts(prefix: str | None) -> None:
    """Send requests to providers' real hosts to `prefix` (`http://host:port/r/<session>` on the engine,
    or the recording front's) from now on; None: leave them alone again."""
    global _hosts_prefix
    _hosts_prefix = prefix
    if prefix is not None:
        patch_loaded()


def patch_loaded() -> None:
    """Our transport methods on every httpx loaded by now: they also show `bypass` each request."""
    for name in MODULES:
        module = sys.modules.get(name)
        if module is not None and not _ours(module.HTTPTransport.handle_request):
            _patch(module)


def unroute_all() -> None:
    """Forget every lane and give httpx back the methods ours stand in front of."""
    _lanes.clear()
    serve_hosts(None)
    for name in MODULES:
        module = sys.modules.get(name)
        if module is not None:
            for cls, method in (
                (module.HTTPTransport, "handle_request"),
                (module.AsyncHTTPTransport, "handle_async_request"),
            ):
                current = getattr(cls, method)
                if _ours(current):
                    setattr(cls, method, getattr(current, _OURS))


def _ours(method: Any) -> bool:
    return hasattr(method, _OURS)


def _original(method: Any) -> Any:
    while _ours(method):  # ours, left in place by a library that restored what it found
        method = getattr(method, _OURS)
    return method


def _patch(module: ModuleType) -> None:
    sync = _original(module.HTTPTransport.handle_request)
    async_ = _original(module.AsyncHTTPTransport.handle_async_request)

    def handle_request(self: Any, request: Any) -> Any:
        sent = _to_session(module, request)
        return _as_sent(request, sent, handle_sent(self, sent))

    def handle_sent(self: Any, request: Any) -> Any:
        lane = _lane_for(request)
        answered = plain_http.answer(*_target(request)) if lane is None else None
        if isinstance(answered, plain_http.Pending):
            answered = answered.record(lambda: _read(sync(self, request)))
        plain = _plain(module, request, answered)
        if plain is not None:
            return plain
        found = _answer(lane, request, request.read()) if lane is not None else None
        if found is not None:
            return _response(module, request, found)
        return bypass.send(module, request, lambda: sync(self, request))

    async def handle_async_request(self: Any, request: Any) -> Any:
        sent = _to_session(module, request)
        return _as_sent(request, sent, await handle_sent_async(self, sent))

    async def handle_sent_async(self: Any, request: Any) -> Any:
        lane = _lane_for(request)
        answered = await plain_http.answer_async(*_target(request)) if lane is None else None
        if isinstance(answered, plain_http.Pending):

            async def send() -> plain_http.Received:
                return await _read_async(await async_(self, request))

            answered = await answered.record_async(send)
        plain = _plain(module, request, answered)
        if plain is not None:
            return plain
        found = _answer(lane, request, await request.aread()) if lane is not None else None
        if found is not None:
            return _response(module, request, found)
        return await bypass.send_async(module, request, lambda: async_(self, request))

    setattr(handle_request, _OURS, sync)
    setattr(handle_async_request, _OURS, async_)
    module.HTTPTransport.handle_request = handle_request
    module.AsyncHTTPTransport.handle_async_request = handle_async_request


def _to_session(module: ModuleType, request: Any) -> Any:
    """`request` as sent to the session prefix of `serve_hosts` when it goes to a provider's real host
    the engine replays; else `request` itself."""
    prefix, url = _hosts_prefix, request.url
    if prefix is None or not is_blocked_host(url.host):
        return request
    provider = provider_of_host(url.host)
    if provider not in RECORDED:
        return request
    target = module.URL(f"{prefix}/{provider}{url.raw_path.decode('ascii')}")
    headers = [(k, v) for k, v in request.headers.raw if k.lower() != b"host"]
    headers.insert(0, (b"Host", target.netloc))  # the prefix's: our listeners take loopback names only
    return module.Request(
        request.method, target, headers=headers, stream=request.stream, extensions=request.extensions
    )


def _as_sent(request: Any, sent: Any, response: Any) -> Any:
    """The response as the client expects it: for the request it sent, whatever answered it."""
    if sent is not request:
        response.request = request
    return response


def _target(request: Any) -> tuple[str, str]:
    return request.method, str(request.url)


def _read(response: Any) -> plain_http.Received:
    try:
        return response.status_code, response.headers.multi_items(), response.read()
    finally:
        response.close()


async def _read_async(response: Any) -> plain_http.Received:
    try:
        return response.status_code, response.headers.multi_items(), await response.aread()
    finally:
        await response.aclose()


def _plain(module: ModuleType, request: Any, found: plain_http.Answer | plain_http.Refused | None) -> Any:
    """The response to a plain HTTP call `plain_http` answered (see there); None to send it."""
    if isinstance(found, plain_http.Refused):
        raise module.ConnectError(str(found), request=request)
    if found is None:
        return None
    return module.Response(found.status, headers=found.headers, content=found.body, request=request)


def _lane_for(request: Any) -> Lane | None:
    """The lane of the engine this request goes to, when its body can be sent whole."""
    if not _lanes:
        return None
    url = request.url
    lane = _lanes.get((url.host, url.port))
    if lane is None or url.scheme != "http":
        return None
    headers = request.headers
    length = headers.get("content-length", "0")
    if not length.isdigit() or int(length) > MAX_BODY or "transfer-encoding" in headers:
        return None
    return lane


def _answer(lane: Lane, request: Any, body: bytes) -> Frame | None:
    """The recording that answers `request` in this process (see `replay.lane`); None to send it."""
    where = split_target(request.url.raw_path.decode("ascii"))
    keyed = _keyed_headers(request.headers.raw)
    if where is None or keyed is None:
        return None
    sid, provider, path, query = where
    return lane.answer(sid, Sent(provider, request.method, path, query, body, *keyed))


def _response(module: ModuleType, request: Any, found: Frame) -> Any:
    """The response httpcore would have built from the recording's head and body."""
    status, reason, headers, payload = found
    return module.Response(
        status,
        headers=headers,  # as bytes, as httpcore gives them
        stream=module.ByteStream(payload),
        request=request,
        extensions={"http_version": b"HTTP/1.1", "reason_phrase": reason},
    )


def _keyed_headers(raw: list[tuple[bytes, bytes]]) -> tuple[str | None, str | None] | None:
    """(content-encoding, content-type) as the engine's parser reads them; None when one is repeated
    (which one counts is the web layer's call)."""
    found: dict[bytes, str] = {}
    for name, value in raw:
        lowered = name.lower()
        if lowered in (b"content-encoding", b"content-type"):
            if lowered in found:
                return None
            found[lowered] = value.decode("latin-1")
    return found.get(b"content-encoding"), found.get(b"content-type")
