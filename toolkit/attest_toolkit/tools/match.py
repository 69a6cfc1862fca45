"""Tool recordings keyed for lookup, and a session's consumption of them.

A tool call is matched on its server, what it calls (MCP method and tool name, or HTTP method and
path) and its arguments normalized as model requests are (secrets redacted, volatile values
renumbered), so the key of a recording and of a live call agree. Identical calls consume successive
recordings in order; a miss is diagnosed against the next unused recording of the same call.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from ..credentials.scan import Secrets
from ..normalize import body_bytes, canonical_hash
from ..normalize.decompose import _query_pairs, normal_path
from ..normalize.volatile import Numbering
from ..normalize.walk import Walker
from ..replay import diagnose
from ..replay.diagnose import Miss
from .mcp import Rpc, rpc_of

# Response headers a replay sets itself.
_HOP_HEADERS = frozenset({"content-length", "content-encoding", "transfer-encoding", "connection"})
SESSION_HEADER = "mcp-session-id"
SESSION_MARK = "{{session}}"  # a recorded session id: replay answers with one of its own


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
        "query": _query_pairs(query, secrets),
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


class ToolChannel:
    """One session's tool recordings: looked up by key, each consumed once, in order."""

    def __init__(self, recordings: tuple[ToolRecording, ...]) -> None:
        self.recordings = recordings
        self.by_key: dict[str, list[int]] = {}
        self.by_call: dict[tuple[str, str], list[int]] = {}
        for position, rec in enumerate(recordings):
            self.by_key.setdefault(rec.call.key, []).append(position)
            self.by_call.setdefault((rec.call.server, rec.call.label), []).append(position)
        self._taken: dict[str, int] = {}
        self.used = bytearray(len(recordings))

    def lookup(self, call: CallKey, fixture: str) -> ToolRecording | Miss:
        positions = self.by_key.get(call.key, [])
        taken = self._taken.get(call.key, 0)
        if taken < len(positions):
            self._taken[call.key] = taken + 1
            self.used[positions[taken]] = 1
            return self.recordings[positions[taken]]
        if positions:
            return diagnose.tool_duplicate(fixture)
        return self._diagnose(call, fixture)

    def _diagnose(self, call: CallKey, fixture: str) -> Miss:
        same = self.by_call.get((call.server, call.label), [])
        unused = [p for p in same if not self.used[p]]
        if unused:
            rec = self.recordings[unused[0]]
            return diagnose.tool_unrecorded(call.display, rec.call.hash, call.hash, rec.fixture)
        if same:
            return diagnose.tool_overflow(len(same), fixture)
        return diagnose.tool_unrecorded(call.display, None, call.hash, fixture)

    @property
    def unused(self) -> int:
        return len(self.used) - sum(self.used)
