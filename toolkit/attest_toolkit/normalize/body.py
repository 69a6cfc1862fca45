"""Bodies in the fixture's form, and query-string redaction."""

from __future__ import annotations

import base64
import binascii
import gzip
import json
import zlib
from typing import Any
from urllib.parse import unquote_plus

from ..credentials.names import is_secret_param
from ..credentials.scan import REDACTED, Secrets
from ..errors import FixtureError
from . import eventstream, jsontext
from .multipart import parse_multipart
from .sse import split_sse

# {"json": ...} | {"text": str} | {"sse": [str, ...]} | {"eventstream": [event, ...]}
# | {"multipart": [part, ...]} | {"base64": str} | {}
Body = dict[str, Any]


def _media_type(content_type: str | None) -> str:
    return (content_type or "").split(";", 1)[0].strip().lower()


def parse_body(raw: bytes, content_type: str | None) -> Body:
    """The fixture form of a body: JSON parsed, SSE and AWS event streams split into events, other
    text as text.

    An upload (multipart/form-data) becomes its parts. Other bytes that are not UTF-8 are the only ones
    stored as base64. Without a content type (a request body), JSON is tried first.
    """
    if not raw:
        return {}
    media = _media_type(content_type)
    if media == eventstream.MEDIA_TYPE:
        events = eventstream.split_frames(raw)
        if events is not None:
            return {"eventstream": events}
    if media in ("", "multipart/form-data") and raw[:2] == b"--":
        parts = parse_multipart(raw)
        if parts is not None:
            return {"multipart": parts}
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(raw).decode("ascii")}
    if media == "text/event-stream":
        return {"sse": split_sse(text)}
    if not media or "json" in media:
        try:
            return {"json": jsontext.loads(raw)}
        except ValueError:
            pass
    return {"text": text}


def body_bytes(body: Body) -> bytes:
    """The bytes to serve for a stored body: compact UTF-8 JSON, the SSE events joined, the text, the
    event-stream frames encoded."""
    if "json" in body:
        return json.dumps(body["json"], ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    if "sse" in body:
        return "".join(body["sse"]).encode("utf-8")
    if "text" in body:
        return body["text"].encode("utf-8")
    if "eventstream" in body:
        return b"".join(eventstream.encode_frame(event) for event in body["eventstream"])
    if "base64" in body:
        try:
            return base64.b64decode(body["base64"], validate=True)
        except binascii.Error:
            raise FixtureError("a stored body is not valid base64") from None
    return b""


_GZIP_MAGIC = b"\x1f\x8b"


def _decode_base64(data: str) -> bytes | None:
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return None


def _gunzip(raw: bytes) -> bytes | None:
    try:
        return gzip.decompress(raw)
    except (OSError, EOFError, zlib.error):
        return None


# Bytes outside ASCII read as NUL: one character per byte (offsets stay those of the bytes), and never
# a letter, so `\xffsk-...` still starts a key at a word boundary.
_ASCII_ONLY = bytes(range(128)) + b"\x00" * 128


def _encoded_bytes(body: Body) -> tuple[bytes, bool] | None:
    """The bytes a base64 body holds, gzip undone, and whether it was gzip; None for other bodies."""
    data = body.get("base64")
    raw = _decode_base64(data) if isinstance(data, str) else None
    if raw is None:
        return None
    if raw[:2] == _GZIP_MAGIC:
        inflated = _gunzip(raw)
        if inflated is not None:
            return inflated, True
    return raw, False


def _as_text(raw: bytes) -> str:
    return raw.translate(_ASCII_ONLY).decode("ascii")


def encoded_text(body: Body) -> str | None:
    """What a base64 body holds (binary multipart, gzip undone) as text a secret can be found in."""
    found = _encoded_bytes(body)
    return _as_text(found[0]) if found is not None else None


def redact_encoded(body: Body, secrets: Secrets) -> Body:
    """A base64 body (binary multipart, gzip) with the secrets in its bytes redacted; others as given.

    The bytes are rewritten only when a secret is found, so an ordinary binary body stays byte for byte.
    """
    found = _encoded_bytes(body)
    if found is None:
        return body
    raw, gzipped = found
    spans = secrets.spans(_as_text(raw))
    if not spans:
        return body
    parts, last = [], 0
    for start, end, _ in spans:
        parts += [raw[last:start], REDACTED.encode()]
        last = end
    parts.append(raw[last:])
    out = b"".join(parts)
    return {"base64": base64.b64encode(gzip.compress(out, mtime=0) if gzipped else out).decode("ascii")}


def redact_query(query: str, secrets: Secrets) -> str:
    """The query string without credential parameters (`key`, `api_key`, ...) and with secrets redacted."""
    if not query:
        return ""
    kept = []
    for part in query.split("&"):
        if not part:
            continue
        name, _, value = part.partition("=")
        if is_secret_param(unquote_plus(name)):
            continue
        if secrets.find(unquote_plus(value)) or secrets.find(unquote_plus(name)):
            part = f"{secrets.redact(unquote_plus(name))}={REDACTED}"
        kept.append(part)
    return "&".join(kept)


def request_content(wire: bytes, content_encoding: str | None) -> bytes:
    """The body a provider reads from `wire` (gzip or deflate undone), for matching and recording.

    The engine's servers keep request bodies as they came (no auto-decompress), so what is forwarded
    is the agent's own bytes with its own Content-Encoding, never decoded bytes labelled gzip."""
    coding = (content_encoding or "").strip().lower()
    if coding not in ("gzip", "x-gzip", "deflate") or not wire:
        return wire
    for wbits in (zlib.MAX_WBITS | 32, -zlib.MAX_WBITS):  # gzip or zlib-wrapped, then raw deflate
        try:
            return zlib.decompress(wire, wbits)
        except zlib.error:
            continue
    return wire  # not what it says it is: matched as it came, and it will not match
