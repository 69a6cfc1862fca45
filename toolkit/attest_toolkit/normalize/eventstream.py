"""AWS event streams (`application/vnd.amazon.eventstream`): binary frames kept readable, served byte for byte.

Bedrock's streaming answers (ConverseStream, InvokeModelWithResponseStream) are a run of frames: a
prelude (total length, headers length, their CRC32), typed headers, a payload and the CRC32 of the
whole frame. A fixture stores each frame as its headers in order and its payload as text, so a stream
reads like SSE events do; replay encodes each stored event back into one frame with fresh CRCs, which
for an unchanged event are the recorded bytes. InvokeModelWithResponseStream wraps each model event in
`{"bytes": "<base64>"}`: that payload is stored as an object with `bytes` decoded, when encoding it back
gives the same bytes. botocore only decodes frames, and replay must not need botocore, hence this codec.
"""

from __future__ import annotations

import base64
import binascii
import json
import struct
import zlib
from collections.abc import Callable
from typing import Any

MEDIA_TYPE = "application/vnd.amazon.eventstream"
_PRELUDE = struct.Struct(">II")
_CRC = struct.Struct(">I")
_MIN_FRAME = _PRELUDE.size + 2 * _CRC.size
# Header value types by wire code: (stored name, struct format) for the fixed-size ones.
_FIXED = {
    2: ("int8", ">b"),
    3: ("int16", ">h"),
    4: ("int32", ">i"),
    5: ("int64", ">q"),
    8: ("timestamp", ">q"),
}
_BY_NAME = {name: (code, fmt) for code, (name, fmt) in _FIXED.items()}
_STRING, _BYTES, _UUID = 7, 6, 9

Event = dict[
    str, Any
]  # {"headers": [[name, value], ...], "payload": str | {"bytes": str, ...} | {"base64": str}}


def _crc(data: bytes) -> int:
    return zlib.crc32(data) & 0xFFFFFFFF


def _read_value(data: bytes, at: int) -> tuple[Any, int]:
    code = data[at]
    at += 1
    if code in (0, 1):
        return code == 0, at
    if code in _FIXED:
        name, fmt = _FIXED[code]
        size = struct.calcsize(fmt)
        return {name: struct.unpack_from(fmt, data, at)[0]}, at + size
    if code == _UUID:
        return {"uuid": data[at : at + 16].hex()}, at + 16
    if code not in (_STRING, _BYTES):
        raise ValueError(f"unknown header type {code}")
    (length,) = struct.unpack_from(">H", data, at)
    raw = data[at + 2 : at + 2 + length]
    if len(raw) != length:
        raise ValueError("a header value runs past its frame")
    value = raw.decode("utf-8") if code == _STRING else {"bytes": base64.b64encode(raw).decode("ascii")}
    return value, at + 2 + length


def _headers(data: bytes) -> list[list[Any]]:
    headers: list[list[Any]] = []
    at = 0
    while at < len(data):
        length = data[at]
        name = data[at + 1 : at + 1 + length].decode("utf-8")
        value, at = _read_value(data, at + 1 + length)
        headers.append([name, value])
    if at != len(data):
        raise ValueError("the headers run past their length")
    return headers


