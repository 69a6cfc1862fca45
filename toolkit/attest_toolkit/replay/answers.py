"""The aiohttp answers every proxy of attest gives a provider's SDK from a fixture, whichever serves it:
the replay engine's application, the recording front of a pytest run, a rebase's and a partial
refresh's replays: a recording served, and a miss in the provider's error shape.

It imports aiohttp, so the engine's server imports it only with its web application (`replay.webapp`),
when a request first needs it.
"""

from __future__ import annotations

from aiohttp import web

from ..normalize.served import Sent
from ..providers import error_headers
from .diagnose import MISS_HEADERS, miss_body
from .index import Recording


def miss_response(provider: str, message: str) -> web.Response:
    """A provider-shaped 400 that the official SDKs do not retry (400, and x-should-retry: false)."""
    headers = {**dict(MISS_HEADERS), **error_headers(provider, 400)}
    return web.json_response(miss_body(provider, message), status=400, headers=headers)


def sent_of(request: web.Request, provider: str, path: str, raw: bytes) -> Sent:
    headers = request.headers
    return Sent(
        provider,
        request.method,
        path,
        request.query_string,
        raw,
        headers.get("content-encoding"),
        headers.get("content-type"),
    )


async def serve_recording(request: web.Request, rec: Recording) -> web.StreamResponse:
    if rec.events is None:
        return web.Response(status=rec.status, body=rec.body, headers=rec.headers)
    response = web.StreamResponse(status=rec.status, headers=rec.headers)
    await response.prepare(request)
    try:
        for event in rec.events:  # one write per recorded event: no re-chunking, no buffering
            await response.write(event)
        await response.write_eof()
    except ConnectionResetError:  # the agent left mid-stream: its choice, not an engine error
        pass
    return response
