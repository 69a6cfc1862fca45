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
from attest_toolkit.capture.proxy import RecordingProxy
from attest_toolkit.capture.run import capture_secrets, conclude
from attest_toolkit.credentials.scan import TOKEN_PATTERNS, Secrets
from attest_toolkit.errors import AttestError
from attest_toolkit.fixtures.document import new_fixture, new_source, read_fixture
from attest_toolkit.progress import ProgressLine
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
    with RecordingProxy(capture_secrets(env, cwd), env, quiet) as proxy:
        url = f"{proxy.app.base_url}/openai/v1/chat/completions?{query}"
        response = requests.post(url, json=request, headers=headers, timeout=30)
        assert response.status_code == 200
    path = cwd / "fixtures" / "t.attest.json"
    conclude(proxy.app, new_source(["python", "agent.py"]), "t", path, 0, expect_fail=False)
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


# --- streamed in pieces, encoded, or only known by its surroundings, through the real proxy ---------

SPLIT_KEY = st.from_regex(
    dict(TOKEN_PATTERNS)["OpenAI-style API key"],
    fullmatch=True,
    alphabet=string.ascii_letters + string.digits + "-_",
)


def capture_raw(cwd: Path, upstream: FakeUpstream, body: bytes, content_type: str) -> Path:
    env = {"ATTEST_OPENAI_UPSTREAM": upstream.url}
    quiet = ProgressLine(stream=io.StringIO(), live=False)
    with RecordingProxy(capture_secrets(env, cwd), env, quiet) as proxy:
        url = f"{proxy.app.base_url}/openai/v1/chat/completions"
        response = requests.post(url, data=body, headers={"content-type": content_type}, timeout=30)
        assert response.status_code == 200
    path = cwd / "fixtures" / "t.attest.json"
    conclude(proxy.app, new_source(["python", "agent.py"]), "t", path, 0, expect_fail=False)
    return path


def streamed_text(doc: dict) -> str:
    parts = []
    for event in doc["channels"]["model"][0]["response"]["body"]["sse"]:
        if event.startswith("data: {"):
            for choice in json.loads(event[6:])["choices"]:
                parts.append(choice["delta"].get("content") or "")
                parts += [c["function"]["arguments"] for c in choice["delta"].get("tool_calls", [])]
    return "".join(parts)


def tool_chunk(arguments: str) -> bytes:
    call = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "f", "arguments": arguments}}
    chunk = {
        "id": ID,
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": {"tool_calls": [call]}}],
    }
    return f"data: {json.dumps(chunk)}\n\n".encode()


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(key=SPLIT_KEY, data=st.data(), tool=st.booleans())
def test_a_key_the_model_streams_back_in_pieces_never_reaches_the_fixture(key, data, tool):
    text = json.dumps({"db": {"password": "pw-0b8f2c9e"}, "note": key}) if tool else f"Your key is {key}."
    cuts = sorted(data.draw(st.sets(st.integers(1, len(text) - 1), min_size=1, max_size=4)))
    pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
    events = [tool_chunk(p) if tool else chat_chunk(p) for p in pieces] + [b"data: [DONE]\n\n"]
    parts = [("file", b"\x89PNG\r\n\x1a\n\xff" + key.encode()), ("api_key", b"abc123")]
    body = (
        b"".join(
            b'--B\r\nContent-Disposition: form-data; name="' + n.encode() + b'"\r\n\r\n' + v + b"\r\n"
            for n, v in parts
        )
        + b"--B--\r\n"
    )
    reply = Reply(headers={"content-type": "text/event-stream"}, events=events)
    with tempfile.TemporaryDirectory() as tmp, FakeUpstream([reply]) as upstream:
        path = capture_raw(Path(tmp), upstream, body, "multipart/form-data; boundary=B")
        doc = read_fixture(path, Secrets.of([]))
    assert upstream.requests[0].body == body  # the provider got the upload as sent
    seen = streamed_text(doc) + json.dumps(doc["channels"]["model"][0]["request"])  # the upload's parts
    for leak in (key, "pw-0b8f2c9e", "abc123"):
        assert leak not in seen
    assert "{{redacted}}" in streamed_text(doc)


def test_a_fixture_with_a_secret_in_a_wrong_field_is_refused_without_showing_it(tmp_path: Path) -> None:
    key = "sk-proj-" + "F1xtur3K3y" * 3
    doc = {**new_fixture("t", new_source(["python", "agent.py"]), []), "name": f"my {key}"}
    path = tmp_path / "t.attest.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(AttestError) as caught:
        read_fixture(path, Secrets.of([]))
    assert "/name" in str(caught.value) and key not in str(caught.value)


def test_a_custom_auth_header_the_provider_echoes_back_is_redacted(tmp_path: Path) -> None:
    # Only the header names it: the value has no shape, and the provider repeats it in plain text.
    value = "c0ffee-Tenant-7f3a9b"
    request = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]}
    with FakeUpstream([answer(f"you sent {value}", streamed=True)]) as upstream:
        path = capture_one_call(tmp_path, upstream, request, "", {"X-Custom-Auth": value})
    assert upstream.requests[0].headers["X-Custom-Auth"] == value  # the provider got it
    text = path.read_text(encoding="utf-8")
    assert value not in text
    assert "you sent {{redacted}}" in text
