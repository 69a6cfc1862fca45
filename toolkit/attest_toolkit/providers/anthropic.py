"""Anthropic: the Messages API (and count_tokens, which is not decomposed)."""

from __future__ import annotations

import re
from typing import Any

from .base import BASE62, Endpoint, KeyPattern, Provider, Shape, Streamed, ToolCall, UsageFields


def _messages(body: dict[str, Any]) -> dict[str, Any]:
    return {"system": body.get("system"), "messages": body.get("messages"), "tools": body.get("tools")}


def _trim(rest: dict[str, Any]) -> dict[str, Any]:
    metadata = rest.get("metadata")
    if isinstance(metadata, dict) and "user_id" in metadata:
        # Claude Code's device, account and session ids: a run in a new session must still match.
        metadata = {k: v for k, v in metadata.items() if k != "user_id"}
        if metadata:
            rest["metadata"] = metadata
        else:
            del rest["metadata"]
    return rest


_KINDS = {400: "invalid_request_error", 402: "billing_error"}  # the statuses the proxy answers itself


def error(status: int, message: str) -> dict[str, Any]:
    kind = _KINDS.get(status, "api_error")
    return {"type": "error", "error": {"type": kind, "message": message}}


# Anthropic's own error types for the statuses a fault injects (its SDK retries 429 and 5xx, 529 too).
_STATUS_KINDS = {429: "rate_limit_error", 529: "overloaded_error"}


def status_error(status: int, message: str) -> tuple[dict[str, Any], dict[str, str]]:
    kind = _STATUS_KINDS.get(status, "api_error")
    return {"type": "error", "error": {"type": kind, "message": message}}, {}


_STREAM_EVENTS = ("message_start", "message_delta", "message_stop", "content_block_stop", "ping")


def reply_parts(obj: dict[str, Any]) -> tuple[list[str], list[str]] | None:
    """The text and tool names of a Messages answer or one of its stream events."""
    texts: list[str] = []
    tools: list[str] = []
    kind = obj.get("type")
    if kind == "message" and isinstance(obj.get("content"), list):
        for block in obj["content"]:
            _block(block, texts, tools)
    elif kind == "content_block_start":
        _block(obj.get("content_block") or {}, texts, tools)
    elif kind == "content_block_delta":
        delta = obj.get("delta") or {}
        if delta.get("type") == "text_delta":
            texts.append(delta.get("text", ""))
    elif kind not in _STREAM_EVENTS:
        return None
    return texts, tools


def _block(block: dict[str, Any], texts: list[str], tools: list[str]) -> None:
    if block.get("type") == "text":
        texts.append(block.get("text", ""))
    elif block.get("type") in ("tool_use", "server_tool_use") and block.get("name"):
        tools.append(block["name"])


def tool_calls(obj: dict[str, Any], streamed: Streamed) -> list[ToolCall]:
    """The `tool_use` blocks of a Messages answer; a streamed one has its name at the block's start
    and its input in JSON pieces."""
    key = ("block", obj.get("index"))
    block = obj.get("content_block") or {}
    if obj.get("type") == "content_block_start" and block.get("type") == "tool_use" and block.get("name"):
        streamed[(key, block["name"])] = []
    delta = obj.get("delta") or {}
    if obj.get("type") == "content_block_delta" and delta.get("type") == "input_json_delta":
        for (k, _), parts in streamed.items():
            if k == key:
                parts.append(delta.get("partial_json") or "")
    blocks = obj.get("content") if obj.get("type") == "message" else None
    return [
        (block["name"], block.get("input"))
        for block in blocks or []
        if isinstance(block, dict) and block.get("type") == "tool_use" and block.get("name")
    ]


def reply_model(obj: dict[str, Any]) -> str | None:
    """The model a Messages answer names (under `message` in its stream's first event)."""
    for holder in (obj, obj.get("message")):
        if isinstance(holder, dict) and isinstance(holder.get("model"), str):
            return str(holder["model"])
    return None


_TAIL = Shape(BASE62, 22, "01")

PROVIDER = Provider(
    name="anthropic",
    base_url_vars=(
        "ANTHROPIC_BASE_URL",  # anthropic SDK, pydantic-ai, LiteLLM
        "ANTHROPIC_API_URL",  # langchain-anthropic
        "ANTHROPIC_API_BASE",  # LiteLLM
    ),
    proxy_path="",  # the anthropic SDK, langchain-anthropic and LiteLLM add /v1/messages themselves
    key_var="ANTHROPIC_API_KEY",
    key_header="x-api-key",
    upstream_var="ATTEST_ANTHROPIC_UPSTREAM",
    default_upstream="https://api.anthropic.com",
    path=re.compile(r"(?:^|/)v1/(?:messages|complete)(?:/|$)"),
    host_marks=("anthropic",),
    endpoints=(
        Endpoint("messages", "/v1/messages", ("system", "messages", "tools", "model"), _messages, _trim),
    ),
    ids={
        **dict.fromkeys(("toolu_", "srvtoolu_", "mcptoolu_", "msg_", "req_", "file_", "msgbatch_"), _TAIL),
        "container_": None,
    },
    usage=UsageFields(
        "usage",
        input=("input_tokens",),
        output=("output_tokens",),
        cached=("cache_creation_input_tokens", "cache_read_input_tokens"),
    ),
    stream_end=(rb"^event: *message_stop",),
    output_limits=("max_tokens",),
    error=error,
    status_error=status_error,
    volatile_headers=("anthropic-ratelimit-*-remaining", "anthropic-ratelimit-*-reset"),  # the quota left
    clients={"pytest": "Anthropic()", "vitest": "new Anthropic()"},
    reply_parts=reply_parts,
    tool_calls=tool_calls,
    reply_model=reply_model,
    key_patterns=(KeyPattern("Anthropic API key", r"sk-ant-[A-Za-z0-9_\-]{16,}", ("sk-",)),),
    credential_headers=("anthropic-api-key",),
)
