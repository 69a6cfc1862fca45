"""Volatile values: provider ids, UUIDs, timestamps and emails, and their `{{kind_N}}` placeholders.

Capture replaces each distinct raw value with a placeholder numbered across the whole run; matching
renumbers raw values and placeholders alike by first occurrence within the request, so an id the agent
generates today, and one a replayed response handed back (`call_{{id_1}}`), both equal the recording.

Matching runs on every replayed call, so the scan is built for speed: one regular expression finds the
character every volatile value contains (`-`, `_`, `@` or `{`), which the regex engine scans for
quickly, and the part of the value before that character (an id's prefix, a UUID's first group, a
timestamp's year, an email's local part) is checked by looking back from it.
"""

from __future__ import annotations

import re
import string
from collections.abc import Callable

from ..providers import ID_PREFIXES
from .timestamps import EPOCH

# ID_PREFIXES: the prefixes of provider-generated ids, separator included (each provider's `ids`). The
# tail after the prefix must look random (16+ letters and digits, mixing letters and digits or upper
# and lower case: OpenAI's chatcmpl- tails can be letters only), so "run_tests" or "file-name" stay text.
_LONGEST_PREFIX = max(map(len, ID_PREFIXES))
# Completion ids OpenAI-compatible servers (Ollama and the like) number with digits only
# (`chatcmpl-1796410275002`): after these prefixes any digits are an id too. Elsewhere digits alone
# are not random enough to be one (`msg_0123456789`).
_DIGIT_ID_PREFIXES = frozenset({"chatcmpl-", "cmpl-"})

_ANCHOR = re.compile(
    r"[-_@{](?:"
    # {{id_7}}: a placeholder already in the text (the anchor is its first brace)
    r"(?<=\{)\{(?P<pkind>id|ts|email)_(?P<pnum>[0-9]+)\}\}"
    # call_AbC...: the random tail of an id; its prefix is checked behind the separator
    r"|(?<=[_-])(?P<tail>(?:(?=[A-Za-z0-9]*[0-9])(?=[A-Za-z0-9]*[A-Za-z])|(?=[A-Za-z0-9]*[a-z])(?=[A-Za-z0-9]*[A-Z]))"
    r"[A-Za-z0-9]{16,})(?![A-Za-z0-9])"
    # 123e4567-e89b-...: a UUID after its first group
    r"|(?<=-)(?P<uuid>[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})(?![A-Za-z0-9])"
    # 2025-01-01T10:00:00Z after its year: a date with a time (a bare date is no timestamp)
    r"|(?<=-)(?P<ts>[01][0-9]-[0-3][0-9][T ][0-2][0-9]:[0-5][0-9](?::[0-6][0-9](?:[.,][0-9]+)?)?"
    r"(?:Z|[+-][0-2][0-9](?::?[0-5][0-9])?)?)(?![0-9])"
    # someone@example.com after its local part
    r"|(?<=@)(?P<domain>(?:[A-Za-z0-9\-]+\.)+[A-Za-z]{2,})(?![A-Za-z0-9\-])"
    # chatcmpl-1796410275002: a digits-only id tail, last so a timestamp or UUID is tried first
    r"|(?<=-)(?P<digits>[0-9]+)(?![A-Za-z0-9])"
    r")"
)
PLACEHOLDER = re.compile(r"\{\{(?P<kind>id|ts|email)_(?P<number>[0-9]+)\}\}")

_LOWER = frozenset(string.ascii_lowercase)
_ALNUM = frozenset(string.ascii_letters + string.digits)
_WORD = _ALNUM | {"_", "-"}
_HEX = frozenset(string.hexdigits)
_DIGITS = frozenset(string.digits)
_LOCAL = _ALNUM | frozenset("._%+-")
_MAX_LOCAL = 64  # the longest email local part (RFC 5321)

KINDS = ("id", "ts", "email")


def _id_start(text: str, at: int) -> int | None:
    """Where the id whose separator is at `at` starts, if a known prefix stands on a word boundary."""
    start = at
    while start > 0 and at - start < _LONGEST_PREFIX and text[start - 1] in _LOWER:
        start -= 1
    if text[start : at + 1] not in ID_PREFIXES or (start > 0 and text[start - 1] in _WORD):
        return None
    return start


def _run_start(text: str, at: int, chars: frozenset[str], exact: int | None, limit: int) -> int | None:
    """The start of the run of `chars` ending at `at` (exactly `exact` long, if given), else None."""
    start = at
    while start > 0 and at - start < limit and text[start - 1] in chars:
        start -= 1
    length = at - start
    if length == 0 or (exact is not None and length != exact) or (start > 0 and text[start - 1] in chars):
        return None
    return start


