"""Nothing of a secret survives recording, wherever in the exchange it travels."""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import quote

import pytest
from attest_toolkit.fixture import find_credential
from attest_toolkit.normalize import Exchange, Templater, request_key
from attest_toolkit.secrets import REDACTED, TOKEN_PATTERNS, Secrets, may_hold_secret
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
