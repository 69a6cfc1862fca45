"""Volatile values: what is templated, and how a live request still matches its recording."""

from __future__ import annotations

import copy
import json
import random
import string
from typing import Any

import pytest
from attest_toolkit.credentials.scan import Secrets
from attest_toolkit.normalize import Exchange, Templater, describe_components, key_of, request_key
from attest_toolkit.normalize.served import Served
from attest_toolkit.normalize.volatile import Numbering
from conftest import needs_shared
from normalize_cassettes import exchanges, request_json

NO_SECRETS = Secrets.of([])


_RNG = random.Random(1042)


def fresh_tail(length: int = 24) -> str:
    """A new random id tail the way providers make them: letters and digits, both present."""
    tail = "".join(_RNG.choice(string.ascii_letters + string.digits) for _ in range(length - 2))
    return tail + "a7"


def key(path: str, body: dict[str, Any]) -> str:
    return request_key("openai", "POST", path, "", {"json": body}, NO_SECRETS).key


def stored_key(interaction: dict[str, Any]) -> str:
    return key_of(interaction["method"], interaction["path"], interaction["hashes"])


def record_run(name: str) -> list[dict[str, Any]]:
    templater = Templater(NO_SECRETS)
    return [templater.record(exchange) for exchange in exchanges(name)]


def templated(text: str) -> str:
    return Numbering(renumber=False).apply(text)


# --- what counts as volatile ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("call_ZR5UUuTt3pf61kjwAJIYdVMj", "call_{{id_1}}"),
        ("chatcmpl-Dx0XpqH8w09uBXwq1zFGYdETjtnEl", "chatcmpl-{{id_1}}"),
        ("chatcmpl-1796410275002", "chatcmpl-{{id_1}}"),  # OpenAI-compatible servers: digits only
        ("cmpl-417", "cmpl-{{id_1}}"),
        ("resp_08ddf351751647d60169fab1b8a7ac81a081b9e2400e87fb63", "resp_{{id_1}}"),
        ("fc_05c01d5dceb461c50169fab1bc6a208196a8f7957526d1ef99", "fc_{{id_1}}"),
        ("msg_01XMATm4UFnjP841TckVuNF4", "msg_{{id_1}}"),
        ("toolu_01LtHJmixrs9NcWQkK8hu8hj", "toolu_{{id_1}}"),
        ("srvtoolu_01LtHJmixrs9NcWQkK8hu8hj", "srvtoolu_{{id_1}}"),
        ("req_011CYEXg9iLMo4YhB4XfkXBw", "req_{{id_1}}"),
        ("req_c6713bbdac8d4639a5ea09cb6c5eb5a9", "req_{{id_1}}"),
        ("session b320df16-c763-4455-b901-3f7d54e9a012 open", "session {{id_1}} open"),
        ("at 2025-09-29T16:55:10.367Z, then 2026-07-18 20:59:26", "at {{ts_1}}, then {{ts_2}}"),
        ("mail ana.lopez+refunds@example.co.uk now", "mail {{email_1}} now"),
    ],
)
def test_provider_ids_uuids_timestamps_and_emails_are_templated(raw: str, expected: str) -> None:
    assert templated(raw) == expected


@pytest.mark.parametrize(
    "text",
    [
        "Refund order O-1042 twice",  # an order number
        "ORDER-2024-000123 and INV_88812",
        "run_tests_everything and file-name.txt",  # known prefixes, but words after them
        "call_abc123",  # too short to be random
        "call_abcdefghijklmnopqrstuv",  # letters only: a word, not an id
        "msg_0123456789012345678",  # digits only
        "fp_d0469e1700",  # a system fingerprint, short
        "Today's date: 2026-01-20",  # a date without a time
        "x_call_ZR5UUuTt3pf61kjwAJIYdVMj",  # a prefix inside a longer word
        "a123e4567-e89b-12d3-a456-426614174000",  # not a UUID on its own
        "user @ host and @mention",
    ],
)
def test_ordinary_values_are_not_templated(text: str) -> None:
    assert templated(text) == text


def response_exchange(body: dict[str, Any] | str, content_type: str = "application/json") -> Exchange:
    raw = body if isinstance(body, str) else json.dumps(body)
    return Exchange(
        "POST", "/v1/chat/completions", "", b"{}", 200, [("content-type", content_type)], raw.encode()
    )


NUMBERS = {
    "created": 1764569740,
    "expires_at": 1764573340,
    "usage": {"prompt_tokens": 1764569740, "completion_tokens": 5, "cost": 1764569740.5},
    "choices": [{"index": 0, "price_cents": 1764569740, "created": 17645}],
    "created_at": True,
}


