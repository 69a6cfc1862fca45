"""A scripted provider on loopback: answers requests in order with recorded bytes, and counts them.

It stands in for api.openai.com / api.anthropic.com in tests (through ATTEST_OPENAI_UPSTREAM and
ATTEST_ANTHROPIC_UPSTREAM), so live forwarding and capture are tested without leaving the machine.
"""

from __future__ import annotations

import json
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


# --- Gemini's wire format (generativelanguage.googleapis.com) ---------------------------------------


def _json_reply(value: dict, status: int = 200) -> Reply:
    return Reply(status=status, body=json.dumps(value).encode())


def gemini_usage(prompt: int, output: int, thoughts: int = 0) -> dict:
    usage = {"promptTokenCount": prompt, "candidatesTokenCount": output, "totalTokenCount": prompt + output}
    if thoughts:
        usage.update(thoughtsTokenCount=thoughts, totalTokenCount=prompt + output + thoughts)
    return usage


def gemini_candidate(parts: list[dict], finish: str | None = "STOP") -> dict:
    candidate: dict = {"content": {"role": "model", "parts": parts}, "index": 0}
    if finish:
        candidate["finishReason"] = finish
    return candidate


def gemini_answer(text: str, usage: dict | None = None, model: str = "gemini-2.5-flash") -> Reply:
    """A generateContent answer."""
    return _json_reply(
        {
            "candidates": [gemini_candidate([{"text": text}])],
            "usageMetadata": usage or gemini_usage(12, 5),
            "modelVersion": model,
            "responseId": "Wn8yaP7eLqWLz7IPk5SWwQ4",
        }
    )


def gemini_function_call(name: str, args: dict) -> Reply:
    """A generateContent answer in which the model asks for a function."""
    return _json_reply(
        {
            "candidates": [gemini_candidate([{"functionCall": {"name": name, "args": args}}])],
            "usageMetadata": gemini_usage(40, 8),
            "modelVersion": "gemini-2.5-flash",
            "responseId": "Xo8yaJ3eLqWLz7IPk5SWwQ5",
        }
    )


def gemini_stream(pieces: list[str]) -> Reply:
    """A streamGenerateContent?alt=sse answer: one event per piece, CRLF-framed as Google sends them;
    the last carries the finishReason and the usage, and no end marker follows."""
    events = []
    for i, piece in enumerate(pieces):
        last = i == len(pieces) - 1
        chunk: dict = {"candidates": [gemini_candidate([{"text": piece}], "STOP" if last else None)]}
        if last:
            chunk["usageMetadata"] = gemini_usage(6, len(pieces))
        chunk["modelVersion"] = "gemini-2.5-flash"
        events.append(f"data: {json.dumps(chunk)}\r\n\r\n".encode())
    return Reply(headers={"content-type": "text/event-stream"}, events=events)


def gemini_tokens(total: int) -> Reply:
    """A countTokens answer."""
    return _json_reply({"totalTokens": total})


def gemini_embeddings(*vectors: list[float]) -> Reply:
    """A batchEmbedContents answer."""
    return _json_reply({"embeddings": [{"values": v} for v in vectors]})


def vertex_embedding(values: list[float]) -> Reply:
    """Vertex AI's embedContent answer (one content, a Gemini embedding model)."""
    return _json_reply({"embedding": {"values": values}, "usageMetadata": {"promptTokenCount": 1}})


def google_token(token: str) -> Reply:
    """An OAuth token endpoint's answer, as google-auth reads it."""
    return _json_reply({"access_token": token, "expires_in": 3600, "token_type": "Bearer"})


GEMINI_STATUS = {
    400: "INVALID_ARGUMENT",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
}


def gemini_error(status: int, message: str) -> Reply:
    """Google's error body (google.rpc.Status) with its HTTP status."""
    return _json_reply(
        {"error": {"code": status, "message": message, "status": GEMINI_STATUS.get(status, "INTERNAL")}},
        status,
    )
