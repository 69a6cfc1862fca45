"""A request splits into system, messages, tools, params and model, each hashed on its own."""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Callable
from typing import Any

import pytest
from attest_toolkit.credentials.scan import REDACTED, Secrets
from attest_toolkit.normalize import (
    COMPONENTS,
    Templater,
    describe_components,
    key_of,
    parse_body,
    redact_query,
    request_key,
)
from conftest import needs_shared
from normalize_cassettes import IDS, exchanges, request_json

NO_SECRETS = Secrets.of([])
NULL_HASH = hashlib.sha256(b"null").hexdigest()


def components(path: str, body: Any, query: str = "") -> dict[str, Any]:
    return describe_components("openai", "POST", path, query, {"json": body}, NO_SECRETS)


def hashes(path: str, body: Any, query: str = "") -> dict[str, str]:
    return request_key("openai", "POST", path, query, {"json": body}, NO_SECRETS).hashes


# --- each provider's decomposition, on real recorded requests -------------------------------------


@needs_shared
def test_openai_chat_splits_system_messages_tools_params_and_model() -> None:
    body = request_json("openai/chat_tools_chain_nonstream_gzip", 2)
    got = components("/v1/chat/completions", body)
    assert got["system"] is None  # this agent sends no system message
    assert [m["role"] for m in got["messages"]] == ["user", "assistant", "tool", "assistant", "tool"]
    assert [t["function"]["name"] for t in got["tools"]] == ["lookup_population", "can_have_dragons"]
    assert got["model"] == "gpt-4o-mini"
    assert got["params"] == {"stream": False}


@needs_shared
def test_openai_chat_system_and_developer_messages_are_the_system_prompt() -> None:
    body = request_json("openai/error_400_chat_unsupported_role_parsed", 0)
    assert components("/v1/chat/completions", body)["system"] == [
        m for m in body["messages"] if m["role"] == "system"
    ]

    body = {
        "model": "gpt-4.1",
        "messages": [
            {"role": "developer", "content": "Be terse."},
            {"role": "user", "content": "Hi"},
            {"role": "system", "content": "Answer in French."},
        ],
        "functions": [{"name": "legacy", "parameters": {"type": "object"}}],
        "tools": [{"type": "function", "function": {"name": "modern"}}],
        "temperature": 0.2,
        "response_format": {"type": "json_object"},
    }
    got = components("/v1/chat/completions", body)
    assert [m["content"] for m in got["system"]] == ["Be terse.", "Answer in French."]
    assert got["messages"] == [{"role": "user", "content": "Hi"}]
    assert [t.get("name") or t["function"]["name"] for t in got["tools"]] == ["modern", "legacy"]
    assert got["params"] == {"temperature": 0.2, "response_format": {"type": "json_object"}}


@needs_shared
def test_openai_responses_splits_instructions_and_input_items() -> None:
    body = request_json("openai/responses_tool_use_nonstream_gzip", 1)
    got = components("/v1/responses", body)
    assert got["system"] is None
    assert [item.get("type", item.get("role")) for item in got["messages"]] == [
        "user",
        "function_call",
        "function_call_output",
    ]
    assert [t["name"] for t in got["tools"]] == ["multiply"]
    assert got["model"] == "gpt-5.5"
    assert set(got["params"]) == {"include", "reasoning", "store", "stream"}


def test_openai_responses_string_input_is_one_user_message() -> None:
    body = {"model": "gpt-4o", "instructions": "Be terse.", "input": "What is 2+2?", "temperature": 0}
    got = components("/v1/responses", body)
    assert got["system"] == ["Be terse."]
    assert got["messages"] == [{"role": "user", "content": "What is 2+2?"}]
    assert got["params"] == {"temperature": 0}
    listed = {**body, "input": [{"role": "user", "content": "What is 2+2?"}]}
    assert hashes("/v1/responses", listed) == hashes("/v1/responses", body)