def test_numbers_other_than_timestamps_by_key_are_never_templated() -> None:
    stored = Templater(NO_SECRETS).record(response_exchange(NUMBERS))["response"]["body"]["json"]
    # A Unix time under a key that names a time is templated, apart from the numbers around it ...
    assert (stored["created"], stored["expires_at"]) == ("{{epoch_1}}", "{{epoch_2}}")
    # ... a token count, a price, an index, a small number under a time's key, a boolean never are.
    assert {k: v for k, v in stored.items() if k not in ("created", "expires_at")} == {
        k: v for k, v in NUMBERS.items() if k not in ("created", "expires_at")
    }


def test_streamed_timestamps_are_templated_as_strings_and_served_as_the_same_numbers() -> None:
    chunk = 'data: {"id":"chatcmpl-Cq7Wd2Hk9Lm3Np5Rs8Tv1Xy4Za","created":%d,"usage":{"total_tokens":1764569740}}\n\n'
    events = chunk % 1764569740 + chunk % 1764569740 + "data: [DONE]\n\n"
    templater = Templater(NO_SECRETS)
    first = templater.record(response_exchange(events, "text/event-stream"))["response"]["body"]["sse"]
    assert first[0] == first[1]  # one response, one second: one placeholder
    assert '"created":"{{epoch_1}}"' in first[0] and '"total_tokens":1764569740' in first[0]
    # The next answer, made in the same second, still gets its own: a re-record a second apart matches.
    second = templater.record(response_exchange(chunk % 1764569740, "text/event-stream"))
    assert '"created":"{{epoch_2}}"' in second["response"]["body"]["sse"][0]

    # Served as a number (clients parse `created` as an int), the same one by every engine, every run.
    payload = json.loads(Served().serve(first[0]).removeprefix("data: "))
    assert type(payload["created"]) is int
    assert payload["created"] == json.loads(Served().serve(first[1]).removeprefix("data: "))["created"]
    assert payload["created"] == 1735689601  # 2025-01-01T00:00:01Z, as `{{ts_1}}` is served


@needs_shared
def test_an_order_number_in_the_request_must_match_the_recording() -> None:
    body = request_json("openai/chat_basic_nonstream", 0)
    body["messages"][-1]["content"] = "Refund order O-1042"
    stored = Templater(NO_SECRETS).record(
        Exchange("POST", "/v1/chat/completions", "", json.dumps(body).encode(), 200, [], b"{}")
    )
    assert stored["request"]["json"]["messages"][-1]["content"] == "Refund order O-1042"
    assert key("/v1/chat/completions", body) == stored_key(stored)
    changed = copy.deepcopy(body)
    changed["messages"][-1]["content"] = "Refund order O-1043"
    assert key("/v1/chat/completions", changed) != stored_key(stored)


# --- fresh ids and echoed placeholders match ------------------------------------------------------


@needs_shared
def test_an_id_generated_fresh_matches_the_stored_placeholder() -> None:
    recorded = record_run("openai/chat_tools_chain_nonstream_gzip")
    live = request_json("openai/chat_tools_chain_nonstream_gzip", 2)
    for message in live["messages"]:
        for call in message.get("tool_calls", []):
            new = "call_" + fresh_tail(len(call["id"]) - 5)
            for other in live["messages"]:
                if other.get("tool_call_id") == call["id"]:
                    other["tool_call_id"] = new
            call["id"] = new
    assert "call_TTY8UFNo7rNCaOBUNtlRSvMG" not in json.dumps(live)
    assert key("/v1/chat/completions", live) == stored_key(recorded[2])


@needs_shared
def test_an_echoed_placeholder_matches() -> None:
    recorded = record_run("anthropic/messages_tool_use_roundtrip_nonstream")
    # What the agent sends after a replay: the tool_use id it was served, placeholder and all.
    served = recorded[0]["response"]["body"]["json"]
    tool_use = next(block for block in served["content"] if block["type"] == "tool_use")
    assert tool_use["id"].startswith("toolu_{{id_")
    live = request_json("anthropic/messages_tool_use_roundtrip_nonstream", 1)
    raw_id = live["messages"][1]["content"][-1]["id"]
    echoed = json.loads(json.dumps(live).replace(raw_id, tool_use["id"]))
    assert key("/v1/messages", echoed) == stored_key(recorded[1])


def test_two_ids_cannot_swap_places() -> None:
    a, b = "call_" + fresh_tail(24), "call_" + fresh_tail(26)
    first = {"model": "m", "messages": [{"role": "user", "content": f"{a} {b} {a}"}]}
    second = {"model": "m", "messages": [{"role": "user", "content": f"{a} {b} {b}"}]}
    assert key("/v1/chat/completions", first) != key("/v1/chat/completions", second)


