"""Live forwarding: a miss in auto mode goes to the provider only with exactly the engine's own key.

The response streams back to the agent as it arrives (never buffered), and the call is counted and
priced. Capture uses the same forwarder, with a callback that receives the whole exchange.
"""

from __future__ import annotations

import asyncio
import hmac
import os
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass

import aiohttp
from aiohttp import web
from yarl import URL

from ..normalize import Exchange, request_content
from ..pricing.cost import cost_usd, usage_of
from ..providers import PROVIDERS, RECORDED, STREAM_END_RE, Signer, SigningFailed
from ..providers.env import explicit_upstream, keys_in, user_base_url
from . import listeners
from .ca_store import load_ca_store
from .deadlines import CONNECT_TIMEOUT_VAR, TOTAL_TIMEOUT_VAR, Deadlines
from .http import request_flag

UPSTREAMS = {
    p.name: (p.upstream_var, p.default_upstream)
    for p in PROVIDERS.values()
    if p.upstream_var and p.default_upstream
}
# The variables a refused forward names as examples: the first recorded providers'.
_UPSTREAM_EXAMPLES = ", ".join(str(PROVIDERS[name].upstream_var) for name in RECORDED[:2])
_DROP_REQUEST = frozenset({"host", "content-length", "transfer-encoding", "connection", "accept-encoding"})
_DROP_RESPONSE = frozenset({"content-length", "content-encoding", "transfer-encoding", "connection"})
_PREPARED = request_flag("attest_live_prepared")  # the answer's head has gone to the caller

OnExchange = Callable[[Exchange], Awaitable[None] | None]


class ForwardRefused(Exception):
    """A live call not made (its upstream is one of attest's own listeners) or not finished in time.
    `started`: the answer had begun to reach the caller."""

    def __init__(self, reason: str, started: bool = False) -> None:
        super().__init__(reason)
        self.started = started


def cut_off(request: web.Request) -> web.Response:
    """End an answer that had begun: the caller sees it cut off, as it happened upstream."""
    if request.transport is not None:
        request.transport.close()
    return web.Response()  # the connection is closed, so aiohttp drops this quietly


def reason_of(exc: BaseException) -> str:
    """A one-line reason for a network failure, without the library's repr."""
    if isinstance(exc, ForwardRefused):
        return str(exc)
    if isinstance(exc, aiohttp.ClientConnectorError) and exc.os_error.errno:
        return os.strerror(exc.os_error.errno).lower()  # "connection refused", not asyncio's wording
    if isinstance(exc, asyncio.TimeoutError):
        return "timed out"
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


@dataclass(frozen=True)
class Upstream:
    """Where a provider's calls go: `base` + the path the agent asked for (which starts with /v1)."""

    base: str
    drop_v1: bool = False  # an OpenAI base URL without /v1: the SDK calls `<base>/chat/completions`
    base_of: Callable[[str], str] | None = None  # the provider's own endpoint for a path, when it varies

    def url(self, path: str) -> str:
        base = self.base_of(path) if self.base_of is not None else self.base
        return base + (path[3:] if self.drop_v1 and path.startswith("/v1/") else path)


def upstream_for(provider: str, env: Mapping[str, str]) -> Upstream:
    """ATTEST_<PROVIDER>_UPSTREAM; else the user's own base URL (their gateway); else the provider.

    A base URL is taken with or without a trailing /v1, as the SDKs take it."""
    var, default = UPSTREAMS[provider]
    explicit = explicit_upstream(var, env)
    if explicit:
        return Upstream(explicit.rstrip("/").removesuffix("/v1"))
    found, p = user_base_url(provider, env), PROVIDERS[provider]
    if found is None:
        return Upstream(default, base_of=p.upstream_of)
    own, var = found[0].strip().rstrip("/"), found[1]
    extra = p.var_paths.get(var, p.proxy_path)  # the requests' paths already start with it
    if extra and own.endswith(extra):
        return Upstream(own[: -len(extra)])
    if own.endswith("/v1"):
        return Upstream(own[:-3])
    return Upstream(own, drop_v1=p.proxy_path == "/v1")


