"""The shared real cassettes as raw exchanges, read independently of the importer (for normalize tests)."""

from __future__ import annotations

import gzip
import json
from functools import cache
from typing import Any
from urllib.parse import urlsplit

import yaml
from attest_toolkit.normalize import Exchange
from conftest import REAL_CASSETTES

CASSETTES = REAL_CASSETTES
FILES = sorted(CASSETTES.glob("*/*.yaml"))
IDS = [f"{p.parent.name}/{p.stem}" for p in FILES]


def _request_bytes(request: dict[str, Any]) -> bytes:
    if "parsed_body" in request:
        return json.dumps(request["parsed_body"]).encode()
    body = request.get("body") or b""
    return body.encode() if isinstance(body, str) else body


def _response_bytes(response: dict[str, Any]) -> bytes:
    if "parsed_body" in response:
        return json.dumps(response["parsed_body"]).encode()
    raw = response["body"]["string"]
    raw = raw.encode() if isinstance(raw, str) else raw
    return gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw


@cache
def exchanges(name: str) -> tuple[Exchange, ...]:
    """Every interaction of `name` ("openai/chat_basic_nonstream"), bodies decompressed."""
    doc = yaml.safe_load((CASSETTES / f"{name}.yaml").read_text(encoding="utf-8"))
    out = []
    for item in doc["interactions"]:
        request, response = item["request"], item["response"]
        uri = urlsplit(request["uri"])
        headers = [(k, v) for k, values in response["headers"].items() for v in values]
        out.append(
            Exchange(
                request["method"],
                uri.path,
                uri.query,
                _request_bytes(request),
                response["status"]["code"],
                headers,
                _response_bytes(response),
            )
        )
    return tuple(out)


def content_type(exchange: Exchange) -> str:
    return next((v for k, v in exchange.response_headers if k.lower() == "content-type"), "")


def request_json(name: str, index: int) -> dict[str, Any]:
    return json.loads(exchanges(name)[index].request_body)