def test_placeholders_are_renumbered_by_first_occurrence() -> None:
    body = {
        "model": "m",
        "messages": [{"role": "user", "content": "call_{{id_9}} then {{ts_4}} then call_{{id_3}}"}],
    }
    got = describe_components("openai", "POST", "/v1/chat/completions", "", {"json": body}, NO_SECRETS)
    assert got["messages"][0]["content"] == "call_{{id_1}} then {{ts_1}} then call_{{id_2}}"


def test_an_id_in_the_path_is_matched_like_one_in_the_body() -> None:
    hashes = request_key("openai", "GET", "/v1/responses/resp_ab12", "", {}, NO_SECRETS).hashes
    fresh = "/v1/responses/resp_" + fresh_tail(50)
    echoed = "/v1/responses/resp_%7B%7Bid_4%7D%7D"  # the SDK percent-encodes the placeholder it was served
    assert (
        key_of("GET", fresh, hashes)
        == key_of("GET", echoed, hashes)
        == key_of("GET", "/v1/responses/resp_{{id_1}}", hashes)
    )


# --- tool results are compared literally ----------------------------------------------------------


@needs_shared
def test_a_different_id_inside_a_tool_result_is_a_miss() -> None:
    stored_id, other_id = "msg_" + fresh_tail(24), "msg_" + fresh_tail(22)
    body = request_json("anthropic/messages_tool_use_roundtrip_nonstream", 1)
    body["messages"][-1]["content"][0]["content"] = f"sent as {stored_id}"
    recorded = Templater(NO_SECRETS).record(
        Exchange("POST", "/v1/messages", "", json.dumps(body).encode(), 200, [], b"{}")
    )
    assert recorded["request"]["json"]["messages"][-1]["content"][0]["content"] == f"sent as {stored_id}"
    assert key("/v1/messages", body) == stored_key(recorded)
    live = copy.deepcopy(body)
    live["messages"][-1]["content"][0]["content"] = f"sent as {other_id}"
    assert key("/v1/messages", live) != stored_key(recorded)
    # The tool_use_id outside the contents is still an id: a fresh one matches.
    live = copy.deepcopy(body)
    live["messages"][-1]["content"][0]["tool_use_id"] = "toolu_" + fresh_tail(24)
    live["messages"][1]["content"][-1]["id"] = live["messages"][-1]["content"][0]["tool_use_id"]
    assert key("/v1/messages", live) == stored_key(recorded)


@needs_shared
@pytest.mark.parametrize(
    ("path", "name", "index", "locate"),
    [
        (
            "/v1/chat/completions",
            "openai/chat_tools_nonstream_parsed",
            1,
            lambda b: (b["messages"][-1], "content"),
        ),
        (
            "/v1/responses",
            "openai/responses_tool_call_nonstream_parsed",
            1,
            lambda b: (b["input"][-1], "output"),
        ),
    ],
    ids=["chat-role-tool", "responses-function-call-output"],
)
def test_openai_tool_outputs_are_compared_literally(path: str, name: str, index: int, locate: Any) -> None:
    body = request_json(name, index)
    node, field = locate(body)
    node[field] = "ticket 3f2b8c1e-5d4a-4e6f-9a7b-2c1d0e9f8a7b created at 2025-01-02T03:04:05Z"
    other = copy.deepcopy(body)
    node, field = locate(other)
    node[field] = "ticket 0b7e9d2a-1c3f-4a5b-8d6e-7f8091a2b3c4 created at 2025-01-02T03:04:05Z"
    assert key(path, body) != key(path, other)
    # The same change outside a tool result is templated away.
    body["metadata_note"], other["metadata_note"] = (
        "3f2b8c1e-5d4a-4e6f-9a7b-2c1d0e9f8a7b",
        "0b7e9d2a-1c3f-4a5b-8d6e-7f8091a2b3c4",
    )
    node, field = locate(body)
    node[field] = "same"
    node, field = locate(other)
    node[field] = "same"
    assert key(path, body) == key(path, other)


def test_tool_results_sent_to_count_tokens_are_compared_literally_too() -> None:
    def body(ticket: str) -> dict[str, Any]:
        return {
            "model": "claude-haiku-4-5",
            "messages": [
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": ticket}]}
            ],
        }

    first = body("ticket 3f2b8c1e-5d4a-4e6f-9a7b-2c1d0e9f8a7b")
    second = body("ticket 0b7e9d2a-1c3f-4a5b-8d6e-7f8091a2b3c4")
    assert key("/v1/messages/count_tokens", first) != key("/v1/messages/count_tokens", second)
