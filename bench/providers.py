"""Per provider: replaying a Gemini or Bedrock call costs what replaying an OpenAI call of the same size costs.

The same conversation (a system prompt, TURNS user/model turns, the same answer) is recorded as an
OpenAI chat completion, a Gemini generateContent call and a Bedrock Converse call. Measured, per
request, what the engine does on a hit: parse the body, normalize and hash it into the request key,
look it up in the session's index. The baseline, in the same run, is an OpenAI call of the same size:
its last question is lengthened until its body has as many bytes as the other provider's (whose
nesting spends bytes the OpenAI call spends on text). The same conversation as an OpenAI call is
measured too, without a target. Time is the process's CPU time: the work is one thread's, and a
shared machine's other load then moves the figures less.
"""

from __future__ import annotations

import json
from pathlib import Path

from attest_toolkit.fixtures import document as fx
from attest_toolkit.normalize import Exchange, Templater, parse_body, request_key
from attest_toolkit.replay.index import LoadedFixture, Recording, load
from attest_toolkit.replay.session import Session
from common import JSON, NO_SECRETS, SYSTEM, Row, cpu_timed, median, ms, ratio

TURNS = 20
BATCH = 300
TARGET = 1.0  # the issue's: no more than an OpenAI call of the same size
OPENAI_PATH = "/v1/chat/completions"
GEMINI_PATH = "/v1beta/models/gemini-2.5-flash:generateContent"
BEDROCK_PATH = "/model/us.amazon.nova-pro-v1:0/converse"
ANSWER = "Order O-1042 ships today."


def turns() -> list[tuple[str, str]]:
    return [(f"Question {i}: where is order O-{i}?", f"Order O-{i} is on its way.") for i in range(TURNS)]


def openai_call(size: int | None = None) -> tuple[dict, dict]:
    """The conversation as an OpenAI chat call; with `size`, its body made exactly that many bytes."""
    messages = [{"role": "system", "content": SYSTEM}]
    for asked, said in turns():
        messages += [{"role": "user", "content": asked}, {"role": "assistant", "content": said}]
    messages.append({"role": "user", "content": "And O-1042?"})
    if size is not None:
        short = size - len(json.dumps({"model": "gpt-4o-mini", "messages": messages}).encode())
        messages[-1]["content"] += " " + "x" * (short - 1)
    answer = {"role": "assistant", "content": ANSWER}
    return {"model": "gpt-4o-mini", "messages": messages}, {
        "id": "chatcmpl-Bx1AbC9dEf2GhI3jKl4MnO5pQr",
        "object": "chat.completion",
        "model": "gpt-4o-mini",
        "choices": [{"index": 0, "message": answer, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 420, "completion_tokens": 7, "total_tokens": 427},
    }


def gemini_call() -> tuple[dict, dict]:
    contents = []
    for asked, said in turns():
        contents += [
            {"role": "user", "parts": [{"text": asked}]},
            {"role": "model", "parts": [{"text": said}]},
        ]
    contents.append({"role": "user", "parts": [{"text": "And O-1042?"}]})
    request = {"contents": contents, "systemInstruction": {"parts": [{"text": SYSTEM}]}}
    candidate = {
        "content": {"role": "model", "parts": [{"text": ANSWER}]},
        "finishReason": "STOP",
        "index": 0,
    }
    usage = {"promptTokenCount": 420, "candidatesTokenCount": 7, "totalTokenCount": 427}
    return request, {"candidates": [candidate], "usageMetadata": usage, "modelVersion": "gemini-2.5-flash"}


def bedrock_call() -> tuple[dict, dict]:
    messages = []
    for asked, said in turns():
        messages += [
            {"role": "user", "content": [{"text": asked}]},
            {"role": "assistant", "content": [{"text": said}]},
        ]
    messages.append({"role": "user", "content": [{"text": "And O-1042?"}]})
    request = {"messages": messages, "system": [{"text": SYSTEM}]}
    answer = {"output": {"message": {"role": "assistant", "content": [{"text": ANSWER}]}}}
    usage = {"inputTokens": 420, "outputTokens": 7, "totalTokens": 427}
    return request, {**answer, "stopReason": "end_turn", "usage": usage, "metrics": {"latencyMs": 412}}


def build(workdir: Path, provider: str, path: str, call: tuple[dict, dict]) -> LoadedFixture:
    request, response = call
    raw = Exchange("POST", path, "", json.dumps(request).encode(), 200, [("content-type", JSON)], b"")
    exchange = Exchange(**{**raw.__dict__, "response_body": json.dumps(response).encode()})
    interaction = Templater(NO_SECRETS).record(exchange, provider)
    doc = fx.new_fixture(provider, fx.new_source(["python", "agent.py"]), [interaction])
    target = fx.fixture_path(provider, workdir)
    fx.atomic_write(target, fx.dumps(doc))
    return load(target, NO_SECRETS)


def per_request(loaded: LoadedFixture, provider: str, path: str, raw: bytes) -> float:
    """Seconds per hit over BATCH requests: body parse + request key + index lookup."""
    sessions = [Session([loaded], "strict") for _ in range(BATCH)]

    def work() -> None:
        for session in sessions:
            rk = request_key(provider, "POST", path, "", parse_body(raw, JSON), NO_SECRETS)
            if not isinstance(session.lookup(rk.key, rk.hashes, rk.model, f"POST {path}"), Recording):
                raise AssertionError(f"the {provider} request missed")

    return cpu_timed(work) / BATCH


_NAMES = {"gemini": "Gemini generateContent", "bedrock": "Bedrock Converse"}


def body_size(call: tuple[dict, dict]) -> int:
    return len(json.dumps(call[0]).encode())


def run(workdir: Path, quick: bool = False) -> list[Row]:
    runs = 3 if quick else 9
    cases = {
        "openai": ("openai", OPENAI_PATH, openai_call()),
        "gemini": ("gemini", GEMINI_PATH, gemini_call()),
        "bedrock": ("bedrock", BEDROCK_PATH, bedrock_call()),
    }
    for name in _NAMES:  # the baseline of each: an OpenAI call of its size
        cases[f"openai-{name}"] = ("openai", OPENAI_PATH, openai_call(body_size(cases[name][2])))
        assert body_size(cases[f"openai-{name}"][2]) == body_size(cases[name][2])
    samples: dict[str, list[float]] = {name: [] for name in cases}
    loaded = {}
    for name, (provider, path, call) in cases.items():
        (workdir / name).mkdir()
        loaded[name] = build(workdir / name, provider, path, call)
    for _ in range(runs):  # interleaved, so machine noise hits them alike
        for name, (provider, path, (request, _)) in cases.items():
            samples[name].append(per_request(loaded[name], provider, path, json.dumps(request).encode()))
    rows = []
    for name, title in _NAMES.items():
        measured, same_size, same_text = (median(samples[n]) for n in (name, f"openai-{name}", "openai"))
        size = body_size(cases[name][2])
        rows.append(
            Row(
                "providers",
                f"{title} hit ({TURNS} turns, {size} bytes), key + lookup; baseline: an OpenAI chat call of "
                "as many bytes",
                ms(measured),
                ms(same_size),
                ratio(measured, same_size),
                f"≤ {TARGET}x",
                measured <= TARGET * same_size,
            )
        )
        rows.append(
            Row(
                "providers",
                f"{title} hit; baseline: the same conversation as an OpenAI chat call "
                f"({body_size(cases['openai'][2])} bytes)",
                ms(measured),
                ms(same_text),
                ratio(measured, same_text),
            )
        )
    return rows
