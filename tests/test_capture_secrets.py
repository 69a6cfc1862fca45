"""No secret survives into a captured fixture: generated secrets of every shape the scan knows, put in
request headers, request bodies at any depth, query strings, streamed and gzip responses, and the
values of the working directory's .env. The fixture is written by the same code path as a capture."""

from __future__ import annotations

import gzip
import io
import json
import string
import tempfile
from pathlib import Path
from urllib.parse import parse_qs, quote

import pytest
import requests
from attest_toolkit import capture as capturing
from attest_toolkit.fixture import read_fixture
from attest_toolkit.progress import ProgressLine
from attest_toolkit.secrets import TOKEN_PATTERNS, Secrets
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from upstream import FakeUpstream, Reply

PRINTABLE = st.characters(min_codepoint=0x20, max_codepoint=0x7E)
# A .env value has no shape of its own: only its value identifies it.
ENV_VALUES = st.text(alphabet=string.ascii_letters + string.digits, min_size=16, max_size=40)
ID = "chatcmpl-Bx1AbC9dEf2GhI3jKl4MnO5pQr"
KEYS = st.sampled_from(["note", "data", "extra", "x_field", "context"])


def nested(value: object) -> st.SearchStrategy[object]:
    """`value` somewhere inside lists and objects, at any depth."""
    return st.recursive(
        st.just(value),
        lambda inner: st.one_of(
            st.lists(inner, min_size=1, max_size=2),
            st.dictionaries(KEYS, inner, min_size=1, max_size=2),
        ),
        max_leaves=4,
    )


def chat_chunk(text: str) -> bytes:
    choice = {"index": 0, "delta": {"content": text}, "finish_reason": None}
    chunk = {
        "id": ID,
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "gpt-4o-mini",
        "choices": [choice],
    }
    return f"data: {json.dumps(chunk)}\n\n".encode()


def answer(text: str, streamed: bool) -> Reply:
    if streamed:
        events = [chat_chunk("Here: "), chat_chunk(f"{text} and more"), b"data: [DONE]\n\n"]
        return Reply(headers={"content-type": "text/event-stream"}, events=events)
    choice = {
        "index": 0,
        "finish_reason": "stop",
        "message": {"role": "assistant", "content": f"said {text}"},
    }
    body = {"id": ID, "object": "chat.completion", "created": 1, "model": "gpt-4o-mini", "choices": [choice]}
    gzipped = gzip.compress(json.dumps(body).encode())
    return Reply(headers={"content-type": "application/json", "content-encoding": "gzip"}, body=gzipped)


def capture_one_call(cwd: Path, upstream: FakeUpstream, request: dict, query: str, headers: dict) -> Path:
    """One call through the recording proxy, then the fixture written as `attest capture` writes it."""
    env = {"ATTEST_OPENAI_UPSTREAM": upstream.url}
    quiet = ProgressLine(stream=io.StringIO(), live=False)
    with capturing.RecordingProxy(capturing.capture_secrets(env, cwd), env, quiet) as proxy:
        url = f"{proxy.app.base_url}/openai/v1/chat/completions?{query}"
        response = requests.post(url, json=request, headers=headers, timeout=30)
        assert response.status_code == 200
    path = cwd / "fixtures" / "t.attest.json"
    capturing.conclude(proxy.app, ["python", "agent.py"], "t", path, 0, expect_fail=False)
    return path


@pytest.mark.parametrize("shape", TOKEN_PATTERNS, ids=[label for label, _ in TOKEN_PATTERNS])
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    env_value=ENV_VALUES,
    password=ENV_VALUES,
    where=st.data(),
    streamed=st.booleans(),
)
def test_no_secret_survives_into_the_fixture(shape, env_value, password, where, streamed):
    secret = where.draw(st.from_regex(shape[1], fullmatch=True, alphabet=PRINTABLE), label="secret")
    leaks = [secret, quote(secret, safe=""), env_value, password]
    request = {
        "model": "gpt-4o-mini",
        "messages": [{"role": "user", "content": f"use {secret} and {env_value} please"}],
        "metadata": where.draw(nested(secret)),
        "context": where.draw(nested({"password": password, "text": f"{env_value}"})),
    }
    headers = {"x-note": secret, "authorization": f"Bearer {env_value}"}
    query = f"q={quote(secret, safe='')}&key={quote(env_value, safe='')}"
    with (
        tempfile.TemporaryDirectory() as tmp,
        FakeUpstream([answer(f"{secret} / {env_value}", streamed)]) as upstream,
    ):
        cwd = Path(tmp)
        (cwd / ".env").write_text(f"MY_SERVICE_TOKEN={env_value}\n", encoding="utf-8")
        path = capture_one_call(cwd, upstream, request, query, headers)
        text = path.read_text(encoding="utf-8")
        read_fixture(path, Secrets.of([env_value, password]))  # the read-time scan finds nothing either
    # The provider got the call as the agent made it.
    assert parse_qs(upstream.requests[0].query) == parse_qs(query)
    for leak in leaks:
        assert leak not in text
    assert "{{redacted}}" in text