def _value_start(text: str, m: re.Match[str]) -> int | None:
    at = m.start()
    kind = m.lastgroup
    if kind == "tail":
        return _id_start(text, at)
    if kind == "digits":
        start = _id_start(text, at)
        return start if start is not None and text[start : at + 1] in _DIGIT_ID_PREFIXES else None
    if kind == "uuid":
        start = _run_start(text, at, _HEX, 8, 9)
        return start if start is None or start == 0 or text[start - 1] not in _ALNUM else None
    if kind == "ts":
        return _run_start(text, at, _DIGITS, 4, 5)
    if kind == "domain":
        return _run_start(text, at, _LOCAL, None, _MAX_LOCAL + 1)
    return at  # a placeholder


# What a response says is content: an id or a timestamp is templated there only where it is a value of
# its own, never inside text (a fetched page's "the@agent.instructions", a UUID in a tool's output, a
# signed image URL, an id quoted in an error message), and an email never is.
def _whole(text: str, start: int, end: int) -> bool:
    return start == 0 and end == len(text)


def _quoted(text: str, start: int, end: int) -> bool:
    return (
        start > 0
        and text[start - 1] == '"'
        and (start < 2 or text[start - 2] != "\\")
        and text[end : end + 1] == '"'
    )


# Every placeholder a fixture holds: the volatile values' and the numeric timestamps' (`timestamps`).
_ANY_PLACEHOLDER = re.compile(rf"\{{\{{(?P<kind>id|ts|email|{EPOCH})_(?P<number>[0-9]+)\}}\}}")


def numbered_in_order(text: str) -> str:
    """`text` with its placeholders renumbered by first occurrence, one counter per kind: two fixtures
    that differ only in how their placeholders are numbered (a capture numbers from 1, a partial
    refresh after the numbers it found) give the same text."""
    numbers: dict[str, str] = {}
    counts: dict[str, int] = {}

    def renumber(m: re.Match[str]) -> str:
        found = numbers.get(m.group(0))
        if found is None:
            kind = m.group("kind")
            counts[kind] = counts.get(kind, 0) + 1
            found = numbers[m.group(0)] = f"{{{{{kind}_{counts[kind]}}}}}"
        return found

    return _ANY_PLACEHOLDER.sub(renumber, text)


def has_volatile(text: str) -> bool:
    """False when no `Numbering` would change `text`: it holds no volatile value and no placeholder."""
    return any(_value_start(text, m) is not None for m in _ANCHOR.finditer(text))


class Numbering:
    """Numbers volatile values by first occurrence, one counter per kind.

    `renumber=True` (matching) also renumbers existing placeholders, so `{{id_7}}` from a fixture and a
    fresh raw id in a live request both become `{{id_1}}`. `renumber=False` (capture) keeps existing
    placeholders as they are and numbers raw values for the whole run.
    """

    __slots__ = ("_counts", "_numbers", "_renumber")

    def __init__(self, *, renumber: bool) -> None:
        self._renumber = renumber
        self._numbers: dict[str, str] = {}
        self._counts = dict.fromkeys(KINDS, 0)

    def reserve(self, text: str) -> None:
        """Number new values after every placeholder in `text` (a fixture being extended), so a value
        recorded now never takes a number an existing recording already uses."""
        for m in PLACEHOLDER.finditer(text):
            kind, number = m.group("kind"), int(m.group("number"))
            self._counts[kind] = max(self._counts[kind], number)

    def _placeholder(self, kind: str, identity: str) -> str:
        found = self._numbers.get(identity)
        if found is None:
            self._counts[kind] += 1
            found = self._numbers[identity] = f"{{{{{kind}_{self._counts[kind]}}}}}"
        return found

    def _replacement(self, text: str, start: int, m: re.Match[str]) -> str:
        kind = m.lastgroup or ""  # every alternative of the pattern is a named group
        value = text[start : m.end()]
        if kind == "pnum":
            # A placeholder is its own identity, apart from any raw text.
            return self._placeholder(m.group("pkind"), "\0" + value) if self._renumber else value
        if kind in ("tail", "digits"):
            return text[start : m.start() + 1] + self._placeholder("id", value)
        return self._placeholder({"uuid": "id", "ts": "ts", "domain": "email"}[kind], value)

    def apply(self, text: str) -> str:
        """`text` with each volatile value replaced by its placeholder."""
        return self._apply(text, None)

    def apply_value(self, text: str) -> str:
        """`text` templated only if all of it is one id or timestamp (a JSON string of a response)."""
        return self._apply(text, _whole)

    def apply_quoted(self, text: str) -> str:
        """JSON text (an SSE event) with only the ids and timestamps that are a whole string value."""
        return self._apply(text, _quoted)

    def _apply(self, text: str, where: Callable[[str, int, int], bool] | None) -> str:
        parts: list[str] = []
        done = 0
        for m in _ANCHOR.finditer(text):
            start = _value_start(text, m)
            if start is None or start < done:
                continue
            if where is not None and (m.lastgroup == "domain" or not where(text, start, m.end())):
                continue
            parts.append(text[done:start])
            parts.append(self._replacement(text, start, m))
            done = m.end()
        if not parts:
            return text
        parts.append(text[done:])
        return "".join(parts)
