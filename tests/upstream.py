"""A scripted provider on loopback: answers requests in order with recorded bytes, and counts them.

It stands in for api.openai.com / api.anthropic.com in tests (through ATTEST_OPENAI_UPSTREAM and
ATTEST_ANTHROPIC_UPSTREAM), so live forwarding and capture are tested without leaving the machine.
"""

from __future__ import annotations

import base64
import json
import re
import struct
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field

from aiohttp import web
from attest_toolkit.proxy.background import BackgroundServer


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
    raw_path: str = ""  # the path as it came, escapes and all
    host: str = ""


class FakeUpstream:
    """`check`: looks at each request first; a Reply it returns is the answer (a refused signature)."""

    def __init__(self, replies: list[Reply], check: Callable[[Seen], Reply | None] | None = None) -> None:
        self.replies = list(replies)
        self.check = check
        self.requests: list[Seen] = []
        self._server = BackgroundServer(self._build, "fake-upstream")
        self.url = ""

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        seen = Seen(
            request.method,
            request.path,
            request.query_string,
            dict(request.headers),
            body,
            request.raw_path.split("?", 1)[0],
            request.host,
        )
        self.requests.append(seen)
        refused = self.check(seen) if self.check is not None else None
        if refused is not None:
            return web.Response(status=refused.status, body=refused.body, headers=refused.headers)
        if not self.replies:
            return web.json_response({"error": {"message": "fake upstream: no reply scripted"}}, status=500)
        reply = self.replies.pop(0)
        # A fixture keeps the headers a provider sends: one name for this one, whatever aiohttp runs it.
        headers = {"server": "fake-upstream", **reply.headers}
        if reply.events is None:
            return web.Response(status=reply.status, body=reply.body, headers=headers)
        response = web.StreamResponse(status=reply.status, headers=headers)
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


# --- Bedrock Runtime's wire format (bedrock-runtime.<region>.amazonaws.com) ---------------------------

BEDROCK_STREAM = {"content-type": "application/vnd.amazon.eventstream"}
_PADDING = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0"


def bedrock_frame(event_type: str, payload: dict) -> bytes:
    """One event-stream frame as Bedrock sends it: string headers, a JSON payload padded with `p`,
    the prelude's and the frame's CRC32 (written from the format's description, not from attest)."""
    payload = {**payload, "p": _PADDING[: 5 + len(json.dumps(payload)) % 40]}
    body = json.dumps(payload, separators=(",", ":")).encode()
    headers = b""
    for name, value in (
        (":event-type", event_type),
        (":content-type", "application/json"),
        (":message-type", "event"),
    ):
        headers += (
            bytes([len(name)]) + name.encode() + b"\x07" + struct.pack(">H", len(value)) + value.encode()
        )
    prelude = struct.pack(">II", 16 + len(headers) + len(body), len(headers))
    message = prelude + struct.pack(">I", zlib.crc32(prelude)) + headers + body
    return message + struct.pack(">I", zlib.crc32(message))


def bedrock_usage(inputs: int, outputs: int) -> dict:
    return {"inputTokens": inputs, "outputTokens": outputs, "totalTokens": inputs + outputs}


def bedrock_converse(content: list[dict], stop: str = "end_turn", usage: dict | None = None) -> Reply:
    """A Converse answer."""
    message = {"role": "assistant", "content": content}
    doc = {"output": {"message": message}, "stopReason": stop, "usage": usage or bedrock_usage(20, 8)}
    return _json_reply({**doc, "metrics": {"latencyMs": 412}})


def bedrock_converse_stream(pieces: list[str], usage: dict | None = None) -> Reply:
    """A ConverseStream answer, one frame per event, ending with the metadata event."""
    events = [bedrock_frame("messageStart", {"role": "assistant"})]
    events += [
        bedrock_frame("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": piece}})
        for piece in pieces
    ]
    events += [
        bedrock_frame("contentBlockStop", {"contentBlockIndex": 0}),
        bedrock_frame("messageStop", {"stopReason": "end_turn"}),
        bedrock_frame(
            "metadata", {"usage": usage or bedrock_usage(9, len(pieces)), "metrics": {"latencyMs": 230}}
        ),
    ]
    return Reply(headers=BEDROCK_STREAM, events=events)


