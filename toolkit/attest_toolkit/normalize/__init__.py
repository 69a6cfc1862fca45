"""Normalization: redaction, volatile templating, provider-aware decomposition, and recording.

- `Templater.record` turns a raw exchange into a fixture interaction (capture, import).
- `request_key` gives the lookup key and component hashes of a stored or live request (replay).
- `parse_body` / `body_bytes` convert between wire bytes and the fixture's body form.
"""

from __future__ import annotations

from ..providers import provider_for
from .body import Body, body_bytes, parse_body, redact_query, request_content
from .claude_code import neutralize
from .decompose import (
    COMPONENTS,
    RequestKey,
    canonical_hash,
    describe_components,
    endpoint_kind,
    key_of,
    request_key,
    upload_parts,
)
from .record import Exchange, Templater
from .sse import split_sse

__all__ = [
    "COMPONENTS",
    "Body",
    "Exchange",
    "RequestKey",
    "Templater",
    "body_bytes",
    "canonical_hash",
    "describe_components",
    "endpoint_kind",
    "key_of",
    "neutralize",
    "parse_body",
    "provider_for",
    "redact_query",
    "request_content",
    "request_key",
    "split_sse",
    "upload_parts",
]
