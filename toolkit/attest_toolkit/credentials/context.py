"""Secrets known by what surrounds them, not by a shape of their own.

A password in a URL (`scheme://user:pass@host`), a secret query parameter (`sig=`, `X-Amz-Signature=`),
a cookie, a value after a credential's name (`api-key: 0123…`, `X-Custom-Auth: …`, `"password": "…"`),
a multipart form field named like a credential, an AWS secret access key near its name, and the
secret-named keys of JSON written inside a string (tool-call arguments, tool results).

Each rule runs only when the lower-cased text holds its clue (a plain substring test), and its pattern
runs on that lower-cased text, starting at a literal: the text of most strings pays a few substring
tests and no pattern at all.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import unquote_plus

from .names import is_secret_key, is_secret_param

REDACTED = "{{redacted}}"
Span = tuple[int, int, str]  # start, end, label

# Every credential's name holds one of these (see secret_names); "code" only as a query parameter.
NAME_WORDS = ("secret", "pass", "auth", "cookie", "credential", "key", "token", "sig", "session", "dsn")
_QUERY_WORDS = (*NAME_WORDS, "code")
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_.-")
_VALUE = r"[^\s\"'\\&;,<>{}]"
_NESTING = 4  # JSON in a string in JSON in a string...: deep enough for tool calls that carry JSON


def mixed_case_and_digits(text: str) -> bool:
    """Upper case, lower case and a digit: a random key, not a git sha, a uuid or a word."""
    return (
        any(c.isupper() for c in text) and any(c.islower() for c in text) and any(c.isdigit() for c in text)
    )


def _has_name_word(lowered: str, words: tuple[str, ...] = NAME_WORDS) -> bool:
    return any(word in lowered for word in words)


def _name_before(text: str, lowered: str, hint_start: int, name_end: int) -> str:
    """The whole name a clue word sits in: `x-custom-` + `auth`, `db_` + `password`."""
    start = hint_start
    while start > 0 and hint_start - start < 40 and lowered[start - 1] in _NAME_CHARS:
        start -= 1
    return text[start:name_end]


def _named(text: str, lowered: str, m: re.Match[str]) -> bool:
    return is_secret_key(_name_before(text, lowered, m.start(), m.end("name")))


# (label, clue, pattern on the lower-cased text, check on the original text). The group `secret` is
# what is redacted.
_Rule = tuple[str, Callable[[str, str], bool], re.Pattern[str], Callable[[str, str, re.Match[str]], bool]]
_RULES: tuple[_Rule, ...] = (
    (
        "password in a URL",
        lambda text, lowered: "://" in text and "@" in text,
        re.compile(r"://[^\s/:@?#\"'<>]{0,200}:(?P<secret>[^\s/@?#\"'<>{}]+)@"),
        lambda text, lowered, m: True,
    ),
    (
        "secret query parameter",
        lambda text, lowered: (
            "=" in text and ("?" in text or "&" in text) and _has_name_word(lowered, _QUERY_WORDS)
        ),
        re.compile(r"[?&](?P<name>[^=&#\s\"'<>]{1,64})=(?P<secret>[^&#\s\"'<>\\{}]+)"),
        lambda text, lowered, m: is_secret_param(unquote_plus(text[m.start("name") : m.end("name")])),
    ),
    (
        "cookie",
        lambda text, lowered: "cookie" in lowered,
        re.compile(r"\b(?:set-)?cookie[ \t]*:[ \t]*(?P<secret>[^\s\"\\{}][^\r\n\"\\]*)"),
        lambda text, lowered, m: True,
    ),
    (
        "secret-named value",
        lambda text, lowered: ("=" in text or ":" in text) and _has_name_word(lowered),
        re.compile(
            r"(?:secret|pass|auth|cookie|credential|key|token|sig|session|dsn)(?P<name>[a-z0-9_.\-]{0,40})"
            r"\\?[\"']?[ \t]*[:=][ \t]*\\?[\"']?(?:(?:bearer|basic|token|digest)[ \t]+)?(?P<secret>"
            + _VALUE
            + "{6,})"
        ),
        _named,
    ),
    (
        "multipart secret field",
        lambda text, lowered: "disposition" in lowered,
        re.compile(
            r"content-disposition:[^\r\n]*?\bname=\"(?P<name>[^\"\r\n]+)\"[^\r\n]*\r?\n"
            r"(?:[^\r\n]+\r?\n)*?\r?\n(?P<secret>[^\r\n]+)"
        ),
        lambda text, lowered, m: is_secret_key(text[m.start("name") : m.end("name")]),
    ),
    (
        "AWS secret access key",
        lambda text, lowered: (
            len(text) >= 40 and ("aws" in lowered or "secret" in lowered or "akia" in lowered)
        ),
        re.compile(
            r"(?:aws|secret|akia|asia).{0,60}?(?<![a-z0-9/+=])(?P<secret>[a-z0-9/+]{40})(?![a-z0-9/+=])"
        ),
        lambda text, lowered, m: mixed_case_and_digits(text[m.start("secret") : m.end("secret")]),
    ),
)


def _lowered(text: str) -> str:
    """Lower case with the offsets of `text` (str.lower can lengthen a few characters, such as 'İ')."""
    lowered = text.lower()
    return lowered if len(lowered) == len(text) else "".join(c.lower()[:1] or c for c in text)


def _rule_spans(text: str, lowered: str, rule: _Rule) -> Iterator[Span]:
    label, _, rx, check = rule
    pos = 0
    while (m := rx.search(lowered, pos)) is not None:
        start, end = m.span("secret")
        if check(text, lowered, m) and not text.startswith(REDACTED, start):
            yield start, end, label
            pos = m.end()
        else:  # not a credential: its value may still hold one ("note: api_key=...")
            pos = max(start, m.start() + 1)


def context_spans(text: str) -> list[Span]:
    """Where the secrets known by their surroundings are in `text`."""
    lowered = _lowered(text)
    found: list[Span] = []
    for rule in _RULES:
        if rule[1](text, lowered):
            found.extend(_rule_spans(text, lowered, rule))
    if text.lstrip()[:1] in ("{", "[") and _has_name_word(lowered):
        found.extend(json_in_text_spans(text))
    return found


# --- JSON written inside a string ----------------------------------------------------------------


def _secret_literals(node: Any, escapes: int, out: set[str]) -> None:
    """How each secret-keyed string value in `node` is written in the text it was parsed from."""
    if isinstance(node, dict):
        for key, value in node.items():
            if isinstance(value, str) and value and value != REDACTED and is_secret_key(key):
                out.add(_escaped(value, escapes))
            else:
                _secret_literals(value, escapes, out)
    elif isinstance(node, list):
        for item in node:
            _secret_literals(item, escapes, out)
    elif isinstance(node, str) and escapes < _NESTING:
        inner = _parse_json_text(node)
        if inner is not None:
            _secret_literals(inner, escapes + 1, out)


def _escaped(value: str, times: int) -> str:
    for _ in range(times):
        value = json.dumps(value, ensure_ascii=False)[1:-1]
    return value


def _parse_json_text(text: str) -> Any:
    """The JSON object or array `text` holds (tool-call arguments, a tool's result), or None."""
    if text.lstrip()[:1] not in ("{", "[") or not _has_name_word(text.lower()):
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def json_in_text_spans(text: str) -> list[Span]:
    """Secret-keyed values of JSON written inside `text`, found with the same rule as JSON bodies."""
    parsed = _parse_json_text(text)
    if parsed is None:
        return []
    literals: set[str] = set()
    _secret_literals(parsed, 1, literals)
    found: list[Span] = []
    for literal in literals:
        start = text.find(literal)
        while start >= 0:
            found.append((start, start + len(literal), "value of a secret-named key in JSON text"))
            start = text.find(literal, start + len(literal))
    return found