def _claude_message(content: list[dict], usage: dict) -> dict:
    return {
        "id": "msg_bdrk_01Hx7Qw3Er5Ty9Ui2Op4As6D",
        "type": "message",
        "role": "assistant",
        "model": "claude-3-5-haiku-20241022",
        "content": content,
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": usage,
    }


def bedrock_invoke_claude(text: str, usage: dict | None = None) -> Reply:
    """An InvokeModel answer of an Anthropic model: Anthropic's Messages body."""
    return _json_reply(
        _claude_message([{"type": "text", "text": text}], usage or {"input_tokens": 14, "output_tokens": 9})
    )


def bedrock_invoke_claude_stream(pieces: list[str]) -> Reply:
    """An InvokeModelWithResponseStream answer of an Anthropic model: each of Anthropic's stream events
    base64-encoded in a `chunk` frame."""
    inner = [
        {"type": "message_start", "message": _claude_message([], {"input_tokens": 11, "output_tokens": 1})},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        *(
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": p}}
            for p in pieces
        ),
        {"type": "content_block_stop", "index": 0},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn"},
            "usage": {"output_tokens": len(pieces)},
        },
        {
            "type": "message_stop",
            "amazon-bedrock-invocationMetrics": {"inputTokenCount": 11, "outputTokenCount": len(pieces)},
        },
    ]
    events = [
        bedrock_frame(
            "chunk", {"bytes": base64.b64encode(json.dumps(e, separators=(",", ":")).encode()).decode()}
        )
        for e in inner
    ]
    return Reply(headers=BEDROCK_STREAM, events=events)


def bedrock_error(status: int, kind: str, message: str) -> Reply:
    """An AWS error as Bedrock sends it: the kind in x-amzn-ErrorType, the message in the body."""
    return Reply(
        status=status,
        headers={
            "content-type": "application/json",
            "x-amzn-ErrorType": f"{kind}:http://internal.amazon.com/coral/com.amazon.bedrock/",
        },
        body=json.dumps({"message": message}).encode(),
    )


_SIGNED_HEADERS = re.compile(r"SignedHeaders=([^,\s]+)")
_SIGNATURE = re.compile(r"Signature=([0-9a-f]{64})")


def sigv4_check(
    access_key: str, secret_key: str, region: str = "us-east-1"
) -> Callable[[Seen], Reply | None]:
    """A check that refuses, as AWS does, a request whose SigV4 signature is not valid for this host
    with these credentials, recomputed with botocore from what arrived."""
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    def check(seen: Seen) -> Reply | None:
        headers = {k.lower(): v for k, v in seen.headers.items()}
        auth = headers.get("authorization", "")
        names = _SIGNED_HEADERS.search(auth)
        given = _SIGNATURE.search(auth)
        scope = f"Credential={access_key}/{headers.get('x-amz-date', '')[:8]}/{region}/bedrock/aws4_request"
        if names is None or given is None or scope not in auth:
            return bedrock_error(
                403, "UnrecognizedClientException", "The security token included in the request is invalid."
            )
        signed = {k: v for k, v in headers.items() if k in names.group(1).split(";")}
        request = AWSRequest(
            method=seen.method, url=f"http://{seen.host}{seen.raw_path}", data=seen.body, headers=signed
        )
        request.context["timestamp"] = headers["x-amz-date"]
        signer = SigV4Auth(Credentials(access_key, secret_key), "bedrock", region)
        expected = signer.signature(
            signer.string_to_sign(request, signer.canonical_request(request)), request
        )
        if expected != given.group(1):
            return bedrock_error(
                403,
                "InvalidSignatureException",
                "The request signature we calculated does not match the signature you provided.",
            )
        return None

    return check
