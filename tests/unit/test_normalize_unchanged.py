"""A request's key is computed without rebuilding components that normalizing leaves as they are: the
hashes are exactly those of the walked normalization, whatever the request holds."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from attest_toolkit.credentials.scan import Secrets
from attest_toolkit.normalize import (
    COMPONENTS,
    Templater,
    canonical_hash,
    describe_components,
    parse_body,
    request_key,
)
from conftest import needs_shared
from normalize_cassettes import IDS, exchanges

REPO = Path(__file__).resolve().parents[2]
SECRETS = Secrets.of(["dotenv-secret-value-123"])
CHAT = "/v1/chat/completions"
GEMINI = "/v1beta/models/gemini-2.5-flash:generateContent"
CONVERSE = "/model/us.amazon.nova-pro-v1:0/converse"


def walked(path: str, body: dict[str, Any], query: str = "", secrets: Secrets = SECRETS) -> dict[str, str]:
    """The hashes of the components as the walk normalizes them (what fixtures were keyed with)."""
    components = describe_components("openai", "POST", path, query, body, secrets)
    return {name: canonical_hash(components[name]) for name in COMPONENTS}


def keyed(path: str, body: dict[str, Any], query: str = "", secrets: Secrets = SECRETS) -> dict[str, str]:
    return request_key("openai", "POST", path, query, body, secrets).hashes


def chat(content: Any, **extra: Any) -> dict[str, Any]:
    return {"json": {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": content}], **extra}}


CASES = {
    "plain": (CHAT, chat("Where is my order?")),
    "an OpenAI key in the text": (CHAT, chat("use sk-proj-abcdefghijklmnopqrstuvwx1234 please")),
    "a .env secret in the text": (CHAT, chat("the value is dotenv-secret-value-123.")),
    "a bearer token in a tool result": (
        CHAT,
        {"json": {"messages": [{"role": "tool", "content": "Authorization: Bearer abc.def-123456"}]}},
    ),
    "a secret-named key": (CHAT, chat("hi", metadata={"api_key": "not-a-known-shape"})),
    "a secret-named key written apart": (CHAT, chat("hi", metadata={"x-api-k-ey": "abcdefgh"})),
    "a name and value pair": (CHAT, chat("hi", extra_headers=[{"name": "X-Auth", "value": "opaque"}])),
    "a key that starts with a colon": (CHAT, chat("x,", metadata={":api_key": "abcdefgh"})),
    "an id the agent generated": (CHAT, chat("call call_Ab12Cd34Ef56Gh78Ij90 again")),
    "a placeholder in a stored request": (CHAT, chat("resp_{{id_7}} and {{ts_2}}")),
    "a timestamp and an email": (CHAT, chat("at 2025-03-01T10:00:00Z ask ana@example.com")),
    "a UUID": (CHAT, chat("job 123e4567-e89b-42d3-a456-426614174000 done")),
    "Claude Code's environment": (
        CHAT,
        chat("<env>\nWorking directory: /Users/ana/app\nPlatform: darwin\n</env>\nFix the bug."),
    ),
    "escapes, quotes and newlines": (CHAT, chat('line one\nsays "hi"\ttab \\ back')),
    "JSON text with a secret-named key": (CHAT, chat(json.dumps({"password": "hunter2hunter2"}))),
    "JSON text without secrets": (CHAT, chat(json.dumps({"city": "Paris", "days": [1, 2]}))),
    "unicode": (CHAT, chat("café ☕ 東京 \u2028 done")),
    "a multipart upload": (
        "/v1/files",
        parse_body(
            b'--b\r\nContent-Disposition: form-data; name="purpose"\r\n\r\nbatch\r\n--b--\r\n',
            "multipart/form-data; boundary=b",
        ),
    ),
    "a text body": ("/v1/other", {"text": "plain text body sk-ant-abcdefghijklmnopqrstu"}),
    "numbers only": (CHAT, {"json": {"model": "m", "messages": [], "temperature": 0.5, "n": 2}}),
    "Gemini contents": (
        GEMINI,
        {
            "json": {
                "contents": [{"role": "user", "parts": [{"text": "Question 1: where is order O-1?"}]}],
                "systemInstruction": {"parts": [{"text": "Be terse."}]},
                "generationConfig": {"temperature": 0},
            }
        },
    ),
    "Bedrock Converse with a tool result": (
        CONVERSE,
        {
            "json": {
                "messages": [
                    {
                        "role": "user",
                        "content": [
                            {"toolResult": {"toolUseId": "tooluse_Ab12Cd34Ef56Gh78Ij90", "content": []}}
                        ],
                    }
                ],
                "system": [{"text": "Be terse."}],
            }
        },
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_keyed_hashes_are_the_walked_normalizations(case: str) -> None:
    path, body = CASES[case]
    assert keyed(path, body) == walked(path, body)


def test_a_secret_in_one_component_changes_only_that_components_hash() -> None:
    clean = chat("hi", temperature=0)
    leaky = chat("hi", temperature=0, user="sk-proj-abcdefghijklmnopqrstuvwx1234")
    redacted = chat("hi", temperature=0, user="{{redacted}}")
    assert keyed(CHAT, leaky) == keyed(CHAT, redacted) == walked(CHAT, leaky)
    assert keyed(CHAT, leaky)["params"] != keyed(CHAT, clean)["params"]
    assert keyed(CHAT, leaky)["messages"] == keyed(CHAT, clean)["messages"]


def test_a_component_seen_before_keeps_the_hash_of_the_secrets_it_is_keyed_with() -> None:
    # Components are remembered by their text (an agent sends its system prompt and tools with every
    # call); the same text under other secrets (another .env) redacts differently.
    body = chat("hi", metadata={"note": "dotenv-secret-value-123 is here"})
    other = Secrets.of(["another-secret-value-456"])
    assert keyed(CHAT, body) == keyed(CHAT, body) == walked(CHAT, body)
    assert keyed(CHAT, body, secrets=other) == walked(CHAT, body, secrets=other)
    assert keyed(CHAT, body)["params"] != keyed(CHAT, body, secrets=other)["params"]


def test_components_past_the_bound_are_keyed_as_walked(monkeypatch: pytest.MonkeyPatch) -> None:
    from attest_toolkit.normalize.decompose import _Seen

    monkeypatch.setattr(_Seen, "CALLS", 2)
    bodies = [chat(f"question {n} about call_Ab12Cd34Ef56Gh78Ij{n:02d}") for n in range(5)]
    for body in bodies + bodies:
        assert keyed(CHAT, body) == walked(CHAT, body)


def test_the_query_is_keyed_as_walked() -> None:
    body = {"json": {"contents": []}}
    assert keyed(GEMINI, body, "alt=sse&key=AIzaSyA-abcdefghijklmnopqrstuvwxyz01234") == walked(
        GEMINI, body, "alt=sse&key=AIzaSyA-abcdefghijklmnopqrstuvwxyz01234"
    )


def test_a_miss_still_has_the_walked_components() -> None:
    body = chat("call call_Ab12Cd34Ef56Gh78Ij90 again")
    sent = request_key("openai", "POST", CHAT, "", body, SECRETS)
    assert sent.components == describe_components("openai", "POST", CHAT, "", body, SECRETS)
    assert "{{id_1}}" in sent.components["messages"][0]["content"]


COMMITTED = sorted(
    path
    for folder in ("tests/recordings", "examples/fixtures", "toolkit/attest_toolkit/data")
    for path in (REPO / folder).glob("**/*.attest.json")
)


@pytest.mark.parametrize("fixture", COMMITTED, ids=lambda p: p.name)
def test_committed_recordings_keep_their_stored_hashes(fixture: Path) -> None:
    doc = json.loads(fixture.read_text(encoding="utf-8"))
    items = doc["channels"]["model"]
    assert items, f"{fixture} holds no model call"
    for item in items:
        where = (item["provider"], item["method"], item["path"], item.get("query", ""), item["request"])
        assert request_key(*where, Secrets.of([])).hashes == item["hashes"]


@needs_shared
@pytest.mark.parametrize("name", IDS)
def test_real_requests_sent_and_stored_are_keyed_as_walked(name: str) -> None:
    templater = Templater(SECRETS)
    for exchange in exchanges(name):
        sent = parse_body(exchange.request_body, None)
        assert keyed(exchange.path, sent, exchange.query) == walked(exchange.path, sent, exchange.query)
        stored = templater.record(exchange)
        path, query, body = stored["path"], stored.get("query", ""), stored["request"]
        assert keyed(path, body, query) == walked(path, body, query) == stored["hashes"]
