"""Replayed values: each placeholder served as a valid value of the provider's shape, and mapped back.

A fixture stores volatile values as placeholders (`toolu_{{id_2}}`). Clients check id shapes (LiteLLM
rewrites an Anthropic tool id that is not `^[a-zA-Z0-9_-]+$`), and a live call after replayed turns
sends the ids back to a provider, so replay serves a real-looking value for each placeholder instead:
the tail an id of that prefix has at that provider (`toolu_01` and 22 letters and digits, `resp_` and
50 hex digits), a UUID for a bare id, an ISO timestamp. The value depends only on the placeholder and
its shape, so it is the same on every run, and the agent sending it back is mapped to the placeholder.
A templated numeric timestamp (`"{{epoch_3}}"`) is served as a number (see `timestamps`).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from ..credentials.scan import Secrets
from ..providers import DEFAULT, ID_SHAPES
from ..providers.base import BASE62, HEX, Shape
from . import timestamps
from .body import parse_body, request_content
from .decompose import RequestKey, request_key
from .volatile import ID_PREFIXES, PLACEHOLDER

# The tail after each prefix is the provider's (`ID_SHAPES`); one it has not measured gets this one.
_DEFAULT = Shape(BASE62, 24)
# Where a served value may start: the candidates `restore` looks up (one scan, then a dict lookup).
_CANDIDATE = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z"
    r"|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
    r"|attest-[0-9]+@example\.com"
    r"|[0-9A-Za-z]{16,}"
)
_FEW = 64  # up to this many served values, `restore` looks for each before it scans
# The id prefix in front of a placeholder, looked for in a short window before each one: a regex
# with an optional `[a-z]+` in front would rescan every run of letters (quadratic on long text).
_PREFIX_BEFORE = re.compile(r"[a-z]+[-_]$")
_PREFIX_WINDOW = 64  # longer than any prefix of ID_PREFIXES


def _digest_chars(seed: str, alphabet: str, length: int) -> str:
    digest = hashlib.sha256(seed.encode()).digest() * 2
    return "".join(alphabet[b % len(alphabet)] for b in digest[:length])


def _mixed(tail: str) -> bool:
    """Looks random to the volatile scan (letters and digits), so a served id is still an id there."""
    return any(c.isdigit() for c in tail) and any(c.isalpha() for c in tail)


def id_tail(number: int, prefix: str, provider: str) -> str:
    """The tail served for `{{id_N}}` after `prefix` (a UUID when there is no prefix)."""
    if not prefix:
        hexes = _digest_chars(f"uuid:{number}", HEX, 32)
        hexes = hexes[:12] + "4" + hexes[13:16] + "8" + hexes[17:]  # version 4, RFC 4122 variant
        return f"{hexes[:8]}-{hexes[8:12]}-{hexes[12:16]}-{hexes[16:20]}-{hexes[20:]}"
    shape = ID_SHAPES.get((provider, prefix)) or _DEFAULT
    salt = 0
    while True:
        tail = shape.lead + _digest_chars(f"{prefix}{number}:{salt}", shape.alphabet, shape.length)
        if _mixed(tail):
            return tail
        salt += 1


def served_value(kind: str, number: int, prefix: str = "", provider: str = DEFAULT.name) -> str:
    """The value served for a placeholder of `kind` ("id", "ts", "email")."""
    if kind == "ts":
        minutes, seconds = divmod(number, 60)
        hours, minutes = divmod(minutes, 60)
        return f"2025-01-01T{hours % 24:02d}:{minutes:02d}:{seconds:02d}Z"
    if kind == "email":
        return f"attest-{number}@example.com"
    return id_tail(number, prefix if prefix in ID_PREFIXES else "", provider)


class Served:
    """The values served for the placeholders of some fixtures, and the way back.

    `learn` fixes each placeholder's shape at its first occurrence (the prefix in front of it), so
    every occurrence of `{{id_3}}` is served as the same value and maps back to the same placeholder.
    """

    def __init__(self) -> None:
        self._forward: dict[tuple[str, int], str] = {}  # ("id", 3) -> tail
        self.back: dict[str, str] = {}  # tail -> "{{id_3}}"

    def learn(self, text: str, provider: str) -> None:
        if "{{" not in text:
            return
        for m in PLACEHOLDER.finditer(text):
            kind, number = m.group("kind"), int(m.group("number"))
            if (kind, number) not in self._forward:
                before = _PREFIX_BEFORE.search(text, max(0, m.start() - _PREFIX_WINDOW), m.start())
                value = served_value(kind, number, before.group(0) if before else "", provider)
                self._forward[kind, number] = value
                self.back.setdefault(value, f"{{{{{kind}_{number}}}}}")

    def serve(self, text: str) -> str:
        """`text` with each placeholder replaced by its served value."""
        if "{{" not in text:
            return text
        text = timestamps.serve(text)
        return PLACEHOLDER.sub(lambda m: self._value(m.group("kind"), int(m.group("number"))), text)

    def _value(self, kind: str, number: int) -> str:
        found = self._forward.get((kind, number))
        if found is None:  # a placeholder seen only here (headers, paths): shaped without a prefix
            found = self._forward[kind, number] = served_value(kind, number)
            self.back.setdefault(found, f"{{{{{kind}_{number}}}}}")
        return found


def restore(text: str, back: dict[str, str]) -> str:
    """`text` with every served value the agent sent back replaced by its placeholder."""
    if not back:
        return text
    # A test's fixtures serve a few values: when none of them is in the text there is nothing to
    # replace, and looking for each is far cheaper than the candidate scan (which tries every position).
    if len(back) <= _FEW and not any(value in text for value in back):
        return text
    return _CANDIDATE.sub(lambda m: back.get(m.group(0), m.group(0)), text)


def restore_bytes(raw: bytes, back: dict[str, str]) -> bytes:
    """`restore` for a request body; bytes that are not UTF-8 (an upload) are left as they are."""
    if not back or not raw:
        return raw
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw
    return restore(text, back).encode("utf-8")


@dataclass(frozen=True, slots=True)
class Sent:
    """A model call as the agent sent it: what its key is computed from."""

    provider: str
    method: str
    path: str
    query: str
    raw: bytes
    content_encoding: str | None = None
    content_type: str | None = None


def key_as_sent(sent: Sent, back: dict[str, str], secrets: Secrets) -> tuple[RequestKey, str]:
    """The key of a call sent to a session serving `back`'s values (which the agent may send back:
    they are read as the placeholders they stand for), and its path as matched."""
    content = restore_bytes(request_content(sent.raw, sent.content_encoding), back)
    body = parse_body(content, sent.content_type)
    path, query = restore(sent.path, back), restore(sent.query, back)
    return request_key(sent.provider, sent.method, path, query, body, secrets), path


KEY_CACHE_CALLS = 512  # distinct calls a fixture remembers the key of
KEY_CACHE_BODY = 256 * 1024  # bytes: a larger call's key is computed each time


def remember_key(keys: dict[Sent, str], sent: Sent, key: str) -> None:
    """Keep a call's key for the next session that gets the same call, within bounds: small bodies
    only (the cache holds the calls), the oldest forgotten first."""
    if len(sent.raw) > KEY_CACHE_BODY:
        return
    if len(keys) >= KEY_CACHE_CALLS:
        del keys[next(iter(keys))]
    keys[sent] = key
