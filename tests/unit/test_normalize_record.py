"""Capture-side templating: a run's exchanges become fixture interactions the SDKs still read."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from anthropic.types import Message, RawMessageStreamEvent
from attest_toolkit.credentials.scan import REDACTED, Secrets
from attest_toolkit.fixtures import document as fx
from attest_toolkit.normalize import Exchange, Templater, endpoint_kind, split_sse, timestamps
from conftest import chat_request, exchange, needs_shared, sse_exchange
from normalize_cassettes import IDS, exchanges
from openai.types import CreateEmbeddingResponse
from openai.types.chat import ChatCompletion, ChatCompletionChunk
from openai.types.responses import Response, ResponseStreamEvent
from pydantic import BaseModel, TypeAdapter, ValidationError

NO_SECRETS = Secrets.of([])
RAW_ID = re.compile(r"\b(?:chatcmpl-|call_|resp_|msg_|fc_|toolu_|req_)[A-Za-z0-9]{16,}")


def record_run(name: str, secrets: Secrets = NO_SECRETS) -> list[dict[str, Any]]:
    templater = Templater(secrets)
    return [templater.record(exchange) for exchange in exchanges(name)]


def sse_data(events: list[str]) -> list[dict[str, Any]]:
    found = []
    for event in events:
        for line in event.splitlines():
            if line.startswith("data:") and line[5:].strip() not in ("", "[DONE]"):
                found.append(json.loads(line[5:]))
    return found


# --- one numbering for the whole run --------------------------------------------------------------


@needs_shared
def test_a_response_id_echoed_in_the_next_request_gets_the_same_placeholder() -> None:
    first, second = record_run("openai/responses_tool_use_stream")
    added = next(
        d for d in sse_data(first["response"]["body"]["sse"]) if d["type"] == "response.output_item.added"
    )
    call_id = added["item"]["call_id"]
    assert re.fullmatch(r"call_\{\{id_[0-9]+\}\}", call_id)
    sent_back = [item for item in second["request"]["json"]["input"] if item.get("call_id")]
    assert [item["call_id"] for item in sent_back] == [call_id, call_id]
    # Each distinct recorded value has its own number: the second response's id is a new one.
    second_id = sse_data(second["response"]["body"]["sse"])[0]["response"]["id"]
    assert second_id != sse_data(first["response"]["body"]["sse"])[0]["response"]["id"]


@needs_shared
def test_numbering_is_consistent_across_a_three_call_chat_run() -> None:
    runs = record_run("openai/chat_tools_chain_nonstream_gzip")
    served = [run["response"]["body"]["json"]["choices"][0]["message"].get("tool_calls") for run in runs]
    first_call, second_call = served[0][0]["id"], served[1][0]["id"]
    assert first_call != second_call
    last_request = runs[2]["request"]["json"]["messages"]
    assert [m.get("tool_call_id") for m in last_request if m["role"] == "tool"] == [first_call, second_call]
    assert [m["tool_calls"][0]["id"] for m in last_request if m.get("tool_calls")] == [
        first_call,
        second_call,
    ]


@needs_shared
def test_anthropic_tool_use_ids_are_shared_between_response_and_next_request() -> None:
    first, second = record_run("anthropic/messages_parallel_tool_use_nonstream_parsed")
    served = [
        block["id"] for block in first["response"]["body"]["json"]["content"] if block["type"] == "tool_use"
    ]
    assert len(set(served)) == 4
    results = [block["tool_use_id"] for block in second["request"]["json"]["messages"][-1]["content"]]
    assert results == served


# --- what is stored ------------------------------------------------------------------------------


@needs_shared
@pytest.mark.parametrize("name", IDS)
def test_a_recorded_run_is_a_valid_fixture_without_raw_ids(name: str, tmp_path: Path) -> None:
    doc = fx.new_fixture("run", fx.new_source(["python", "agent.py"]), record_run(name))
    path = fx.write_fixture(tmp_path / "run.attest.json", doc, NO_SECRETS)
    text = path.read_text(encoding="utf-8")
    assert fx.read_fixture(path, NO_SECRETS)["channels"]["model"] == doc["channels"]["model"]
    assert RAW_ID.findall(text) == []


@needs_shared
def test_every_header_the_provider_sent_is_kept_but_the_transports_and_cookies() -> None:
    raw = exchanges("anthropic/messages_tool_use_stream_gzip")[0].response_headers
    stored = record_run("anthropic/messages_tool_use_stream_gzip")[0]["response"]["headers"]
    dropped = {"connection", "content-encoding", "transfer-encoding", "set-cookie"}
    assert list(stored) == [name.lower() for name, _ in raw if name.lower() not in dropped]
    assert stored["content-type"] == "text/event-stream; charset=utf-8"
    assert stored["anthropic-ratelimit-tokens-remaining"] == "4800000"
    assert stored["date"] == "Sun, 05 Apr 2026 10:23:56 GMT"
    assert re.fullmatch(r"req_\{\{id_[0-9]+\}\}", stored["request-id"])  # templated as ids in bodies are


def test_a_header_that_holds_a_key_or_sets_a_cookie_is_dropped() -> None:
    key = "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0" * 3
    headers = [
        ("Content-Type", "application/json"),
        ("X-Echoed", f"Bearer {key}"),
        ("X-Api-Key", "anything"),
        ("Set-Cookie", "__cf_bm=abc; path=/"),
        ("X-Ratelimit-Remaining-Tokens", "149999981"),
    ]
    exchange = Exchange("POST", "/v1/chat/completions", "", b"{}", 200, headers, b"{}")
    stored = Templater(NO_SECRETS).record(exchange)["response"]["headers"]
    assert stored == {"content-type": "application/json", "x-ratelimit-remaining-tokens": "149999981"}


def test_tool_result_contents_are_stored_literally() -> None:
    uuid = "3f2b8c1e-5d4a-4e6f-9a7b-2c1d0e9f8a7b"
    body = {
        "model": "claude-haiku-4-5",
        "max_tokens": 100,
        "messages": [
            {"role": "user", "content": f"Look up ticket {uuid}"},
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_01LtHJmixrs9NcWQkK8hu8hj", "content": uuid}
                ],
            },
        ],
    }
    exchange = Exchange("POST", "/v1/messages", "", json.dumps(body).encode(), 200, [], b"{}")
    stored = Templater(NO_SECRETS).record(exchange)["request"]["json"]["messages"]
    assert stored[0]["content"] == "Look up ticket {{id_1}}"
    assert stored[1]["content"][0] == {
        "type": "tool_result",
        "tool_use_id": "toolu_{{id_2}}",
        "content": uuid,
    }


def test_secrets_are_redacted_everywhere_they_travel() -> None:
    env_value = "s3cr3t-from-dot-env-file"
    secrets = Secrets.of([env_value])
    request = {
        "model": "gpt-4o-mini",
        "messages": [{"role": "user", "content": f"my password is {env_value}"}],
        "api_key": "anything at all",
    }
    response = {"id": "chatcmpl-Bx1AbC9dEf2GhI3jKl4MnO5pQr", "echo": f"you said {env_value}"}
    exchange = Exchange(
        "POST",
        "/v1/chat/completions",
        f"token=abc&trace={env_value}",
        json.dumps(request).encode(),
        200,
        [("Content-Type", "application/json"), ("x-request-id", env_value), ("Set-Cookie", "a=b")],
        json.dumps(response).encode(),
    )
    stored = Templater(secrets).record(exchange)
    assert env_value not in json.dumps(stored)
    assert stored["query"] == f"trace={REDACTED}"
    assert stored["request"]["json"]["api_key"] == REDACTED
    assert stored["response"]["headers"] == {"content-type": "application/json"}  # the id held the value
    assert fx.find_credential(stored, secrets) is None


# --- the SDKs still read templated responses -------------------------------------------------------

JSON_MODELS: dict[tuple[str, str], type[BaseModel]] = {
    ("openai", "chat"): ChatCompletion,
    ("openai", "responses"): Response,
    ("openai", "other"): CreateEmbeddingResponse,
    ("anthropic", "messages"): Message,
}
EVENT_ADAPTERS: dict[tuple[str, str], TypeAdapter[Any]] = {
    ("openai", "chat"): TypeAdapter(ChatCompletionChunk),
    ("openai", "responses"): TypeAdapter(ResponseStreamEvent),
    ("anthropic", "messages"): TypeAdapter(RawMessageStreamEvent),
}


def _validates(check: Any, value: Any) -> bool:
    try:
        check(value)
    except ValidationError:
        return False
    return True


def as_served(stored: Any) -> Any:
    """A stored JSON body with its templated timestamps as replay serves them: numbers again (the SDKs
    parse `created` as an int); id placeholders are left as they are, opaque ids to the SDKs."""
    return json.loads(timestamps.serve(json.dumps(stored)))


def _bodies(name: str) -> list[tuple[tuple[str, str], Any, Any]]:
    """(endpoint, raw body, templated body as served) per JSON response and streamed event, status 200."""
    found = []
    for raw, stored in zip(exchanges(name), record_run(name), strict=True):
        if stored["response"]["status"] != 200:
            continue
        kind = (stored["provider"], endpoint_kind(stored["path"]))
        body = stored["response"]["body"]
        if "json" in body:
            found.append((kind, json.loads(raw.response_body), as_served(body["json"])))
        else:
            raw_events = sse_data(split_sse(raw.response_body.decode("utf-8")))
            served = [as_served(event) for event in sse_data(body["sse"])]
            found.extend((kind, r, t) for r, t in zip(raw_events, served, strict=True))
    return found


@needs_shared
@pytest.mark.parametrize("name", IDS)
def test_templated_responses_parse_in_the_official_sdk_models_wherever_the_recorded_ones_do(
    name: str,
) -> None:
    """Placeholders are opaque ids to the SDKs: templating never turns a valid response invalid.

    (Some recordings predate fields the installed SDKs now require, or carry events such as Anthropic's
    `ping` that no model class describes; the SDKs' own clients read those leniently.)
    """
    for kind, raw, templated in _bodies(name):
        if isinstance(raw, dict) and (kind in JSON_MODELS or kind in EVENT_ADAPTERS):
            check = JSON_MODELS[kind].model_validate if "object" in raw and kind in JSON_MODELS else None
            check = check or (EVENT_ADAPTERS[kind].validate_python if kind in EVENT_ADAPTERS else None)
            if check is not None and _validates(check, raw):
                assert _validates(check, templated), f"{kind}: {json.dumps(templated)[:200]}"


@needs_shared
def test_core_responses_validate_strictly_after_templating() -> None:
    chat = as_served(record_run("openai/chat_tools_chain_nonstream_gzip")[0]["response"]["body"]["json"])
    completion = ChatCompletion.model_validate(chat)
    assert completion.id.startswith("chatcmpl-{{id_")
    assert completion.choices[0].message.tool_calls[0].id.startswith("call_{{id_")
    message = Message.model_validate(
        record_run("anthropic/messages_tool_use_roundtrip_nonstream")[0]["response"]["body"]["json"]
    )
    assert message.id.startswith("msg_{{id_")
    assert next(block.id for block in message.content if block.type == "tool_use").startswith("toolu_{{id_")
    events = sse_data(record_run("anthropic/messages_tool_use_stream")[0]["response"]["body"]["sse"])
    start = EVENT_ADAPTERS[("anthropic", "messages")].validate_python(events[0])
    assert start.message.id.startswith("msg_{{id_")
    chunks = [
        as_served(c)
        for c in sse_data(record_run("openai/chat_tool_call_stream")[0]["response"]["body"]["sse"])
    ]
    assert all(ChatCompletionChunk.model_validate(c).id.startswith("chatcmpl-{{id_") for c in chunks)


def test_a_response_templates_only_ids_and_timestamps_never_its_content():
    page = "Mail the@agent.instructions; run 123e4567-e89b-42d3-a456-426614174000 finished."
    url = "https://files.example.com/img/file-AbC9dEf2GhI3jKl4MnO5pQ.png?v=call_Ab3dEf6hIj9kLm2nOp5qRs8t"
    reply = {
        "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
        "created_at": "2025-09-12T10:00:00Z",
        "content": [
            {
                "type": "web_fetch_tool_result",
                "tool_use_id": "srvtoolu_01A09q90qw90lq917835lq9E",
                "text": page,
            },
            {"type": "image", "url": url},
            {
                "type": "text",
                "text": "Error: item rs_68c42de022c881948db7ed1cc2529f2e0202c9ad459e0d23 missing",
            },
        ],
    }
    events = [f"event: message_start\ndata: {json.dumps(reply)}\n\n"]
    templater = Templater(Secrets.of([]))
    for stored in (
        templater.record(exchange(chat_request(), reply))["response"]["body"]["json"],
        json.loads(templater.record(sse_exchange(chat_request(), events))["response"]["body"]["sse"][0][26:]),
    ):
        assert re.fullmatch(r"msg_\{\{id_\d+\}\}", stored["id"])
        assert re.fullmatch(r"\{\{ts_\d+\}\}", stored["created_at"])
        assert re.fullmatch(r"srvtoolu_\{\{id_\d+\}\}", stored["content"][0]["tool_use_id"])
        assert [stored["content"][0]["text"], stored["content"][1]["url"]] == [page, url]
        assert stored["content"][2] == reply["content"][2]


def test_a_re_record_that_differs_only_in_values_that_change_per_call_leaves_the_file(tmp_path: Path) -> None:
    from attest_toolkit.capture.run import unchanged

    def recorded(date: str, remaining: str, limit: str = "150000000") -> dict[str, Any]:
        headers = [
            ("Content-Type", "application/json"),
            ("Date", date),
            ("openai-processing-ms", remaining[-3:]),
            ("x-ratelimit-remaining-tokens", remaining),
            ("x-ratelimit-limit-tokens", limit),
            ("x-request-id", "req_63ac5fede8c02f2c750f1f46b39b8bdb"),
        ]
        exchange = Exchange("POST", "/v1/chat/completions", "", b"{}", 200, headers, b"{}")
        return fx.new_fixture(
            "t", fx.new_source(["python", "agent.py"]), [Templater(NO_SECRETS).record(exchange)]
        )

    path = fx.write_fixture(
        tmp_path / "t.attest.json", recorded("Tue, 04 Mar 2025 23:50:16 GMT", "149999981"), NO_SECRETS
    )
    assert unchanged(path, recorded("Fri, 04 Dec 2026 20:34:52 GMT", "149999976"))
    assert not unchanged(path, recorded("Fri, 04 Dec 2026 20:34:52 GMT", "149999976", limit="30000"))
