"""Response timestamps that are numbers (`"created": 1764569740`): templated by their key.

A provider stamps every answer with the second it was made (`created` in chat completions and their
chunks, `created_at` in responses and files, `expires_at`, `completed_at`, ...), so a re-record of the
same exchanges would differ in them alone. Capture stores them as `"{{epoch_N}}"`; replay serves a
number again, since clients parse these fields as integers, the same one on every run. Only a whole
number of Unix seconds under a key that names a time is one: a token count, a price or an index never is.
"""

from __future__ import annotations

import re
from typing import Any

# Keys that hold a time: `created`, `timestamp`, and every `..._at` (created_at, expires_at, ...).
_KEY = r"(?:created|timestamp|[a-z_]*_at)"
_KEY_RE = re.compile(_KEY)
# Unix seconds from 2001-09-09 to 2286-11-20: ten digits.
_LOW, _HIGH = 1_000_000_000, 10_000_000_000
# In JSON text (an SSE event): `"created":1764569740`, the number not followed by more of a number.
_IN_TEXT = re.compile(rf'"({_KEY})"(\s*:\s*)([0-9]{{10}})(?![0-9.eE])')
EPOCH = "epoch"  # the placeholder's kind: `"{{epoch_3}}"`
PLACEHOLDER = re.compile(rf'"\{{\{{{EPOCH}_([0-9]+)\}}\}}"')
# Served values count seconds from 2025-01-01T00:00:00Z, as served ISO timestamps do.
SERVED_BASE = 1_735_689_600


def is_timestamp(key: str, value: Any) -> bool:
    return type(value) is int and _LOW <= value < _HIGH and _KEY_RE.fullmatch(key) is not None


def served_epoch(number: int) -> int:
    return SERVED_BASE + number


class Timestamps:
    """Numbers the timestamps of a run's responses with one counter. Within one response the same key
    with the same value is one placeholder (every chunk of a stream carries the same `created`); a new
    response starts afresh, so two answers made in the same second or a second apart template alike."""

    def __init__(self) -> None:
        self._count = 0
        self._seen: dict[tuple[str, int], str] = {}

    def reserve(self, text: str) -> None:
        """Number after every `{{epoch_N}}` in `text` (a fixture being extended, see `Numbering.reserve`)."""
        self._count = max([self._count, *(int(n) for n in PLACEHOLDER.findall(text))])

    def next_response(self) -> None:
        self._seen = {}

    def _placeholder(self, key: str, value: int) -> str:
        found = self._seen.get((key, value))
        if found is None:
            self._count += 1
            found = self._seen[key, value] = f"{{{{{EPOCH}_{self._count}}}}}"
        return found

    def json(self, value: Any) -> Any:
        """A parsed JSON response with its timestamps templated (keys visited in sorted order)."""
        if isinstance(value, dict):
            return {
                k: self._placeholder(k, v) if is_timestamp(k, v) else self.json(v)
                for k, v in sorted(value.items())
            }
        if isinstance(value, list):
            return [self.json(item) for item in value]
        return value

    def text(self, text: str) -> str:
        """JSON text (an SSE event's data) with its timestamps templated as JSON strings."""

        def swap(m: re.Match[str]) -> str:
            key, value = m.group(1), int(m.group(3))
            if not is_timestamp(key, value):
                return m.group(0)
            return f'"{key}"{m.group(2)}"{self._placeholder(key, value)}"'

        return _IN_TEXT.sub(swap, text)


def serve(text: str) -> str:
    """`text` with each templated timestamp, quotes included, served as its number."""
    return PLACEHOLDER.sub(lambda m: str(served_epoch(int(m.group(1)))), text)
