"""Tool recordings keyed for lookup: the call key a recording and a live call share.

A tool call is matched on its server, what it calls (MCP method and tool name, or HTTP method and
path) and its arguments normalized as model requests are (secrets redacted, volatile values
renumbered), so the key of a recording and of a live call agree. A session's consumption of
them, and its misses, are the engine's (`replay.tool_index`).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..credentials.scan import Secrets
from ..normalize import body_bytes, canonical_hash
from ..normalize.decompose import normal_path, query_pairs
from ..normalize.volatile import Numbering
from ..normalize.walk import Walker
from .mcp import Rpc, rpc_of

if TYPE_CHECKING:
    from aiohttp import web

# Response headers a replay sets itself.
_HOP_HEADERS = frozenset({"content-length", "content-encoding", "transfer-encoding", "connection"})
SESSION_HEADER = "mcp-session-id"
SESSION_MARK = "{{session}}"  # a recorded session id: replay answers with one of its own


def is_session_plumbing(request: web.Request) -> bool:
    """An MCP client's server-to-client event stream (GET) or session end (DELETE): not a call."""
    return request.method in ("GET", "DELETE") and SESSION_HEADER in request.headers


@dataclass(frozen=True)
class CallKey:
    """What a tool request is matched on, for a recording and a live request alike."""

    server: str
    label: str  # "tools/call get_forecast", "GET /orders/{{id_1}}"
    display: str  # "weather.get_forecast", as a miss names it
    hash: str  # the normalized arguments (MCP) or query and body (HTTP)
    rpc: Rpc | None

    @property
    def key(self) -> str:
        return hashlib.sha256(f"{self.server}\n{self.label}\n{self.hash}".encode()).hexdigest()


def normalized(value: Any, secrets: Secrets) -> Any:
    return Walker(secrets, Numbering(renumber=True).apply).walk(value)


def call_key(
    server: str, method: str, path: str, query: str, body: dict[str, Any], secrets: Secrets
) -> CallKey:
    """The key of a tool request; `body` is in the fixture's body form ({"json": ...}, {"text": ...})."""
    rpc = rpc_of(body.get("json"))
    if rpc is not None:
        arguments = canonical_hash(normalized(rpc.arguments(), secrets))
        return CallKey(server, rpc.label, rpc.display(server), arguments, rpc)
    path = path or "/"
    label = f"{method.upper()} {normal_path(path)}"
    value = {
        "query": query_pairs(query, secrets),
        "body": normalized(next(iter(body.values()), None), secrets),
    }
    return CallKey(server, label, f"{server}.{method.upper()} {path}", canonical_hash(value), None)


@dataclass(frozen=True)
class ToolRecording:
    fixture: str
    call: CallKey
    status: int
    headers: tuple[tuple[str, str], ...]
    body: bytes
    events: tuple[str, ...] | None  # SSE, one string per event


def load_recording(fixture: str, item: dict[str, Any], secrets: Secrets) -> ToolRecording:
    response = item["response"]
    body = response.get("body") or {}
    call = call_key(
        item["server"],
        item.get("method", "POST"),
        item.get("path", "/"),
        item.get("query", ""),
        item.get("request") or {},
        secrets,
    )
    headers = tuple(
        (k, v) for k, v in (response.get("headers") or {}).items() if k.lower() not in _HOP_HEADERS
    )
    events = tuple(body["sse"]) if "sse" in body else None
    return ToolRecording(fixture, call, response["status"], headers, body_bytes(body), events)
