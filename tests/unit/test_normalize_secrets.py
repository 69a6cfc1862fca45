"""Nothing of a secret survives recording, wherever in the exchange it travels."""

from __future__ import annotations

import base64
import gzip
import itertools
import json
import random
import re
import string
import struct
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import pytest
import yaml
from attest_toolkit.credentials.names import is_secret_key, is_secret_param
from attest_toolkit.credentials.scan import (
    REDACTED,
    TOKEN_PATTERNS,
    Secrets,
    load_dotenv_values,
    may_hold_secret,
    redact_argv,
)
from attest_toolkit.fixtures.document import _first_credential, find_credential
from attest_toolkit.normalize import Exchange, Templater, request_key, split_sse
from attest_toolkit.normalize.streams import find_streamed_secret
from conftest import REAL_CASSETTES, needs_shared
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

NO_SECRETS = Secrets.of([])
SHAPES = {label: st.from_regex(rx, fullmatch=True) for label, rx in TOKEN_PATTERNS}
# Text that travels raw (SSE event text, query strings) keeps its structure: whitespace there is a space.
PRINTABLE_SHAPES = {label: shape.map(lambda s: re.sub(r"\s", " ", s)) for label, shape in SHAPES.items()}
WORDS = st.text(alphabet="abcdefghij KLMNOP.,:", max_size=12)
SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def bury(secret: str, depth: int, key_position: bool) -> Any:
    """`secret` inside text, inside `depth` levels of objects and arrays (or as an object key)."""
    node: Any = {f" {secret} ": "value"} if key_position else f"before {secret} after"
    for level in range(depth):
        node = {"content": [node, {"type": "text"}]} if level % 2 else [{"note": node}]
    return node


def assert_gone(secret: str, interaction: dict[str, Any]) -> None:
    assert find_credential(interaction, NO_SECRETS) is None
    assert secret not in json.dumps(interaction, ensure_ascii=False)


@pytest.mark.parametrize("label", list(SHAPES))
@SETTINGS
@given(data=st.data())
def test_no_secret_survives_in_json_bodies_at_any_depth(label: str, data: st.DataObject) -> None:
    secret = data.draw(SHAPES[label])
    depth = data.draw(st.integers(0, 5))
    in_key = data.draw(st.booleans())
    request = {
        "model": "gpt-4o-mini",
        "messages": [
            {"role": "user", "content": data.draw(WORDS)},
            {"role": "tool", "tool_call_id": "call_1", "content": json.dumps(bury(secret, depth, in_key))},
        ],
        "extra": bury(secret, depth, in_key),
    }
    response = {"id": "chatcmpl-1", "choices": [{"message": {"content": bury(secret, depth, in_key)}}]}
    exchange = Exchange(
        "POST",
        "/v1/chat/completions",
        "",
        json.dumps(request).encode(),
        200,
        [("content-type", "application/json")],
        json.dumps(response).encode(),
    )
    assert_gone(secret, Templater(NO_SECRETS).record(exchange))


@pytest.mark.parametrize("label", list(PRINTABLE_SHAPES))
@SETTINGS
@given(data=st.data())
def test_no_secret_survives_in_query_strings_sse_text_or_headers(label: str, data: st.DataObject) -> None:
    secret = data.draw(PRINTABLE_SHAPES[label])
    assert secret.isprintable()
    event = (
        "data: "
        + json.dumps({"type": "content_block_delta", "text": "x"})[:-1]
        + f', "echo": "a {secret} b"}}\n\n'
    )
    exchange = Exchange(
        "POST",
        "/v1/messages",
        f"beta=true&note={quote(secret)}&key=" + quote(secret),
        b'{"model": "claude-haiku-4-5", "messages": []}',
        200,
        [("content-type", "text/event-stream"), ("request-id", f"req {secret} x")],
        ("event: content_block_delta\n" + event + "event: message_stop\ndata: {}\n\n").encode(),
    )
    interaction = Templater(NO_SECRETS).record(exchange)
    assert_gone(secret, interaction)
    assert quote(secret) not in interaction["query"]


