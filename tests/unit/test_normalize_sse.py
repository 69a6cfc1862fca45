"""Bodies in the fixture's form: SSE split event by event, byte for byte, and served back unchanged."""

from __future__ import annotations

import base64
import json

import pytest
from attest_toolkit.errors import FixtureError
from attest_toolkit.normalize import body_bytes, parse_body, provider_for, split_sse
from conftest import needs_shared
from hypothesis import given
from hypothesis import strategies as st
from normalize_cassettes import IDS, content_type, exchanges

SSE_BODIES = [
    pytest.param(exchange.response_body.decode("utf-8"), id=f"{name}#{i}")
    for name in IDS
    for i, exchange in enumerate(exchanges(name))
    if "event-stream" in content_type(exchange)
]


@needs_shared
def test_the_real_cassettes_have_streamed_bodies() -> None:
    assert len(SSE_BODIES) >= 15  # gzip ones included: every streaming cassette, both providers


@needs_shared
@pytest.mark.parametrize("text", SSE_BODIES)
def test_split_sse_round_trips_every_recorded_stream(text: str) -> None:
    events = split_sse(text)
    assert "".join(events) == text
    assert all(event.endswith("\n\n") for event in events[:-1])
    assert all(event.strip() for event in events)  # no empty events: one event per blank-line frame
    assert sum(1 for line in text.split("\n") if line.startswith("data:")) == sum(
        1 for event in events for line in event.split("\n") if line.startswith("data:")
    )
    assert body_bytes(parse_body(text.encode(), "text/event-stream; charset=utf-8")) == text.encode()


@pytest.mark.parametrize(
    ("text", "events"),
    [
        ("data: 1\n\ndata: 2\n\n", ["data: 1\n\n", "data: 2\n\n"]),
        ("data: 1\r\n\r\ndata: 2\r\n\r\n", ["data: 1\r\n\r\n", "data: 2\r\n\r\n"]),
        ("data: 1\r\rdata: 2\r\r", ["data: 1\r\r", "data: 2\r\r"]),
        ("event: a\ndata: 1\n\ndata: [DONE]", ["event: a\ndata: 1\n\n", "data: [DONE]"]),
        (": ping\n\n\ndata: x\n\n", [": ping\n\n", "\n", "data: x\n\n"]),
        ("", []),
    ],
    ids=["lf", "crlf", "cr", "trailing-partial", "extra-blank-line", "empty"],
)
def test_split_sse_keeps_each_events_own_terminator(text: str, events: list[str]) -> None:
    assert split_sse(text) == events


@given(st.lists(st.sampled_from(["a", "data: x", "\n", "\r", "\r\n", ":", " "])).map("".join))
def test_split_sse_never_loses_or_adds_a_byte(text: str) -> None:
    assert "".join(split_sse(text)) == text


@pytest.mark.parametrize(
    ("raw", "content_type", "form"),
    [
        (b'{"id": "x", "n": 1}', "application/json", {"json": {"id": "x", "n": 1}}),
        (b'{"a": [1, 2]}', None, {"json": {"a": [1, 2]}}),
        (b"not json {", "application/json", {"text": "not json {"}),
        (b"hello", "text/plain", {"text": "hello"}),
        (b"42", "text/plain", {"text": "42"}),
        (b"", "application/json", {}),
        (
            b"\xff\xfe\x00binary",
            "application/octet-stream",
            {"base64": base64.b64encode(b"\xff\xfe\x00binary").decode()},
        ),
    ],
)
def test_parse_body_picks_the_readable_form(raw: bytes, content_type: str | None, form: dict) -> None:
    assert parse_body(raw, content_type) == form


def test_body_bytes_serves_json_compact_and_the_rest_as_stored() -> None:
    assert body_bytes({"json": {"text": "héllo", "n": [1, 2]}}) == json.dumps(
        {"text": "héllo", "n": [1, 2]}, ensure_ascii=False, separators=(",", ":")
    ).encode("utf-8")
    assert body_bytes({"text": "plain"}) == b"plain"
    assert body_bytes({"base64": base64.b64encode(b"\x00\x01").decode()}) == b"\x00\x01"
    assert body_bytes({}) == b""
    with pytest.raises(FixtureError, match="not valid base64"):
        body_bytes({"base64": "***"})


@pytest.mark.parametrize(
    ("path", "hint", "provider"),
    [
        ("/v1/chat/completions", None, "openai"),
        ("/v1/responses", None, "openai"),
        ("/v1/embeddings", None, "openai"),
        ("/v1/messages", None, "anthropic"),
        ("/v1/messages/count_tokens", None, "anthropic"),
        ("/v1/threads/thread_abc/messages", None, "openai"),  # OpenAI's assistants API has messages too
        ("/v1/traces", None, "otlp"),
        ("/v1/models", "anthropic", "anthropic"),
        ("/v1/models", "api.anthropic.com", "anthropic"),
        ("/v1/models", None, "openai"),
    ],
)
def test_provider_for_a_path(path: str, hint: str | None, provider: str) -> None:
    assert provider_for(path, hint) == provider
