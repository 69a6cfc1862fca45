"""A scripted provider on loopback: answers requests in order with recorded bytes, and counts them.

It stands in for api.openai.com / api.anthropic.com in tests (through ATTEST_OPENAI_UPSTREAM and
ATTEST_ANTHROPIC_UPSTREAM), so live forwarding and capture are tested without leaving the machine.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from aiohttp import web
from attest_toolkit.engine.background import BackgroundServer


@dataclass
class Reply:
    status: int = 200
    headers: dict[str, str] = field(default_factory=lambda: {"content-type": "application/json"})
    body: bytes = b"{}"
    events: list[bytes] | None = None  # a streamed body, one write per event
    drop_after: int | None = None  # close the connection after this many events (a dropped stream)


@dataclass
class Seen:
    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: bytes


class FakeUpstream:
    def __init__(self, replies: list[Reply]) -> None:
        self.replies = list(replies)
        self.requests: list[Seen] = []
        self._server = BackgroundServer(self._build, "fake-upstream")
        self.url = ""

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        self.requests.append(
            Seen(request.method, request.path, request.query_string, dict(request.headers), body)
        )
        if not self.replies:
            return web.json_response({"error": {"message": "fake upstream: no reply scripted"}}, status=500)
        reply = self.replies.pop(0)
        if reply.events is None:
            return web.Response(status=reply.status, body=reply.body, headers=reply.headers)
        response = web.StreamResponse(status=reply.status, headers=reply.headers)
        await response.prepare(request)
        for i, event in enumerate(reply.events):
            if reply.drop_after is not None and i >= reply.drop_after:
                request.transport.close()  # type: ignore[union-attr]
                return response
            await response.write(event)
        await response.write_eof()
        return response

    def _build(self) -> web.Application:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._handle)
        return app

    def __enter__(self) -> FakeUpstream:
        self.url = self._server.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.stop()