def test_dotenv_values_are_redacted_and_the_live_request_still_matches() -> None:
    value = "hunter2-but-longer-and-from-dotenv"
    secrets = Secrets.of([value])
    request = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": f"db password {value}"}]}
    exchange = Exchange("POST", "/v1/chat/completions", "", json.dumps(request).encode(), 200, [], b"{}")
    stored = Templater(secrets).record(exchange)
    assert stored["request"]["json"]["messages"][0]["content"] == f"db password {REDACTED}"
    live = request_key("openai", "POST", "/v1/chat/completions", "", {"json": request}, secrets)
    assert live.hashes == stored["hashes"]


@pytest.mark.parametrize("label", list(SHAPES))
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_the_quick_secret_check_never_skips_a_secret_shape(label: str, data: st.DataObject) -> None:
    # Matching checks SECRET_HINTS before running every shape: each shape must contain one of them.
    secret = data.draw(SHAPES[label])
    assert may_hold_secret(f"x {secret} y", ())


# --- what a reader would see: streamed, encoded and nested secrets --------------------------------

ALNUM = string.ascii_letters + string.digits


def _mixed(text: str) -> bool:
    return (
        any(c.isupper() for c in text) and any(c.islower() for c in text) and any(c.isdigit() for c in text)
    )


# Mixed case and digits, so that a generated value is never a word the fixture holds anyway.
VALUES = st.text(alphabet=ALNUM, min_size=10, max_size=30).filter(_mixed)


@st.composite
def secrets_in_context(draw: st.DrawFn) -> tuple[str, str, tuple[str, ...]]:
    """(secret, the text that carries it, `.env` values): a shape, a `.env` value, or a value that only
    its surroundings mark as secret (URL password, AWS and Azure keys, query parameters, cookies, an
    echoed custom auth header)."""
    kind = draw(st.sampled_from(["shape", "env", "url", "aws", "azure", "query", "cookie", "header"]))
    if kind == "shape":
        secret = draw(st.sampled_from(list(PRINTABLE_SHAPES)).flatmap(PRINTABLE_SHAPES.__getitem__))
        return secret, secret, ()
    if kind == "env":
        secret = draw(st.text(alphabet=ALNUM, min_size=16, max_size=40).filter(_mixed))
        return secret, secret, (secret,)
    if kind == "aws":
        secret = draw(st.text(alphabet=ALNUM + "/+", min_size=40, max_size=40).filter(_mixed))
        return secret, f"aws_secret_access_key = {secret}", ()
    if kind == "azure":
        secret = draw(st.text(alphabet="0123456789abcdef", min_size=32, max_size=32))
        return secret, f"api-key: {secret}", ()
    secret = draw(VALUES)
    if kind == "url":
        return secret, f"postgres://app:{secret}@db.internal:5432/prod", ()
    if kind == "query":
        name = draw(
            st.sampled_from(["secret", "auth", "sessionid", "sig", "X-Amz-Signature", "key", "token"])
        )
        return secret, f"https://files.example.com/o/1?v=2&{name}={secret}&x=1", ()
    if kind == "cookie":
        return secret, f"Cookie: sessionid={secret}; theme=dark", ()
    return secret, f"X-Custom-Auth: {secret}", ()


def _cuts(data: st.DataObject, text: str) -> list[str]:
    """`text` in pieces split at drawn offsets (possibly inside the secret, possibly empty pieces)."""
    offsets = sorted(data.draw(st.sets(st.integers(0, len(text)), max_size=4)))
    bounds = [0, *offsets, len(text)]
    return [text[a:b] for a, b in itertools.pairwise(bounds)]


def chat_events(pieces: list[str], tool: bool) -> list[str]:
    def delta(piece: str) -> dict[str, Any]:
        if tool:
            call = {"index": 0, "id": "call_1", "type": "function", "function": {"arguments": piece}}
            return {"tool_calls": [call]}
        return {"content": piece}

    events = [
        "data: " + json.dumps({"id": "chatcmpl-1", "choices": [{"index": 0, "delta": delta(p)}]}) + "\n\n"
        for p in pieces
    ]
    return [*events, "data: [DONE]\n\n"]


