"""Replayed ids are valid ids of the provider's shape, the same every run, and match back when sent."""

from __future__ import annotations

import json
import re
from pathlib import Path

import anthropic
import openai
from attest_toolkit.fixtures import document as fx
from attest_toolkit.replay.server import Engine
from conftest import chat_request, chat_response, clean_env, exchange, write_fixture
from upstream import FakeUpstream, Reply

KEY = "sk-ant-test-" + "k" * 40
ANTHROPIC_ID = re.compile(r"^[a-zA-Z0-9_-]+$")  # what Anthropic accepts as a tool_use id
TOOL = {"name": "get_weather", "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}
ASK = {
    "model": "claude-sonnet-4-6",
    "max_tokens": 256,
    "tools": [TOOL],
    "messages": [{"role": "user", "content": "Weather in Paris?"}],
}


def tool_use_reply() -> dict:
    return {
        "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-6-20250929",
        "content": [
            {"type": "tool_use", "id": "toolu_01A09q90qw90lq917835lq9E", "name": "get_weather", "input": {}}
        ],
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }


def answer_reply(text: str) -> dict:
    reply = tool_use_reply()
    reply.update(id="msg_01Hq6qsxmHMhS8UNnjwJvhXQ", content=[{"type": "text", "text": text}])
    reply["stop_reason"] = "end_turn"
    return reply


def follow_up(tool_id: str) -> dict:
    history = [
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": tool_id, "name": "get_weather", "input": {}}],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool_id, "content": "sunny"}]},
    ]
    return {**ASK, "messages": ASK["messages"] + history}


def anthropic_fixture(fixtures_dir: Path, *, with_answer: bool = True) -> Path:
    exchanges = [exchange(ASK, tool_use_reply(), path="/v1/messages")]
    if with_answer:
        exchanges.append(
            exchange(follow_up("toolu_01A09q90qw90lq917835lq9E"), answer_reply("Sunny."), path="/v1/messages")
        )
    return write_fixture(fixtures_dir, "t", exchanges, provider="anthropic")


def client(env: dict[str, str], key: str | None = None) -> anthropic.Anthropic:
    return anthropic.Anthropic(
        base_url=env["ANTHROPIC_BASE_URL"], api_key=key or env["ANTHROPIC_API_KEY"], max_retries=0
    )


def test_a_replayed_tool_id_is_a_valid_anthropic_id_and_matches_back(fixtures_dir):
    path = anthropic_fixture(fixtures_dir)
    stored = json.loads(path.read_text())["channels"]["model"][0]["response"]["body"]["json"]
    assert re.fullmatch(r"toolu_\{\{id_[0-9]+\}\}", stored["content"][0]["id"])  # the fixture keeps it
    with Engine(clean_env()) as engine:
        sid, env = engine.open_session([path], "strict")
        first = client(env).messages.create(**ASK)
        tool_id = first.content[0].id
        assert re.fullmatch(r"toolu_01[0-9A-Za-z]{22}", tool_id) and ANTHROPIC_ID.match(tool_id)
        assert re.fullmatch(r"msg_01[0-9A-Za-z]{22}", first.id)
        second = client(env).messages.create(**follow_up(tool_id))
        assert second.content[0].text == "Sunny."
        summary = engine.close_session(sid)
    assert (summary["replayed"], summary["misses"]) == (2, 0)
    with Engine(clean_env()) as engine:  # the same id on every run
        _, env = engine.open_session([path], "strict")
        assert client(env).messages.create(**ASK).content[0].id == tool_id


def test_a_live_call_after_replayed_turns_sends_the_valid_id(fixtures_dir):
    path = anthropic_fixture(fixtures_dir, with_answer=False)
    live = json.dumps(answer_reply("Live and sunny.")).encode()
    with FakeUpstream([Reply(body=live)]) as upstream:
        env = clean_env(ANTHROPIC_API_KEY=KEY, ATTEST_ANTHROPIC_UPSTREAM=upstream.url)
        with Engine(env) as engine:
            sid, session = engine.open_session([path], "auto")
            tool_id = client(session, KEY).messages.create(**ASK).content[0].id
            assert (
                client(session, KEY).messages.create(**follow_up(tool_id)).content[0].text
                == "Live and sunny."
            )
            summary = engine.close_session(sid)
    assert (summary["replayed"], summary["live"]) == (1, 1)
    sent = json.loads(upstream.requests[0].body)
    assert sent["messages"][1]["content"][0]["id"] == tool_id
    assert "{{" not in upstream.requests[0].body.decode()


def test_openai_ids_have_openai_shapes(fixtures_dir):
    call = {
        "id": "call_Ab3dEf6hIj9kLm2nOp5qRs8t",
        "type": "function",
        "function": {"name": "f", "arguments": "{}"},
    }
    responses_reply = {
        "id": "resp_" + "0a5e" * 12 + "9f",
        "object": "response",
        "output": [],
        "status": "completed",
    }
    path = write_fixture(
        fixtures_dir,
        "t",
        [
            exchange(chat_request(), chat_response(tool_calls=[call])),
            exchange({"model": "gpt-4.1", "input": "hi"}, responses_reply, path="/v1/responses"),
        ],
    )
    doc = fx.read_fixture(path)
    assert re.fullmatch(
        r"chatcmpl-\{\{id_[0-9]+\}\}", fx.model_interactions(doc)[0]["response"]["body"]["json"]["id"]
    )
    with Engine(clean_env()) as engine:
        _, env = engine.open_session([path], "strict")
        sdk = openai.OpenAI(base_url=env["OPENAI_BASE_URL"], api_key="x", max_retries=0)
        chat = sdk.chat.completions.create(**chat_request())
        response = sdk.responses.create(model="gpt-4.1", input="hi")
    assert re.fullmatch(r"chatcmpl-[0-9A-Za-z]{29}", chat.id)
    assert re.fullmatch(r"call_[0-9A-Za-z]{24}", chat.choices[0].message.tool_calls[0].id)
    assert re.fullmatch(r"resp_[0-9a-f]{50}", response.id)