def path_as_sent(request: web.Request, path: str) -> str:
    """`path`, the decoded tail of the request's path, as the caller encoded it: an escaped `/` in a
    model id (a Bedrock ARN) must reach the provider escaped, or it splits the path there."""
    raw = request.raw_path.split("?", 1)[0]
    prefix = request.path[: len(request.path) - len(path)]
    if request.path.endswith(path) and raw.startswith(prefix):
        return raw[len(prefix) :]
    return path


def stream_complete(body: bytes) -> bool:
    """True once a streamed answer's terminal event has arrived (after it, the answer is complete,
    whatever follows)."""
    return STREAM_END_RE.search(body) is not None


class LiveForwarder:
    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        env = dict(os.environ if env is None else env)
        self.keys = keys_in(env)
        self.upstreams = {p: upstream_for(p, env) for p in UPSTREAMS}
        deadlines = Deadlines.of(env)
        self.connect_timeout, self.total_timeout = deadlines.connect, deadlines.total
        self.listeners_env = {k: v for k, v in env.items() if k == listeners.LISTENERS_VAR}
        self.signers = {name: p.signer(env) for name, p in PROVIDERS.items() if p.signer is not None}
        self._client: aiohttp.ClientSession | None = None

    def authorized(self, provider: str, request: web.Request, raw: bytes) -> bool:
        """True only when the request carries exactly this engine's own key for that provider (for a
        signing provider: is signed with this engine's own credentials)."""
        key = self.keys.get(provider)
        if not key:
            return False
        headers = request.headers
        signer = self.signers.get(provider)
        if signer is not None:
            url = f"{request.scheme}://{request.host}{request.raw_path}"
            return signer.signed_with(key, request.method, url, headers, raw)
        key_header = PROVIDERS[provider].key_header
        offered = headers.get(key_header) if key_header else None
        if offered is None:
            auth = headers.get("authorization", "")
            offered = auth[7:] if auth[:7].lower() == "bearer " else None
        return offered is not None and hmac.compare_digest(offered.encode(), key.encode())

    def outgoing_headers(self, request: web.Request) -> dict[str, str]:
        """The headers sent upstream: the caller's own, but for the hop-by-hop ones."""
        return {k: v for k, v in request.headers.items() if k.lower() not in _DROP_REQUEST}

    def headers_for(self, request: web.Request, tool: bool) -> dict[str, str]:
        """The request's headers to send on. A provider key is checked to belong to its provider
        only, so a header carrying one never goes to a tool server."""
        headers = self.outgoing_headers(request)
        keys = [key for key in self.keys.values() if key] if tool else []
        return {k: v for k, v in headers.items() if not any(key in v for key in keys)}

    async def client(self) -> aiohttp.ClientSession:
        if self._client is None or self._client.closed:
            load_ca_store()  # the engine's start left it unloaded
            timeout = aiohttp.ClientTimeout(total=self.total_timeout, sock_connect=self.connect_timeout)
            self._client = aiohttp.ClientSession(timeout=timeout, trust_env=True, auto_decompress=True)
        return self._client

    def check_target(self, url: str) -> None:
        """Refuse a forward to one of attest's own listeners: it would come round again, for ever."""
        if listeners.ours(url, self.listeners_env):
            raise ForwardRefused(
                f"{listeners.origin(url)} is attest's own listener, so forwarding there would loop; set "
                f"your real upstream ({_UPSTREAM_EXAMPLES} or the tool's variable)"
            )

    def timed_out(self, exc: BaseException, url: str, started: bool) -> ForwardRefused:
        if isinstance(exc, aiohttp.ConnectionTimeoutError):
            deadline = f"could not connect within {self.connect_timeout:g} s ({CONNECT_TIMEOUT_VAR})"
        else:
            deadline = f"no whole answer within {self.total_timeout:g} s ({TOTAL_TIMEOUT_VAR})"
        return ForwardRefused(f"{listeners.origin(url)}: {deadline}", started)

    async def close(self) -> None:
        if self._client is not None:
            await self._client.close()

    async def forward(
        self,
        request: web.Request,
        provider: str,
        path: str,
        raw: bytes,
        on_exchange: OnExchange | None = None,
    ) -> tuple[web.StreamResponse, bytes]:
        """Send the request upstream and stream the answer back; returns the response and its body."""
        try:
            url = self.upstreams[provider].url(path_as_sent(request, path))
        except ValueError as exc:  # a path the provider's endpoint cannot be built from
            raise ForwardRefused(str(exc)) from None
        signer = self.signers.get(provider)
        if "{region}" in url and signer is None:
            raise ForwardRefused(f"no region to fill in {url}")
        self.check_target(url)
        return await self.forward_to(request, url, path, raw, on_exchange, signer=signer)

    async def forward_to(
        self,
        request: web.Request,
        url: str,
        path: str,
        raw: bytes,
        on_exchange: OnExchange | None = None,
        keep_reading: bool = False,
        tool: bool = False,
        to_engine: bool = False,
        signer: Signer | None = None,
    ) -> tuple[web.StreamResponse, bytes]:
        """`forward` to any URL (a tool server's, with `tool`); `path` is what the exchange records.
        With `keep_reading`, a client that hangs up once it has what it needs (an MCP client after the
        reply event) does not cut the exchange short: the rest is still read and recorded.
        `to_engine`: the hop to attest's own engine, which keeps the whole-answer deadline itself.
        `signer`: signs the request again for `url` (the caller signed it for the proxy).
        Raises ForwardRefused for a loop, a missed deadline or a request that cannot be signed."""
        if tool:
            self.check_target(url)
        headers = self.headers_for(request, tool)
        target: str | URL = url
        if signer is not None:
            try:
                url, headers = signer.prepare(request.method, url, headers, raw)
            except SigningFailed as exc:
                raise ForwardRefused(str(exc)) from None
            target = URL(url, encoded=True)  # sent exactly as signed, escapes and all
        try:
            return await self._forward_to(
                request, target, path, raw, headers, on_exchange, keep_reading, to_engine
            )
        except asyncio.TimeoutError as exc:
            raise self.timed_out(exc, url, request.get(_PREPARED, False)) from None

    async def _forward_to(
        self,
        request: web.Request,
        url: str | URL,
        path: str,
        raw: bytes,
        headers: dict[str, str],
        on_exchange: OnExchange | None,
        keep_reading: bool,
        to_engine: bool,
    ) -> tuple[web.StreamResponse, bytes]:
        client = await self.client()
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=self.connect_timeout) if to_engine else None
        async with client.request(
            request.method,
            url,
            params=request.query_string or None,
            data=raw or None,
            headers=headers,
            **({"timeout": timeout} if timeout is not None else {}),
        ) as upstream:
            response = web.StreamResponse(status=upstream.status, reason=upstream.reason)
            for k, v in upstream.headers.items():
                if k.lower() not in _DROP_RESPONSE:
                    response.headers.add(k, v)
            await response.prepare(request)
            request[_PREPARED] = True
            chunks: list[bytes] = []
            writable = True
            async for chunk in upstream.content.iter_any():
                chunks.append(chunk)
                writable = writable and await _write(response, chunk, keep_reading, chunks)
            body = b"".join(chunks)
            # Recorded before the answer ends: a command that exits as soon as it has its last answer
            # never races the recorder (its output and the progress line keep their order).
            if on_exchange is not None:
                exchange = Exchange(
                    method=request.method,
                    path=path,
                    query=request.query_string,
                    request_body=request_content(raw, request.headers.get("content-encoding")),
                    status=upstream.status,
                    response_headers=[
                        (k, v) for k, v in upstream.headers.items() if k.lower() not in _DROP_RESPONSE
                    ],
                    response_body=body,
                )
                result = on_exchange(exchange)
                if result is not None:
                    await result
            if writable:
                await _write(response, None, keep_reading, chunks)
        return response, body

    @staticmethod
    def price(model: str | None, body: bytes, content_type: str) -> float | None:
        return cost_usd(model, usage_of(body, content_type))


async def _write(
    response: web.StreamResponse, chunk: bytes | None, tolerate_hangup: bool, received: list[bytes]
) -> bool:
    """Write a chunk (None: the end); False when the client has gone and that is tolerated.

    A hang-up after a stream's terminal event is always tolerated: the official SDKs close the
    connection as soon as they read `data: [DONE]`, while the provider may still send its last
    bytes, and the answer is whole. A client that leaves before it cut the answer short."""
    try:
        await (response.write(chunk) if chunk is not None else response.write_eof())
    except ConnectionResetError:
        if not (tolerate_hangup or stream_complete(b"".join(received))):
            raise
        return False
    return True
