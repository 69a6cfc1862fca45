"""The project's own provider answers for its core paths, shaped as OpenAI and Anthropic send them.

`tests/upstream.py` serves these to the capture agent (`tests/agents/capture_agent.py`), so capture,
replay and the recordings under `tests/recordings/` need nothing from outside the repository: SSE
event by event, and gzip bodies still compressed with their Content-Encoding, as the providers do.
"""

from __future__ import annotations

import gzip
import json
from typing import Any

from upstream import Reply

SSE = {"content-type": "text/event-stream; charset=utf-8"}
JSON = {"content-type": "application/json"}
GZIP = {"content-encoding": "gzip"}
CREATED = 1764569740
ARGUMENTS = '{"a":1231,"b":2331}'
ANSWER = "1231 * 2331 = 2,869,461."
PELICAN_ANSWER = "Here are two great names for your pet pelican: Charles and Sammy."
TOOLU = "toolu_01Fq8Xn2Lr5Tw9Zc3Vb7Km4H"


def _data(doc: Any) -> bytes:
    return f"data: {json.dumps(doc, separators=(',', ':'))}\n\n".encode()


def _event(kind: str, doc: dict) -> bytes:
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **doc}, separators=(',', ':'))}\n\n".encode()


# --- OpenAI chat completions, streamed ------------------------------------------------------------


def _chunk(ident: str, delta: dict, finish: str | None = None) -> bytes:
    choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
    return _data(
        {
            "id": ident,
            "object": "chat.completion.chunk",
            "created": CREATED,
            "model": "gpt-4o-mini-2024-07-18",
            "service_tier": "default",
            "system_fingerprint": "fp_51db84afab",
            "choices": [choice],
            "usage": None,
        }
    )


def _chat_stream(ident: str, deltas: list[dict], finish: str, usage: dict[str, int]) -> Reply:
    events = [_chunk(ident, delta) for delta in deltas] + [_chunk(ident, {}, finish)]
    tail = {
        "id": ident,
        "object": "chat.completion.chunk",
        "created": CREATED,
        "model": "gpt-4o-mini-2024-07-18",
    }
    events += [_data({**tail, "choices": [], "usage": usage}), b"data: [DONE]\n\n"]
    return Reply(headers=SSE, events=events)


def chat_tool_call_stream(
    name: str = "multiply",
    pieces: tuple[str, ...] = ('{"a":1231,', '"b":2331}'),
    call_id: str = "call_Qm4tZr8LwX2nBv6YpK1sJd9H",
) -> Reply:
    """A streamed call of tool `name`, its arguments in `pieces`."""
    call = {"index": 0, "id": call_id, "type": "function"}
    call["function"] = {"name": name, "arguments": ""}
    deltas: list[dict] = [{"role": "assistant", "content": None, "tool_calls": [call], "refusal": None}]
    deltas += [{"tool_calls": [{"index": 0, "function": {"arguments": piece}}]} for piece in pieces]
    usage = {"prompt_tokens": 61, "completion_tokens": 18, "total_tokens": 79}
    return _chat_stream("chatcmpl-Cq7Wd2Hk9Lm3Np5Rs8Tv1Xy4Za", deltas, "tool_calls", usage)


def chat_text_stream(
    text: str = ANSWER,
    ident: str = "chatcmpl-Cq7We5Jn2Po6Qr9St3Uv7Wx0Yb",
    usage: dict[str, int] | None = None,
) -> Reply:
    """A streamed answer of `text`, with its usage chunk (`usage`, else 92 prompt tokens and a
    completion token a word)."""
    pieces = text.split(" ")
    deltas = [{"role": "assistant", "content": "", "refusal": None}]
    deltas += [{"content": piece if i == 0 else " " + piece} for i, piece in enumerate(pieces)]
    if usage is None:
        usage = {"prompt_tokens": 92, "completion_tokens": len(pieces), "total_tokens": 92 + len(pieces)}
    return _chat_stream(ident, deltas, "stop", usage)


# --- OpenAI responses, gzip-compressed JSON -------------------------------------------------------


def _gzip_json(doc: dict) -> Reply:
    return Reply(headers={**JSON, **GZIP}, body=gzip.compress(json.dumps(doc).encode(), mtime=0))


def _response(ident: str, output: list[dict], previous: str | None) -> dict:
    return {
        "id": ident,
        "object": "response",
        "created_at": CREATED,
        "status": "completed",
        "model": "gpt-5.5-2026-03-05",
        "output": output,
        "previous_response_id": previous,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": {"input_tokens": 58, "output_tokens": 21, "total_tokens": 79},
    }