@needs_shared
def test_anthropic_messages_split_and_the_query_is_a_param() -> None:
    body = request_json("anthropic/messages_parallel_tool_use_nonstream_parsed", 0)
    got = components("/v1/messages", body, "beta=true&limit=5")
    assert got["system"] == body["system"]
    assert got["messages"] == body["messages"]
    assert [t["name"] for t in got["tools"]] == ["retrieve_entity_info"]
    assert got["model"] == "claude-haiku-4-5"
    assert got["params"] == {
        "body": {"max_tokens": 4096, "stream": False, "tool_choice": {"type": "auto"}},
        "query": [["limit", "5"]],
    }
    assert hashes("/v1/messages", body, "limit=5")["params"] != hashes("/v1/messages", body)["params"]


@needs_shared
@pytest.mark.parametrize(
    ("name", "path", "model"),
    [
        ("openai/embeddings_parsed", "/v1/embeddings", "text-embedding-3-small"),
        ("anthropic/error_404_count_tokens_parsed", "/v1/messages/count_tokens", "claude-does-not-exist"),
    ],
)
def test_other_endpoints_keep_the_whole_body_in_params(name: str, path: str, model: str) -> None:
    body = request_json(name, 0)
    got = components(path, body)
    assert got["system"] is None and got["messages"] is None and got["tools"] is None
    assert got["model"] == model
    assert got["params"] == {k: v for k, v in body.items() if k != "model"}


def test_non_json_and_empty_bodies_are_params() -> None:
    text = describe_components("openai", "POST", "/v1/files", "", {"text": "a,b\n1,2\n"}, NO_SECRETS)
    assert text == {"system": None, "messages": None, "tools": None, "params": "a,b\n1,2\n", "model": None}
    empty = request_key("openai", "GET", "/v1/models", "", {}, NO_SECRETS)
    assert empty.hashes == dict.fromkeys(COMPONENTS, NULL_HASH)
    assert empty.model is None


# --- a change in one component changes only that component's hash ---------------------------------


def _chat_body() -> dict[str, Any]:
    body = request_json("openai/chat_tools_chain_nonstream_gzip", 1)
    body["messages"].insert(
        0, {"role": "system", "content": "You answer questions about fictional countries."}
    )
    return body


CHAT_EDITS: dict[str, Callable[[dict[str, Any]], None]] = {
    "system": lambda b: b["messages"][0].update(content="You answer questions about real countries."),
    "messages": lambda b: b["messages"][1].update(content="Can the country of Scone have dragons?"),
    "tools": lambda b: b["tools"][0]["function"].update(description="Returns the population"),
    "params": lambda b: b.update(temperature=0.5),
    "model": lambda b: b.update(model="gpt-4.1"),
}
ANTHROPIC_EDITS: dict[str, Callable[[dict[str, Any]], None]] = {
    "system": lambda b: b.update(system=b["system"] + "Answer in one word.\n"),
    "messages": lambda b: b["messages"][0]["content"][0].update(text="Who is the oldest?"),
    "tools": lambda b: b["tools"][0]["input_schema"]["properties"]["name"].update(type="integer"),
    "params": lambda b: b.update(max_tokens=1024),
    "model": lambda b: b.update(model="claude-sonnet-4-5"),
}


@needs_shared
@pytest.mark.parametrize("component", COMPONENTS)
@pytest.mark.parametrize(
    ("path", "original", "edits"),
    [
        ("/v1/chat/completions", _chat_body, CHAT_EDITS),
        (
            "/v1/messages",
            lambda: request_json("anthropic/messages_parallel_tool_use_nonstream_parsed", 1),
            ANTHROPIC_EDITS,
        ),
    ],
    ids=["openai-chat", "anthropic-messages"],
)
def test_a_changed_component_changes_only_its_own_hash(
    component: str, path: str, original: Callable[[], dict[str, Any]], edits: dict[str, Callable]
) -> None:
    before = original()
    after = copy.deepcopy(before)
    edits[component](after)
    old, new = hashes(path, before), hashes(path, after)
    assert [name for name in COMPONENTS if old[name] != new[name]] == [component]


def test_a_new_id_in_the_messages_does_not_renumber_the_system_prompt() -> None:
    # Anthropic's "messages" sorts before "system": numbering per component keeps them apart.
    body = {
        "model": "claude-sonnet-4-5",
        "system": "Ticket 3f2b8c1e-5d4a-4e6f-9a7b-2c1d0e9f8a7b is open.",
        "messages": [{"role": "user", "content": "hello"}],
        "max_tokens": 100,
    }
    other = copy.deepcopy(body)
    other["messages"][0]["content"] = "see 0b7e9d2a-1c3f-4a5b-8d6e-7f8091a2b3c4 and hello"
    old, new = hashes("/v1/messages", body), hashes("/v1/messages", other)
    assert old["system"] == new["system"]
    assert old["messages"] != new["messages"]


