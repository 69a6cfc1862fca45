"""JSON-RPC as MCP uses it: what a message asks for, and a recorded reply re-addressed to its caller.

A replayed reply carries the caller's JSON-RPC id, not the recorded one: clients pair replies with
requests by id, and a replayed agent need not number its requests as the recorded one did.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

# Handshake methods are matched by method alone: their parameters describe the client (its name,
# version, capabilities), which changes with an SDK upgrade, not with the agent's behaviour.
HANDSHAKE = frozenset({"initialize", "server/discover", "ping"})
# Where a request names what it acts on.
_NAMED_BY = {
    "tools/call": "name",
    "prompts/get": "name",
    "resources/read": "uri",
    "resources/subscribe": "uri",
}


@dataclass(frozen=True)
class Rpc:
    method: str
    id: Any  # None for a notification
    params: dict[str, Any]

    @property
    def is_notification(self) -> bool:
        return self.id is None

    @property
    def name(self) -> str | None:
        key = _NAMED_BY.get(self.method)
        value = self.params.get(key) if key else None
        return value if isinstance(value, str) else None

    def arguments(self) -> Any:
        """What a call is matched on besides its method and name."""
        if self.method in HANDSHAKE:
            return {}
        if self.method == "tools/call":
            return self.params.get("arguments", {})
        # `_meta` carries the client's identity and progress tokens, not what is asked.
        return {k: v for k, v in self.params.items() if k != "_meta"}

    @property
    def label(self) -> str:
        """What is called: `tools/call get_forecast`, `tools/list`, `resources/read file:///a`."""
        return f"{self.method} {self.name}" if self.name else self.method

    def display(self, server: str) -> str:
        """How a miss names the call: `weather.get_forecast`, `weather.tools/list`."""
        if self.method == "tools/call" and self.name:
            return f"{server}.{self.name}"
        return f"{server}.{self.label}"


def rpc_of(value: Any) -> Rpc | None:
    """The JSON-RPC request or notification in a parsed body, or None (a plain HTTP body)."""
    if (
        not isinstance(value, dict)
        or value.get("jsonrpc") != "2.0"
        or not isinstance(value.get("method"), str)
    ):
        return None
    params = value.get("params")
    return Rpc(value["method"], value.get("id"), params if isinstance(params, dict) else {})


def rpc_reply(value: Any) -> dict[str, Any] | None:
    """The JSON-RPC reply in a parsed body, or None."""
    if isinstance(value, dict) and value.get("jsonrpc") == "2.0" and ("result" in value or "error" in value):
        return value
    return None


def _readdressed(message: Any, caller_id: Any) -> Any:
    if rpc_reply(message) is not None and "id" in message:
        return {**message, "id": caller_id}
    return message


def readdress_json(body: bytes, caller_id: Any) -> bytes:
    try:
        message = json.loads(body)
    except ValueError:
        return body
    return json.dumps(_readdressed(message, caller_id), ensure_ascii=False, separators=(",", ":")).encode()


def readdress_event(event: str, caller_id: Any) -> str:
    """One SSE event with the reply in its data re-addressed; other events are served as recorded."""
    lines = event.splitlines(keepends=True)
    data = [i for i, line in enumerate(lines) if line.startswith("data:")]
    if not data:
        return event
    payload = "\n".join(lines[i][5:].removeprefix(" ").rstrip("\r\n") for i in data)
    try:
        message = json.loads(payload)
    except ValueError:
        return event
    readdressed = _readdressed(message, caller_id)
    if readdressed is message:
        return event
    first = lines[data[0]]
    newline = first[len(first.rstrip("\r\n")) :] or "\n"
    lines[data[0]] = "data: " + json.dumps(readdressed, ensure_ascii=False, separators=(",", ":")) + newline
    return "".join(line for i, line in enumerate(lines) if i not in data[1:])


def error_reply(caller_id: Any, message: str, code: int = -32011) -> dict[str, Any]:
    """A JSON-RPC error: MCP clients raise it to the agent instead of retrying."""
    return {"jsonrpc": "2.0", "id": caller_id, "error": {"code": code, "message": message}}