def anthropic_events(pieces: list[str], tool: bool) -> list[str]:
    kind = "input_json_delta" if tool else "text_delta"
    field = "partial_json" if tool else "text"
    return [
        "event: content_block_delta\ndata: "
        + json.dumps({"type": "content_block_delta", "index": 1, "delta": {"type": kind, field: p}})
        + "\n\n"
        for p in pieces
    ] + ['event: message_stop\ndata: {"type":"message_stop"}\n\n']


def joined_streams(events: list[str]) -> str:
    """What a reader of the stream sees: every streamed field joined, as an SDK would."""
    parts: list[str] = []
    for event in events:
        for line in event.splitlines():
            if line.startswith("data: {"):
                payload = json.loads(line[6:])
                for choice in payload.get("choices", []):
                    delta = choice["delta"]
                    parts.append(delta.get("content") or "")
                    parts += [c["function"]["arguments"] for c in delta.get("tool_calls", [])]
                delta = payload.get("delta", {})
                parts.append(delta.get("text") or delta.get("partial_json") or "")
    return "".join(parts)


def multipart(parts: list[tuple[str, bytes]]) -> bytes:
    out = b""
    for name, value in parts:
        out += (
            b'--XyZ\r\nContent-Disposition: form-data; name="'
            + name.encode()
            + b'"\r\n\r\n'
            + value
            + b"\r\n"
        )
    return out + b"--XyZ--\r\n"


PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe\x00"
POSITIONS = [
    "message",
    "nested",
    "arguments",
    "secret-named key in arguments",
    "tool result",
    "query",
    "response",
    "response header",
    "sse",
    "sse tool arguments",
    "anthropic sse",
    "anthropic sse tool input",
    "gzip request",
    "multipart",
    "binary response",
]


