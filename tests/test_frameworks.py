"""The agent frameworks people use, each as its users write it: captured once against a scripted
provider, then replayed strict with no key and the provider gone (same answer, 0 live calls), and a
changed system prompt misses naming it."""

from __future__ import annotations

import json
import sys

import pytest
from capture_helpers import KEY, run_attest
from conftest import AGENTS, chat_response, clean_env
from upstream import FakeUpstream, Reply

ANSWER = "It is sunny in Paris."
TOOL_CALL = {
    "id": "call_Ab3dEf6hIj9kLm2nOp5qRs8t",
    "type": "function",
    "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
}
# What each framework's users need in their environment (see the README's "Your framework").
FRAMEWORK_ENV = {"OPENAI_AGENTS_DISABLE_TRACING": "1", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}


def responses_reply(ident: str, output: list) -> dict:
    return {
        "id": ident,
        "object": "response",
        "created_at": 1764569740,
        "status": "completed",
        "model": "gpt-4o-mini-2024-07-18",
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": {
            "input_tokens": 20,
            "output_tokens": 5,
            "total_tokens": 25,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        },
    }


def chat_round_trip() -> list[dict]:
    return [
        chat_response(tool_calls=[TOOL_CALL]),
        chat_response(ANSWER, ident="chatcmpl-Cy2BcD0eFg3HiJ4kLm5NoP6qRs"),
    ]


def agents_round_trip() -> list[dict]:
    call = {
        "type": "function_call",
        "id": "fc_" + "0a5e" * 12 + "9f",
        "call_id": "call_Ab3dEf6hIj9kLm2nOp5qRs8t",
        "name": "get_weather",
        "arguments": '{"city":"Paris"}',
        "status": "completed",
    }
    message = {
        "type": "message",
        "id": "msg_" + "0b6f" * 12 + "8e",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": ANSWER, "annotations": []}],
    }
    return [
        responses_reply("resp_" + "0c7a" * 12 + "7d", [call]),
        responses_reply("resp_" + "0d8b" * 12 + "6c", [message]),
    ]


def instructor_reply() -> list[dict]:
    call = {**TOOL_CALL, "function": {"name": "Weather", "arguments": '{"city":"Paris","summary":"sunny"}'}}
    return [chat_response(tool_calls=[call])]


SCRIPTS = {
    "pydantic_ai": (agents_round_trip, ANSWER),  # pydantic-ai's `openai:` models use the Responses API
    "langchain": (chat_round_trip, ANSWER),
    "litellm": (chat_round_trip, ANSWER),
    "openai_agents": (agents_round_trip, ANSWER),
    "instructor": (instructor_reply, "Paris: sunny"),
}


def agent(framework: str, *args: str) -> list[str]:
    return ["--", sys.executable, str(AGENTS / "frameworks.py"), framework, *args]


@pytest.mark.parametrize("framework", sorted(SCRIPTS))
def test_a_framework_captures_and_replays_strict(framework, fixtures_dir):
    replies, answer = SCRIPTS[framework]
    where = ["--name", framework, "--fixtures-dir", str(fixtures_dir)]
    scripted = [Reply(body=json.dumps(r).encode()) for r in replies()]
    with FakeUpstream(scripted) as provider:
        env = clean_env(OPENAI_API_KEY=KEY, ATTEST_OPENAI_UPSTREAM=provider.url, **FRAMEWORK_ENV)
        captured = run_attest("capture", *where, *agent(framework), env=env, cwd=fixtures_dir.parent)
    assert captured.returncode == 0, captured.stderr
    assert captured.stdout.splitlines()[0] == answer
    assert len(provider.requests) == len(replies())

    # No key, the provider gone: the same answer from the recording alone.
    env = clean_env(CI="true", **FRAMEWORK_ENV)
    replayed = run_attest("replay", *where, *agent(framework), env=env, cwd=fixtures_dir.parent)
    assert replayed.returncode == 0, replayed.stderr
    calls = len(replies())
    assert replayed.stdout.splitlines() == [
        answer,
        f"attest replay: {calls} replayed · 0 live model calls · $0.00",
    ]

    changed = run_attest(
        "replay", *where, *agent(framework, "You are a pirate."), env=env, cwd=fixtures_dir.parent
    )
    assert changed.returncode != 0
    assert "replay miss: system prompt changed" in changed.stderr
