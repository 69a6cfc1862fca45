"""Capture-side templating: one raw HTTP exchange in, one fixture interaction out.

One Templater serves a whole run, so a volatile value gets the same placeholder wherever it appears
next: the response id the agent echoes in its next request is `{{id_N}}` in both places.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..credentials.scan import Secrets
from ..providers import provider_for
from . import eventstream
from .body import Body, parse_body, redact_encoded, redact_query
from .decompose import request_key
from .headers import kept
from .streams import redact_streamed_secrets
from .timestamps import Timestamps
from .volatile import Numbering
from .walk import Walker

# Top-level request keys under which tool results travel (chat and Anthropic messages, responses input).
_CONVERSATION_KEYS = ("messages", "input")


@dataclass(frozen=True)
class Exchange:
    """One raw HTTP exchange as seen on the wire (capture, import)."""

    method: str  # "POST"
    path: str  # "/v1/chat/completions" (no query)
    query: str  # raw query string without "?", may be ""
    request_body: bytes
    status: int
    response_headers: list[tuple[str, str]]
    response_body: bytes  # already decompressed (gzip/deflate/br) by the caller


def _as_is(text: str) -> str:
    return text


class Templater:
    """Redacts secrets and templates volatile values across the exchanges of one run, in order.

    `verbatim` keeps ids and timestamps as they are (only redacted): an imported cassette's values are
    already fixed, and its tests assert them (snapshots), so replay serves them as recorded. A request
    that echoes a recorded id then holds it as its response did; matching renumbers both alike."""

    def __init__(self, secrets: Secrets, *, verbatim: bool = False) -> None:
        self.secrets = secrets
        self._verbatim = verbatim
        self._numbering = Numbering(renumber=False)
        self._walker = Walker(secrets, _as_is if verbatim else self._numbering.apply)
        # Responses: only ids and timestamps that are values of their own (see volatile._whole).
        self._response_walker = Walker(secrets, _as_is if verbatim else self._numbering.apply_value)
        self._timestamps = Timestamps()

    def learn(self, values: Iterable[str]) -> None:
        """Also redact `values` from now on (the keys a command sends in its headers)."""
        merged = Secrets.of([*self.secrets.values, *values])
        if merged.values != self.secrets.values:
            self.secrets = self._walker.secrets = merged

    def reserve(self, text: str) -> None:
        """Continue the numbering of an existing fixture's placeholders (see `Numbering.reserve`)."""
        self._numbering.reserve(text)
        self._timestamps.reserve(text)

    def text(self, text: str) -> str:
        return self._walker.text(text)

    def request(self, exchange: Exchange) -> tuple[str, str, Body]:
        """The path, query and request body of `exchange` as a fixture stores them."""
        path = self.text(exchange.path)
        query = self.text(redact_query(exchange.query, self.secrets))
        return path, query, self._request(parse_body(exchange.request_body, None))

    def record(self, exchange: Exchange, provider: str | None = None) -> dict[str, Any]:
        """The fixture interaction for `exchange` (see schemas/fixture.schema.json)."""
        provider = provider or provider_for(exchange.path)
        path, query, request = self.request(exchange)
        hashes = request_key(provider, exchange.method, path, query, request, self.secrets).hashes
        content_type = next((v for k, v in exchange.response_headers if k.lower() == "content-type"), None)
        self._timestamps.next_response()
        body = self._body(parse_body(exchange.response_body, content_type))
        interaction: dict[str, Any] = {"provider": provider, "method": exchange.method.upper(), "path": path}
        if query:
            interaction["query"] = query
        interaction["request"] = request
        interaction["hashes"] = hashes
        interaction["response"] = {
            "status": exchange.status,
            "headers": self._headers(exchange.response_headers),
            "body": body,
        }
        return interaction

    def _request(self, body: Body) -> Body:
        value = body.get("json")
        if isinstance(value, dict):
            # Tool results are stored literally (only redacted): matching compares them as they are.
            return {"json": self._walker.walk_request(value, _CONVERSATION_KEYS)}
        if "json" in body or "multipart" in body:
            return {k: self._walker.walk(v) for k, v in body.items()}
        if "text" in body:
            return {"text": self.text(body["text"])}
        return redact_encoded(body, self.secrets)

    def _body(self, body: Body) -> Body:
        """A response body."""
        if "json" in body:
            value = body["json"] if self._verbatim else self._timestamps.json(body["json"])
            return {"json": self._response_walker.walk(value)}
        if "sse" in body:
            # A secret can be streamed in pieces that no single event holds: the joined streams are
            # redacted first, while every piece is still as the provider sent it.
            events = redact_streamed_secrets(body["sse"], self.secrets)
            return {"sse": [self._quoted(event) for event in events]}
        if "text" in body:
            return {"text": self._quoted(body["text"])}
        if "eventstream" in body:
            frames = body["eventstream"]  # a secret streamed in pieces, as for SSE
            frames = eventstream.with_sse(
                frames, redact_streamed_secrets(eventstream.as_sse(frames), self.secrets)
            )
            return {"eventstream": [eventstream.map_texts(e, self._quoted) for e in frames]}
        return redact_encoded(body, self.secrets)

    def _quoted(self, text: str) -> str:
        text = self._walker.redact(text)
        return text if self._verbatim else self._timestamps.text(self._numbering.apply_quoted(text))

    def _headers(self, headers: list[tuple[str, str]]) -> dict[str, str]:
        template = None if self._verbatim else self._numbering.apply_value
        return kept(headers, self.secrets, template)