def _stored_payload(raw: bytes) -> Any:
    """Text when it is text; a `{"bytes": ...}` wrapper with the model's event decoded, when exact."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(raw).decode("ascii")}
    try:
        wrapper = json.loads(text)
        inner = base64.b64decode(wrapper["bytes"], validate=True).decode("utf-8")
    except (ValueError, KeyError, TypeError, binascii.Error):
        return text
    decoded = {**wrapper, "bytes": inner}
    return decoded if _payload_bytes(decoded) == raw else text


def split_frames(raw: bytes) -> list[Event] | None:
    """The events of an event-stream body, or None when it is not well-formed (a CRC, a length)."""
    events: list[Event] = []
    at = 0
    try:
        while at < len(raw):
            total, header_length = _PRELUDE.unpack_from(raw, at)
            frame = raw[at : at + total]
            if total < _MIN_FRAME or len(frame) != total:
                return None
            (prelude_crc,) = _CRC.unpack_from(frame, _PRELUDE.size)
            (message_crc,) = _CRC.unpack_from(frame, total - _CRC.size)
            if prelude_crc != _crc(frame[: _PRELUDE.size]) or message_crc != _crc(frame[: -_CRC.size]):
                return None
            start = _PRELUDE.size + _CRC.size
            headers = _headers(frame[start : start + header_length])
            payload = frame[start + header_length : -_CRC.size]
            events.append({"headers": headers, "payload": _stored_payload(payload)})
            at += total
    except (struct.error, ValueError, IndexError, UnicodeDecodeError):
        return None
    return events


def _encode_value(value: Any) -> bytes:
    if isinstance(value, bool):
        return bytes([0 if value else 1])
    if isinstance(value, str):
        raw = value.encode("utf-8")
        return bytes([_STRING]) + struct.pack(">H", len(raw)) + raw
    ((kind, inner),) = value.items()
    if kind in _BY_NAME:
        code, fmt = _BY_NAME[kind]
        return bytes([code]) + struct.pack(fmt, inner)
    if kind == "uuid":
        import uuid  # it imports `platform`: only a Bedrock stream's header with a UUID needs it

        return bytes([_UUID]) + uuid.UUID(hex=inner).bytes
    raw = base64.b64decode(inner)
    return bytes([_BYTES]) + struct.pack(">H", len(raw)) + raw


def _payload_bytes(payload: Any) -> bytes:
    if isinstance(payload, str):
        return payload.encode("utf-8")
    if set(payload) == {"base64"}:
        return base64.b64decode(payload["base64"])
    wrapped = {**payload, "bytes": base64.b64encode(payload["bytes"].encode("utf-8")).decode("ascii")}
    return json.dumps(wrapped, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def encode_frame(event: Event) -> bytes:
    """One stored event as its frame on the wire."""
    headers = b"".join(
        bytes([len(name.encode("utf-8"))]) + name.encode("utf-8") + _encode_value(value)
        for name, value in event["headers"]
    )
    payload = _payload_bytes(event["payload"])
    total = _MIN_FRAME + len(headers) + len(payload)
    prelude = _PRELUDE.pack(total, len(headers))
    head = prelude + _CRC.pack(_crc(prelude)) + headers + payload
    return head + _CRC.pack(_crc(head))


def map_texts(event: Event, change: Callable[[str], str]) -> Event:
    """The event with `change` applied to its payload's text (the model's own event, when wrapped)."""
    payload = event["payload"]
    if isinstance(payload, str):
        payload = change(payload)
    elif "bytes" in payload:
        payload = {**payload, "bytes": change(payload["bytes"])}
    return {**event, "payload": payload}


def texts(event: Event) -> list[str]:
    payload = event["payload"]
    if isinstance(payload, str):
        return [payload]
    return [payload["bytes"]] if "bytes" in payload else []


def as_sse(events: list[Event]) -> list[str]:
    """Each event's text as one SSE event (empty for an event without text), so the scan for a secret
    streamed in pieces (`normalize.streams`) reads event streams as it reads SSE."""
    return ["".join(f"data: {text}\n\n" for text in texts(event)) for event in events]


def with_sse(events: list[Event], sse: list[str]) -> list[Event]:
    """`events` with the texts `as_sse` gave, as changed since."""

    def replaced(line: str) -> Callable[[str], str]:
        text = line.removeprefix("data: ").removesuffix("\n\n")
        return lambda _old: text

    return [map_texts(event, replaced(line)) for event, line in zip(events, sse, strict=True)]


def payload_objects(events: list[Event]) -> list[dict[str, Any]]:
    """Each event's JSON payload (the model's own event, when wrapped), for usage and display."""
    objects = []
    for event in events:
        for text in texts(event):
            try:
                value = json.loads(text)
            except ValueError:
                continue
            if isinstance(value, dict):
                objects.append(value)
    return objects
