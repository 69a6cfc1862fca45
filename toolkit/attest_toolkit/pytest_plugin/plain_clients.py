"""requests/urllib3, aiohttp and urllib.request asking `plain_http` first, while a replay runs here.

httpx is covered where the lane patches it (`pytest_plugin.lane`). Here, urllib3's connection pools (under
requests), aiohttp's sessions and urllib.request's HTTP(S) handlers (`urlopen`) get a method that
asks `plain_http.answer` for the request: a recording comes back as the response object the client
would have built from the socket, a refusal as the client's own connection error (with the miss's
line), a call to record is sent, read whole, kept and served like a recording, and anything else is
sent as before. The patches are put in when a replay opens (for the modules loaded by then) and taken
out at the end of the run; with no replay running they only pass the call on.
"""

from __future__ import annotations

import inspect
import io
import sys
import urllib.error
import urllib.response
from typing import Any

from . import plain_http

_OURS = "_attest_plain_wraps"


def patch_loaded() -> None:
    """Our methods on urllib3, aiohttp and urllib.request, when loaded by now (never stacked on our own)."""
    for module, cls, name, make in _SLOTS:
        loaded = sys.modules.get(module)
        if loaded is not None:
            _wrap(getattr(loaded, cls), name, make)


def unpatch_all() -> None:
    """Give the libraries back the methods ours stand in front of."""
    for module, cls, name, _make in _SLOTS:
        loaded = sys.modules.get(module)
        current = getattr(getattr(loaded, cls), name) if loaded is not None else None
        if current is not None and hasattr(current, _OURS):
            setattr(getattr(loaded, cls), name, getattr(current, _OURS))


def _wrap(cls: type, name: str, make: Any) -> None:
    original = getattr(cls, name)
    if hasattr(original, _OURS):
        return
    wrapper = make(original)
    setattr(wrapper, _OURS, original)
    setattr(cls, name, wrapper)


# --- urllib3 (requests) ------------------------------------------------------------------------------


def _urlopen(original: Any) -> Any:
    def urlopen(self: Any, method: str, url: str, *args: Any, **kwargs: Any) -> Any:
        found = plain_http.answer(method, _pool_url(self, url))
        if isinstance(found, plain_http.Pending):
            whole = {**kwargs, "preload_content": False}
            found = found.record(lambda: _read_urllib3(original(self, method, url, *args, **whole)))
        if found is None:
            return original(self, method, url, *args, **kwargs)
        if isinstance(found, plain_http.Refused):
            raise found  # requests reports it as a ConnectionError with this line
        from urllib3._collections import HTTPHeaderDict  # where urllib3 1.26 and 2 both have it
        from urllib3.response import HTTPResponse

        return HTTPResponse(
            body=io.BytesIO(found.body),
            headers=HTTPHeaderDict(found.headers),
            status=found.status,
            preload_content=kwargs.get("preload_content", True),
            decode_content=kwargs.get("decode_content", True),
            enforce_content_length=False,
            request_method=method,
            request_url=url,
        )

    return urlopen


def _read_urllib3(response: Any) -> plain_http.Received:
    try:
        body = response.read(decode_content=True)
    finally:
        response.release_conn()
    return response.status, list(response.headers.items()), body


def _pool_url(pool: Any, url: str) -> str:
    """The whole URL a pool sends `url` to (a path, or already whole through a proxy)."""
    if "://" in url:
        return url
    host = f"[{pool.host}]" if ":" in pool.host else pool.host
    return f"{pool.scheme}://{host}:{pool.port}{url}" if pool.port else f"{pool.scheme}://{host}{url}"


# --- aiohttp -----------------------------------------------------------------------------------------


def _aiohttp_request(original: Any) -> Any:
    async def _request(self: Any, method: str, str_or_url: Any, **kwargs: Any) -> Any:
        url = _session_url(self, str_or_url, kwargs.get("params"))
        found = await plain_http.answer_async(method, str(url)) if url is not None else None
        if isinstance(found, plain_http.Pending):
            unchecked = {**kwargs, "raise_for_status": False}  # raised below, as for a recording

            async def send() -> plain_http.Received:
                return await _read_aiohttp(await original(self, method, str_or_url, **unchecked))

            found = await found.record_async(send)
        if found is None:
            return await original(self, method, str_or_url, **kwargs)
        import aiohttp

        if isinstance(found, plain_http.Refused):
            raise aiohttp.ClientConnectionError(str(found)) from found
        response = _aiohttp_response(self, method, url, found)
        if kwargs.get("raise_for_status", self._raise_for_status) is True:
            response.raise_for_status()
        return response

    return _request


