"""Anthropic: the Messages API (and count_tokens, which is not decomposed)."""

from __future__ import annotations

import re
from typing import Any

from .base import BASE62, Endpoint, Provider, Shape, UsageFields


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
)