def exchange_with(position: str, secret: str, written: str, data: st.DataObject) -> Exchange:
    """One exchange carrying `written` (or, for a secret-named key, `secret`) at `position`."""
    messages: list[Any] = [{"role": "user", "content": "hi"}]
    request: dict[str, Any] = {"model": "gpt-4o-mini", "messages": messages}
    query, raw_request = "", b""
    headers = [("content-type", "application/json")]
    response: bytes = json.dumps({"id": "chatcmpl-1", "choices": []}).encode()
    if position == "message":
        messages[0]["content"] = f"use {written} please"
    elif position == "nested":
        request["metadata"] = bury(written, data.draw(st.integers(0, 4)), False)
    elif position in ("arguments", "secret-named key in arguments"):
        args = {"note": f"run {written}"} if position == "arguments" else {"cfg": {"db_password": secret}}
        call = {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": json.dumps(args)}}
        messages.append({"role": "assistant", "tool_calls": [call]})
    elif position == "tool result":
        result = json.dumps({"output": f"found {written}", "headers": {"X-Custom-Auth": secret}})
        messages.append({"role": "tool", "tool_call_id": "call_1", "content": result})
    elif position == "query":
        query = f"v=1&note={quote(written, safe='')}"
    elif position == "response":
        response = json.dumps({"choices": [{"message": {"content": f"said {written}"}}]}).encode()
    elif position == "response header":
        headers.append(("x-request-id", f"req {written}"))
    elif "sse" in position:
        tool = "tool" in position
        text = json.dumps({"note": written}) if tool else f"Here: {written} ok"
        build = anthropic_events if position.startswith("anthropic") else chat_events
        response = "".join(build(_cuts(data, text), tool)).encode()
        headers = [("content-type", "text/event-stream")]
    elif position == "gzip request":
        messages[0]["content"] = written
        raw_request = gzip.compress(json.dumps(request).encode())
    elif position == "multipart":
        fields = [("file", PNG + written.encode()), ("api_key", secret.encode()), ("purpose", b"x")]
        raw_request = multipart(fields)
    elif position == "binary response":
        response = PNG + b" " + written.encode()
        headers = [("content-type", "application/octet-stream")]
    body = raw_request or json.dumps(request).encode()
    return Exchange("POST", "/v1/chat/completions", query, body, 200, headers, response)


def everything_stored(interaction: dict[str, Any]) -> str:
    """The interaction as text, with base64 bodies decoded (and gunzipped) as a reader would."""
    texts = [json.dumps(interaction, ensure_ascii=False)]
    for body in (interaction["request"], interaction["response"]["body"]):
        if "base64" in body:
            raw = base64.b64decode(body["base64"])
            texts.append((gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw).decode("latin-1"))
        if "sse" in body:
            texts.append(joined_streams(body["sse"]))
    return "\n".join(texts)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(found=secrets_in_context(), position=st.sampled_from(POSITIONS), data=st.data())
def test_no_secret_survives_in_any_position(
    found: tuple[str, str, tuple[str, ...]], position: str, data
) -> None:
    secret, written, env = found
    secrets = Secrets.of(env)
    interaction = Templater(secrets).record(exchange_with(position, secret, written, data))
    stored = everything_stored(interaction)
    assert secret not in stored
    assert quote(secret, safe="") not in stored
    assert find_credential(interaction, secrets) is None  # the read-time scan agrees
    for event in interaction["response"]["body"].get("sse", []):
        for line in event.splitlines():
            if line.startswith("data: {"):
                json.loads(line[6:])  # every rewritten event is still valid SSE with JSON data


STREAMS = [(chat_events, False), (chat_events, True), (anthropic_events, False), (anthropic_events, True)]


@pytest.mark.parametrize(("build", "tool"), STREAMS, ids=["chat", "chat-tool", "anthropic", "anthropic-tool"])
def test_a_key_streamed_in_two_pieces_is_redacted_whatever_the_offset(build, tool) -> None:
    secret = "sk-proj-" + "Ab3" * 10
    text = json.dumps({"api": secret}) if tool else f"The key is {secret}."
    for offset in range(len(text) + 1):
        events = build([text[:offset], text[offset:]], tool)
        exchange = sse_exchange_of(events)
        body = Templater(NO_SECRETS).record(exchange)["response"]["body"]["sse"]
        assert secret not in joined_streams(body), offset
        assert REDACTED in joined_streams(body)
        assert len(body) == len(events)  # the framing is kept: one event for each event received


def sse_exchange_of(events: list[str]) -> Exchange:
    return Exchange(
        "POST",
        "/v1/chat/completions",
        "",
        b"{}",
        200,
        [("content-type", "text/event-stream")],
        "".join(events).encode(),
    )


def test_a_fixture_holding_a_streamed_key_is_refused_naming_the_event_never_the_key() -> None:
    secret = "sk-proj-" + "Zq9" * 10
    events = chat_events(["Your key: sk-pr", secret[5:20], secret[20:] + " ok"], tool=False)
    doc = {"channels": {"model": [{"response": {"body": {"sse": events}}}]}}
    where, kind = find_credential(doc, NO_SECRETS)
    assert where == "/channels/model/0/response/body/sse/0"
    assert "streamed" in kind and secret not in kind and secret[5:20] not in kind


def test_a_fixture_holding_a_key_in_a_base64_body_is_refused() -> None:
    secret = "sk-ant-" + "Q1w" * 8
    raw = multipart([("file", PNG), ("note", secret.encode())])
    doc = {"channels": {"model": [{"request": {"base64": base64.b64encode(gzip.compress(raw)).decode()}}]}}
    assert find_credential(doc, NO_SECRETS) == (
        "/channels/model/0/request/base64",
        "Anthropic API key, base64-encoded",
    )


def test_a_redacted_binary_request_still_matches_its_recording() -> None:
    secret = "sk-proj-" + "Mn4" * 10
    raw = PNG + secret.encode() + b"\r\napi_key=short12\r\n"  # a binary upload, not multipart
    exchange = Exchange("POST", "/v1/files", "", raw, 200, [("content-type", "application/json")], b"{}")
    stored = Templater(NO_SECRETS).record(exchange)
    decoded = base64.b64decode(stored["request"]["base64"])
    assert secret.encode() not in decoded and b"short12" not in decoded
    live = request_key(
        "openai", "POST", "/v1/files", "", {"base64": base64.b64encode(raw).decode()}, NO_SECRETS
    )
    assert live.hashes == stored["hashes"]


# --- no false positives -----------------------------------------------------------------------------


def _embedding(seed: int) -> str:
    rng = random.Random(seed)
    return base64.b64encode(struct.pack("<1536f", *(rng.uniform(-1, 1) for _ in range(1536)))).decode()


ORDINARY = [
    "the ring bearer returned to the Shire",
    "Bearer of bad news, the ring bearer carried it",
    "commit 3f2a9c1b7e8d4f6a0b2c3d4e5f60718293a4b5c6 fixed the secret santa page",
    "session 123e4567-e89b-12d3-a456-426614174000 started",
    "the key point: keep it short; the token budget is 1024",
    '{"max_tokens": 1024, "prompt_cache_key": "user-42-history", "signature": "EqQBCkgIARABGAIiQM"}',
    '{"logprobs": {"content": [{"token": "Hello", "logprob": -0.1}]}, "author": "Jane Doe"}',
    "OPENAI_MODEL=gpt-4o-mini APP_ENV=production PORT=8080 DEBUG=true",
    "Password reset emails are sent daily; see https://example.com/docs?page=2&lang=en",
    "An AWS region such as us-east-1 and the sha 0123456789abcdef0123456789abcdef01234567",
    *(_embedding(seed) for seed in range(20)),
]


@pytest.mark.parametrize("text", ORDINARY, ids=[t[:30] for t in ORDINARY])
def test_ordinary_content_is_left_untouched(text: str) -> None:
    assert NO_SECRETS.redact(text) == text
    assert NO_SECRETS.find(text) is None


def test_dotenv_settings_are_not_secrets_but_credentials_are(tmp_path) -> None:
    (tmp_path / ".env").write_text(
        "OPENAI_MODEL=gpt-4o-mini\nAPP_ENV=production\nPORT=8080\nDEBUG=true\nLOG_LEVEL=info\n"
        "FEATURE_FLAGS=enabled\nREGION=us-east-1\nCACHE_DIR=/var/cache/agent\n"
        "MY_SERVICE_TOKEN=tok-0b8f2c9e\nDB_PASSWORD='correct horse'\nAWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG\n"
        "UNNAMED=Zx81KqP0aLm29TvB44nQ\n",
        encoding="utf-8",
    )
    assert set(load_dotenv_values(tmp_path)) == {
        "tok-0b8f2c9e",
        "correct horse",
        "wJalrXUtnFEMI/K7MDENG",
        "Zx81KqP0aLm29TvB44nQ",
    }


def _strings(node: Any) -> Iterator[str]:
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for key, value in node.items():
            if str(key).lower() != "headers":  # vcrpy's own placeholders for the recorded auth headers
                yield from _strings(value)
    elif isinstance(node, list):
        for item in node:
            yield from _strings(item)


LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
CASSETTES = sorted(
    [*REAL_CASSETTES.glob("*/*.yaml"), *REAL_CASSETTES.parent.glob("real-cassettes-extra/**/*.yaml")]
)


@needs_shared
def test_real_recorded_exchanges_hold_nothing_the_rules_call_a_secret() -> None:
    # Real traffic of other projects (bodies, SSE streams, tool calls), whose keys vcrpy filtered out:
    # every string in it, and every stream joined, must pass the rules untouched.
    flagged = []
    for path in CASSETTES:
        for text in _strings(yaml.load(path.read_text(encoding="utf-8"), Loader=LOADER)):
            if NO_SECRETS.find(text) or (text.startswith(("data:", "event:")) and _streamed_hit(text)):
                flagged.append(f"{path.name}: {NO_SECRETS.find(text) or 'stream'}")
    assert flagged == []


def _streamed_hit(text: str) -> bool:
    return find_streamed_secret(split_sse(text), NO_SECRETS) is not None


def test_names_are_judged_by_their_words() -> None:
    secret = [
        "X-Custom-Auth",
        "x-api-key",
        "apiKey",
        "client_secret",
        "DB_PASSWORD",
        "set-cookie",
        "access_token",
    ]
    ordinary = ["max_tokens", "prompt_cache_key", "signature", "token", "author", "mcp-session-id", "session"]
    assert [n for n in secret if not is_secret_key(n)] == []
    assert [n for n in ordinary if is_secret_key(n)] == []
    assert all(
        is_secret_param(n) for n in ("sessionid", "session_id", "sig", "X-Amz-Signature", "key", "auth")
    )


# The read-time scan and the request key first look at all of a document's strings joined; only a
# document where that finds something is scanned string by string. Both must agree on every document.
FRAGMENTS = st.sampled_from(
    [
        "Bearer",
        "bearer ",
        "api-key:",
        "sessionid=",
        "https://user:",
        "@host/db",
        "?sig=",
        '{"password": ',
        'Content-Disposition: form-data; name="api_key"\r\n\r\n',
        "aws_secret_access_key = ",
        "the key point: ",
        '{"db_password": "my old dog"}',  # only the rule for JSON written in a string sees this one
    ]
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(found=secrets_in_context(), data=st.data())
def test_the_joined_scan_and_the_string_by_string_scan_agree(found, data) -> None:
    _secret, written, env = found
    secrets = Secrets.of(env)
    texts = data.draw(st.lists(st.one_of(WORDS, FRAGMENTS, st.sampled_from(ORDINARY[:10])), max_size=6))
    if data.draw(st.booleans()):  # the secret in one string, or cut across two neighbouring ones
        cut = data.draw(st.integers(0, len(written)))
        at = data.draw(st.integers(0, len(texts)))
        texts[at:at] = [written[:cut], written[cut:]] if data.draw(st.booleans()) else [written]
    names = st.sampled_from(["note", "x-api-key", "authorization", "model"])
    last = texts[-1] if texts else ""
    doc = {
        "messages": [{"role": "user", "content": t} for t in texts],
        "headers": {data.draw(names): last},
        "form": [{"name": data.draw(names), "value": last}],
    }
    assert find_credential(doc, secrets) == _first_credential(doc, secrets)
    if secrets.none_in(texts):  # a request key then skips redaction: there must be nothing to redact
        assert [secrets.redact(t) for t in texts] == texts


@pytest.mark.parametrize(
    ("argv", "kept"),
    [
        (["--api-key", "v"], ["--api-key", REDACTED]),
        (["--api-key=v"], [f"--api-key={REDACTED}"]),
        (
            ["-token", "v", "--password", "v", "--client-secret=v"],
            ["-token", REDACTED, "--password", REDACTED, f"--client-secret={REDACTED}"],
        ),
        (["-H", "Authorization: Bearer v"], ["-H", f"Authorization: {REDACTED}"]),
        (
            ["--header=Cookie: a=b", "-H", "Accept: text/plain"],
            [f"--header=Cookie: {REDACTED}", "-H", "Accept: text/plain"],
        ),
        (["env", "API_TOKEN=v", "MODE=fast"], ["env", f"API_TOKEN={REDACTED}", "MODE=fast"]),
        # Flags that only look like one: no value is taken from the next argument.
        (["--no-auth", "agent.py", "--max-tokens", "100", "--key-file", "k.pem"], None),
        (["--model=gpt-4o", "--", "-"], None),
    ],
)
def test_credential_flags_in_a_command_line_are_redacted_in_both_forms(argv, kept):
    assert redact_argv(argv, Secrets.of([])) == (argv if kept is None else kept)