async def _read_aiohttp(response: Any) -> plain_http.Received:
    try:
        body = await response.read()
    finally:
        response.release()
    return response.status, list(response.headers.items()), body


def _session_url(session: Any, str_or_url: Any, params: Any) -> Any:
    """The URL the session would send to (its base URL and `params` applied); None if it cannot say."""
    try:
        url = session._build_url(str_or_url)
        return url.extend_query(params) if params else url
    except (TypeError, ValueError, AttributeError):  # left to aiohttp, which says what is wrong
        return None


class _Written:
    output_size = 0  # what aiohttp reads from the writer of a request already sent


def _aiohttp_response(session: Any, method: str, url: Any, found: plain_http.Answer) -> Any:
    """A ClientResponse that has read the recording: body, status, headers; nothing to release."""
    import asyncio

    from aiohttp import ClientResponse, RequestInfo
    from multidict import CIMultiDict, CIMultiDictProxy

    headers = CIMultiDictProxy(CIMultiDict(found.headers))
    offered = {
        "writer": None,
        "continue100": None,
        "timer": None,
        "request_info": RequestInfo(url, method, CIMultiDictProxy(CIMultiDict()), url),
        "traces": [],
        "loop": asyncio.get_running_loop(),
        "session": session,
        "stream_writer": _Written(),
    }
    accepted = inspect.signature(ClientResponse.__init__).parameters
    response = ClientResponse(method, url, **{k: v for k, v in offered.items() if k in accepted})
    response.status = found.status
    response.reason = _reason(found.status)
    response._headers = headers
    response._raw_headers = tuple((k.encode(), v.encode()) for k, v in found.headers)
    response._body = found.body
    response.content = _stream(found.body)
    response._closed = True  # nothing is open: release() and the context's exit have nothing to do
    return response


def _stream(body: bytes) -> Any:
    """`response.content`, holding the whole body (iter_chunked, readany and read work on it)."""
    import asyncio

    from aiohttp import StreamReader
    from aiohttp.base_protocol import BaseProtocol

    loop = asyncio.get_running_loop()
    reader = StreamReader(BaseProtocol(loop), limit=2**16, loop=loop)
    if body:
        reader.feed_data(body)
    reader.feed_eof()
    return reader


# --- urllib.request (urlopen) -----------------------------------------------------------------------


def _do_open(original: Any) -> Any:
    def do_open(self: Any, http_class: Any, req: Any, **kwargs: Any) -> Any:
        url = req.get_full_url()
        found = plain_http.answer(req.get_method(), url)
        if isinstance(found, plain_http.Pending):
            found = found.record(lambda: _read_urllib(original(self, http_class, req, **kwargs)))
        if found is None:
            return original(self, http_class, req, **kwargs)
        if isinstance(found, plain_http.Refused):
            raise urllib.error.URLError(found)  # what urlopen raises for a connection it could not make
        return _urllib_response(found, url)

    return do_open


def _read_urllib(response: Any) -> plain_http.Received:
    with response:
        return response.status, response.getheaders(), response.read()


def _urllib_response(found: plain_http.Answer, url: str) -> Any:
    """What urlopen's handlers return for an answer (an error status is raised from it as HTTPError,
    a redirect followed, by urlopen's own processors)."""
    import http.client

    headers = http.client.HTTPMessage()
    for name, value in found.headers:
        headers[name] = value  # appended: a repeated header stays repeated
    return _UrllibResponse(io.BytesIO(found.body), headers, url, found.status)


class _UrllibResponse(urllib.response.addinfourl):
    """urlopen's response for an answer, with the reason http.client's has (urlopen reads `msg`)."""

    @property
    def msg(self) -> str:
        return _reason(self.code or 0)

    @property
    def reason(self) -> str:
        return _reason(self.code or 0)


def _reason(status: int) -> str:
    from http import HTTPStatus

    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return ""


# (module, class, method, what stands in front of it)
_SLOTS = (
    ("urllib3.connectionpool", "HTTPConnectionPool", "urlopen", _urlopen),
    ("aiohttp.client", "ClientSession", "_request", _aiohttp_request),
    ("urllib.request", "AbstractHTTPHandler", "do_open", _do_open),
)