# --- Claude Code's session ids, query-string credentials -------------------------------------------


@needs_shared
def test_anthropic_metadata_user_id_is_not_part_of_the_key() -> None:
    body = request_json("anthropic/messages_tool_use_roundtrip_nonstream", 0)
    first = {**body, "metadata": {"user_id": "user_4f1e_account_7c2a_session_9d3b"}}
    second = {**body, "metadata": {"user_id": "user_8a0c_account_7c2a_session_1e5f"}}
    assert hashes("/v1/messages", first) == hashes("/v1/messages", second) == hashes("/v1/messages", body)
    tagged = {**body, "metadata": {"user_id": "user_8a0c", "tenant": "acme"}}
    assert components("/v1/messages", tagged)["params"]["metadata"] == {"tenant": "acme"}
    assert hashes("/v1/messages", tagged)["params"] != hashes("/v1/messages", body)["params"]


@needs_shared
def test_secret_query_parameters_are_dropped_and_do_not_change_the_key() -> None:
    google_key = "AIza" + ("SyD3mo0nlyN0tAR3alK3yAtAll" + "0123456789")[:35]  # a Google API key's shape
    assert redact_query(f"beta=true&key={google_key}", NO_SECRETS) == "beta=true"
    assert redact_query("api_key=whatever&beta=true&sig=abc", NO_SECRETS) == "beta=true"
    assert redact_query(f"beta=true&note={google_key}", NO_SECRETS) == f"beta=true&note={REDACTED}"
    body = request_json("anthropic/messages_text_stream_parsed", 0)
    plain = request_key("anthropic", "POST", "/v1/messages", "beta=true", {"json": body}, NO_SECRETS)
    keyed = request_key(
        "anthropic", "POST", "/v1/messages", f"key={google_key}&beta=true", {"json": body}, NO_SECRETS
    )
    assert plain == keyed


# --- the stored key equals the live key ------------------------------------------------------------


@needs_shared
@pytest.mark.parametrize("name", IDS)
def test_every_recorded_request_matches_its_templated_recording(name: str) -> None:
    templater = Templater(NO_SECRETS)
    for exchange in exchanges(name):
        stored = templater.record(exchange)
        live = request_key(
            stored["provider"],
            exchange.method,
            exchange.path,
            exchange.query,
            parse_body(exchange.request_body, "application/json"),
            NO_SECRETS,
        )
        assert live.key == key_of(stored["method"], stored["path"], stored["hashes"])
        assert live.hashes == stored["hashes"]
        assert all(len(h) == 64 and int(h, 16) >= 0 for h in live.hashes.values())


@needs_shared
def test_request_key_reports_the_model_as_sent() -> None:
    body = request_json("openai/chat_basic_nonstream", 0)
    assert (
        request_key("openai", "POST", "/v1/chat/completions", "", {"json": body}, NO_SECRETS).model
        == "gpt-4o-mini"
    )


@needs_shared
def test_key_order_in_the_body_does_not_matter() -> None:
    body = request_json("anthropic/messages_tool_use_stream", 1)
    shuffled = json.loads(json.dumps(dict(reversed(list(body.items())))))
    assert hashes("/v1/messages", shuffled) == hashes("/v1/messages", body)


def test_anthropic_beta_marker_is_not_part_of_the_key() -> None:
    """anthropic 2.x stopped sending `?beta=true`; recordings made by older SDKs must still match."""
    body = parse_body(b'{"model": "claude-haiku-4-5", "max_tokens": 5, "messages": []}', "application/json")
    secrets = Secrets.of([])
    with_marker = request_key("anthropic", "POST", "/v1/messages", "beta=true", body, secrets)
    without = request_key("anthropic", "POST", "/v1/messages", "", body, secrets)
    other = request_key("anthropic", "POST", "/v1/messages", "limit=5", body, secrets)
    assert with_marker.key == without.key
    assert other.hashes["params"] != without.hashes["params"]