FIRST_RESPONSE = "resp_0a1b2c3d4e5f60718293a4b5c6d7e8f9a0b1c2d3e4f5a6b7"


def responses_tool_call() -> Reply:
    call = {
        "type": "function_call",
        "id": "fc_0a1b2c3d4e5f60718293a4b5c6d7e8f9a0b1c2d3e4f5a6c8",
        "call_id": "call_Hw3Kd8Nq2Ls6Zt0Pm4Vx7Rb1",
        "name": "multiply",
        "arguments": ARGUMENTS,
        "status": "completed",
    }
    return _gzip_json(_response(FIRST_RESPONSE, [call], None))


def responses_answer() -> Reply:
    message = {
        "type": "message",
        "id": "msg_0a1b2c3d4e5f60718293a4b5c6d7e8f9a0b1c2d3e4f5a6d9",
        "status": "completed",
        "role": "assistant",
        "content": [{"type": "output_text", "text": ANSWER, "annotations": [], "logprobs": []}],
    }
    return _gzip_json(
        _response("resp_0a1b2c3d4e5f60718293a4b5c6d7e8f9a0b1c2d3e4f5a6e0", [message], FIRST_RESPONSE)
    )


# --- Anthropic messages, streamed and gzip-compressed ---------------------------------------------


def _anthropic_stream(ident: str, blocks: list[list[bytes]], stop: str) -> Reply:
    message = {
        "id": ident,
        "type": "message",
        "role": "assistant",
        "model": "claude-haiku-4-5-20251001",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 583, "output_tokens": 1},
    }
    events = [_event("message_start", {"message": message})]
    events += [event for block in blocks for event in block]
    events.append(
        _event(
            "message_delta",
            {"delta": {"stop_reason": stop, "stop_sequence": None}, "usage": {"output_tokens": 40}},
        )
    )
    events.append(_event("message_stop", {}))
    return Reply(headers={**SSE, **GZIP}, body=gzip.compress(b"".join(events), mtime=0))


def _tool_use(
    index: int, ident: str, name: str = "pelican_name_generator", pieces: tuple[str, ...] = ("",)
) -> list[bytes]:
    """A streamed call of tool `name`, its input JSON in `pieces`."""
    block = {"type": "tool_use", "id": ident, "name": name, "input": {}}
    deltas = [
        _event("content_block_delta", {"index": index, "delta": {"type": "input_json_delta", "partial_json": piece}})
        for piece in pieces
    ]  # fmt: skip
    start = _event("content_block_start", {"index": index, "content_block": block})
    return [start, *deltas, _event("content_block_stop", {"index": index})]


def _text(index: int, text: str) -> list[bytes]:
    start = _event("content_block_start", {"index": index, "content_block": {"type": "text", "text": ""}})
    pieces = [text[i : i + 24] for i in range(0, len(text), 24)]
    deltas = [
        _event("content_block_delta", {"index": index, "delta": {"type": "text_delta", "text": p}})
        for p in pieces
    ]
    return [start, *deltas, _event("content_block_stop", {"index": index})]


def messages_tool_use_stream() -> Reply:
    blocks = [_tool_use(0, TOOLU), _tool_use(1, "toolu_01Gr9Yp3Ms6Ux0Ad4Wc8Ln5J")]
    return _anthropic_stream("msg_01Ht7Kq3Wn9Pz2Lc5Xv8Rb4D", blocks, "tool_use")


def messages_answer_stream(text: str = PELICAN_ANSWER) -> Reply:
    return _anthropic_stream("msg_01Jv8Lr4Xp0Qa3Md6Yw9Sc5F", [_text(0, text)], "end_turn")


def messages_tool_call_stream(name: str, pieces: tuple[str, ...]) -> Reply:
    """A streamed Anthropic message calling tool `name` once, its input JSON in `pieces`."""
    return _anthropic_stream("msg_01Ht7Kq3Wn9Pz2Lc5Xv8Rb4D", [_tool_use(0, TOOLU, name, pieces)], "tool_use")


def flow_replies() -> list[Reply]:
    """The six answers the capture agent's `flow` gets: chat, responses, messages, two turns each."""
    return [
        chat_tool_call_stream(),
        chat_text_stream(),
        responses_tool_call(),
        responses_answer(),
        messages_tool_use_stream(),
        messages_answer_stream(),
    ]
