"""Live forwarding: a miss in auto mode goes to the provider only with exactly the engine's own key.

The response streams back to the agent as it arrives (never buffered), and the call is counted and
priced. Capture uses the same forwarder, with a callback that receives the whole exchange.
"""

from __future__ import annotations

import asyncio
import hmac
import os
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass

import aiohttp
from aiohttp import web

from ..normalize import Exchange, request_content
from ..provider_env import KEY_VARS, user_base_url
from .pricing import cost_usd, usage_of

UPSTREAMS = {
    "openai": ("ATTEST_OPENAI_UPSTREAM", "https://api.openai.com"),
    "anthropic": ("ATTEST_ANTHROPIC_UPSTREAM", "https://api.anthropic.com"),
}
_DROP_REQUEST = frozenset({"host", "content-length", "transfer-encoding", "connection", "accept-encoding"})
_DROP_RESPONSE = frozenset({"content-length", "content-encoding", "transfer-encoding", "connection"})

OnExchange = Callable[[Exchange], Awaitable[None] | None]


def reason_of(exc: BaseException) -> str:
    """A one-line reason for a network failure, without the library's repr."""
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

    def url(self, path: str) -> str:
        return self.base + (path[3:] if self.drop_v1 and path.startswith("/v1/") else path)


def upstream_for(provider: str, env: Mapping[str, str]) -> Upstream:
    """ATTEST_<PROVIDER>_UPSTREAM; else the user's own base URL (their gateway); else the provider.

    A base URL is taken with or without a trailing /v1, as the SDKs take it."""
    var, default = UPSTREAMS[provider]
    explicit = env.get(var, "").strip()
    if explicit:
        return Upstream(explicit.rstrip("/").removesuffix("/v1"))
    own = (user_base_url(provider, env) or "").strip().rstrip("/")
    if not own:
        return Upstream(default)
    if own.endswith("/v1"):
        return Upstream(own[:-3])
    return Upstream(own, drop_v1=provider == "openai")


# The events that end a stream: after one of them the answer is complete, whatever follows.
_STREAM_END = re.compile(
    rb"^data: *\[DONE\]|^event: *message_stop|^event: *done\b"
    rb'|"type" *: *"response\.(?:completed|incomplete|failed)"',
    re.MULTILINE,
)


def stream_complete(body: bytes) -> bool:
    """True once a streamed answer's terminal event has arrived."""
    return _STREAM_END.search(body) is not None


class LiveForwarder:
    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        env = dict(os.environ if env is None else env)
        self.keys = {p: env.get(var) or None for p, var in KEY_VARS.items()}
        self.upstreams = {p: upstream_for(p, env) for p in UPSTREAMS}
        self._client: aiohttp.ClientSession | None = None

    def authorized(self, provider: str, headers: Mapping[str, str]) -> bool:
        """True only when the request carries exactly this engine's own key for that provider."""
        key = self.keys.get(provider)
        if not key:
            return False
        offered = headers.get("x-api-key") if provider == "anthropic" else None
        if offered is None:
            auth = headers.get("authorization", "")
            offered = auth[7:] if auth[:7].lower() == "bearer " else None
        return offered is not None and hmac.compare_digest(offered.encode(), key.encode())

    async def client(self) -> aiohttp.ClientSession:
        if self._client is None or self._client.closed:
            timeout = aiohttp.ClientTimeout(total=None, sock_connect=30, sock_read=600)
            self._client = aiohttp.ClientSession(timeout=timeout, trust_env=True, auto_decompress=True)
        return self._client

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
        return await self.forward_to(request, self.upstreams[provider].url(path), path, raw, on_exchange)

    async def forward_to(
        self,
        request: web.Request,
        url: str,
        path: str,
        raw: bytes,
        on_exchange: OnExchange | None = None,
        keep_reading: bool = False,
    ) -> tuple[web.StreamResponse, bytes]:
        """`forward` to any URL (a tool server's); `path` is what the exchange records. With
        `keep_reading`, a client that hangs up once it has what it needs (an MCP client after the
        reply event) does not cut the exchange short: the rest is still read and recorded."""
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _DROP_REQUEST}
        client = await self.client()
        async with client.request(
            request.method, url, params=request.query_string or None, data=raw or None, headers=headers
        ) as upstream:
            response = web.StreamResponse(status=upstream.status, reason=upstream.reason)
            for k, v in upstream.headers.items():
                if k.lower() not in _DROP_RESPONSE:
                    response.headers.add(k, v)
            await response.prepare(request)
            chunks: list[bytes] = []
            writable = True
            async for chunk in upstream.content.iter_any():
                chunks.append(chunk)
                writable = writable and await _write(response, chunk, keep_reading, chunks)
            if writable:
                await _write(response, None, keep_reading, chunks)
        body = b"".join(chunks)
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
