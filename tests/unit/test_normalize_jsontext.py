"""Request keys parse bodies and encode components with orjson, yet every value and every hash is the
one the `json` module gives: where orjson would differ (big integers, NaN, small floats, lone
surrogates), `json` answers, so no recording's key changes."""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any

import pytest
from attest_toolkit.credentials.scan import Secrets
from attest_toolkit.normalize import COMPONENTS, describe_components, parse_body, request_key
from attest_toolkit.normalize.jsontext import canonical, loads
from conftest import needs_shared
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from normalize_cassettes import IDS, exchanges

SECRETS = Secrets.of(["dotenv-secret-value-123"])
JSON_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def json_canonical(value: Any) -> bytes:
    """The encoding every request key was hashed over before orjson."""
    return JSON_CANONICAL.encode(value).encode("utf-8", "surrogatepass")


def json_hashes(path: str, raw: bytes, query: str = "") -> dict[str, str]:
    """A request's component hashes as the json module alone computes them: parsed with json.loads,
    normalized by the walk, hashed over json's canonical text."""
    body = {"json": json.loads(raw.decode("utf-8"))}
    components = describe_components("openai", "POST", path, query, body, SECRETS)
    return {name: hashlib.sha256(json_canonical(components[name])).hexdigest() for name in COMPONENTS}


def keyed(path: str, raw: bytes, query: str = "") -> dict[str, str]:
    return request_key("openai", "POST", path, query, parse_body(raw, None), SECRETS).hashes


def same(a: Any, b: Any) -> bool:
    """Equal values of equal types all the way down (1 == 1.0 is not enough: the hash tells them apart)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(map(same, a, b))
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    return bool(a == b) and (not isinstance(a, float) or math.copysign(1, a) == math.copysign(1, b))


VALUES = {
    "small floats": [1e-05, 2.5e-05, 1e-07, -7.1850441006303285e-09, 0.0001, 5e-324],
    "other floats": [0.1, 1.0, -0.0, 100.0, 1e16, 1e15, 1.2345678901234568e17, 1.7976931348623157e308],
    "NaN and infinities": [math.nan, math.inf, -math.inf],
    "big integers": [2**63 - 1, 2**63, 2**64 - 1, 2**64, -(2**63), -(2**63) - 1, 10**30],
    "non-ASCII": {"é": "café ☕ 東京", "😀": "astral 😀", "\uffff": "\ue000", "Z": "", "": "empty key"},
    "escapes": '\x00\x01\x1f\x7f \u2028\u2029 "quoted" back\\slash /slash \n\t\r\b\f',
    "lone surrogates": ["\ud800", {"k\udfff": "x"}, "a\ud83d"],
    "a null": {"content": None, "tool_calls": [{"id": "call_1"}]},
    "text that looks like a small float": "about 1e-7 or 0.00001, and null",
    "nesting": {"b": [{"d": [1, 2.5, True, False, None]}], "a": {"c": {}}},
}


@pytest.mark.parametrize("case", list(VALUES))
def test_the_canonical_encoding_is_jsons_byte_for_byte(case: str) -> None:
    assert canonical(VALUES[case]) == json_canonical(VALUES[case])


JSON_LEAF = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(st.characters(exclude_categories=()), max_size=8)
)
JSON_VALUE = st.recursive(
    JSON_LEAF,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(JSON_VALUE)
def test_any_json_value_encodes_as_json_does(value: Any) -> None:
    assert canonical(value) == json_canonical(value)


TEXTS = {
    "big integers": b"[9223372036854775807, 9223372036854775808, 18446744073709551616, -9223372036854775809]",
    "a 30-digit integer": b'{"seed": 123456789012345678901234567890}',
    "long digits in a string only": b'{"order": "1234567890123456789012"}',
    "NaN and infinities": b'{"a": NaN, "b": Infinity, "c": -Infinity}',
    "out-of-range floats": b"[1e400, -1e999, 1.5e-400]",
    "a lone surrogate escape": b'{"text": "\\ud800 alone"}',
    "a surrogate pair escape": b'{"text": "\\ud83d\\ude00"}',
    "duplicate keys": b'{"a": 1, "b": 2, "a": 3}',
    "negative zeros": b"[-0, -0.0, 0.0]",
    "exponents": b"[1E5, 0.1e1, 2.5e-05, 1e-7]",
    "escapes": b'"\\u0000 \\/ \\n \\t \\" \\\\ \\u00e9"',
    "non-ASCII": '{"text": "café ☕ 東京"}'.encode(),
    "whitespace": b' \n { "a" : [ 1 , 2 ] } \n',
}


@pytest.mark.parametrize("case", list(TEXTS))
def test_a_body_parses_to_jsons_value(case: str) -> None:
    assert same(loads(TEXTS[case]), json.loads(TEXTS[case].decode("utf-8")))


NUMBER_TEXT = st.floats(allow_nan=False, allow_infinity=False).map(repr) | st.builds(
    "{}.{}e{}".format,
    st.integers(min_value=0, max_value=10**25),
    st.integers(min_value=0, max_value=10**25),
    st.integers(min_value=-330, max_value=310),
)


@settings(max_examples=400)
@given(NUMBER_TEXT)
def test_any_number_parses_as_json_parses_it(text: str) -> None:
    assert same(loads(f"[{text}]".encode()), json.loads(f"[{text}]"))


REFUSED = {
    "a byte order mark": "\ufeff{}".encode(),
    "a raw control character": b'"\x01"',
    "a trailing comma": b"[1,]",
    "text after the value": b"[1] x",
    "a leading zero": b"01",
    "a bad escape": b'"\\x"',
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_what_json_refuses_stays_refused(case: str) -> None:
    with pytest.raises(ValueError):
        json.loads(REFUSED[case].decode("utf-8"))
    with pytest.raises(ValueError):
        loads(REFUSED[case])
    assert "text" in parse_body(REFUSED[case], None)  # a body json refuses is kept as text, as before


REQUESTS = {
    "small floats": {"model": "m", "messages": [], "temperature": 1e-05, "top_p": 2.5e-07},
    "a big integer seed": {"model": "m", "messages": [], "seed": 2**64},
    "NaN": {"model": "m", "messages": [], "temperature": math.nan},
    "non-ASCII and escapes": {
        "model": "m",
        "messages": [{"role": "user", "content": 'café\n\u2028\x7f "q"'}],
    },
    "a lone surrogate": {"model": "m", "messages": [{"role": "user", "content": "\ud800"}]},
    "a null content with a tool call": {
        "model": "m",
        "messages": [{"role": "assistant", "content": None, "tool_calls": [{"id": "call_Ab12Cd34Ef56Gh78"}]}],
    },
}


@pytest.mark.parametrize("case", list(REQUESTS))
def test_a_request_keeps_the_hashes_json_gave_it(case: str) -> None:
    raw = json.dumps(REQUESTS[case]).encode("utf-8", "surrogatepass")
    assert keyed("/v1/chat/completions", raw) == json_hashes("/v1/chat/completions", raw)


@needs_shared
@pytest.mark.parametrize("name", IDS)
def test_real_requests_keep_the_hashes_json_gave_them(name: str) -> None:
    for exchange in exchanges(name):
        if parse_body(exchange.request_body, None).keys() != {"json"}:
            continue
        raw, path, query = exchange.request_body, exchange.path, exchange.query
        assert keyed(path, raw, query) == json_hashes(path, raw, query)
