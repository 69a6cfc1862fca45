"""OpenAI: chat completions, responses, and every other `/v1/...` endpoint (the default provider)."""

from __future__ import annotations

from typing import Any

from .base import (
    BASE62,
    HEX,
    OPENAI_CLIENTS,
    Endpoint,
    KeyPattern,
    Provider,
    Shape,
    Streamed,
    ToolCall,
    UsageFields,
)

SYSTEM_ROLES = ("system", "developer")


def _is_system(item: Any) -> bool:
    return isinstance(item, dict) and item.get("role") in SYSTEM_ROLES


def split_roles(items: Any) -> tuple[list[Any] | None, Any]:
    """The system and developer items of a list, and the others."""
    if not isinstance(items, list):
        return None, items
    system = [item for item in items if _is_system(item)]
    return system or None, [item for item in items if not _is_system(item)]


def _chat(body: dict[str, Any]) -> dict[str, Any]:
    system, messages = split_roles(body.get("messages"))
    tools, functions = body.get("tools"), body.get("functions")
    if isinstance(tools, list) and isinstance(functions, list):
        tools = tools + functions
    elif tools is None:
        tools = functions
    elif functions is not None:
        tools = [tools, functions]
    return {"system": system, "messages": messages, "tools": tools}


def _responses(body: dict[str, Any]) -> dict[str, Any]:
    items = body.get("input")
    if isinstance(items, str):
        items = [{"role": "user", "content": items}]
    system_items, messages = split_roles(items)
    instructions = body.get("instructions")
    system = ([instructions] if instructions is not None else []) + (system_items or [])
    return {"system": system or None, "messages": messages, "tools": body.get("tools")}


# The type and code of each status the proxy answers itself: a replay miss, a call over the spend
# ceiling; any other is an upstream the capture could not reach.
_KINDS = {
    400: ("invalid_request_error", "attest_replay_miss"),
    402: ("insufficient_quota", "attest_capture_ceiling"),
}


def error(status: int, message: str) -> dict[str, Any]:
    """OpenAI's error form; also the form for a path no provider claims."""
    kind, code = _KINDS.get(status, ("upstream_error", "attest_capture_upstream"))
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


# OpenAI's own errors for the statuses a fault injects: (type, code).
_STATUS_KINDS = {429: ("requests", "rate_limit_exceeded")}


def status_error(status: int, message: str) -> tuple[dict[str, Any], dict[str, str]]:
    kind, code = _STATUS_KINDS.get(status, ("server_error", None))
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}, {}


def reply_parts(obj: dict[str, Any]) -> tuple[list[str], list[str]] | None:
    """The text and tool names of a chat completion or a Responses answer, or one of their stream events."""
    if isinstance(obj.get("choices"), list):
        return _chat_parts(obj["choices"])
    texts: list[str] = []
    tools: list[str] = []
    kind = obj.get("type", "")
    if kind == "response.output_text.delta":
        texts.append(str(obj.get("delta", "")))
    elif kind == "response.output_item.added":
        _output_item(obj.get("item") or {}, texts, tools, text=False)
    elif obj.get("object") == "response" and isinstance(obj.get("output"), list):
        for item in obj["output"]:
            _output_item(item, texts, tools, text=True)
    elif not (isinstance(kind, str) and kind.startswith("response.")):
        return None
    return texts, tools


def _chat_parts(choices: list[Any]) -> tuple[list[str], list[str]]:
    texts: list[str] = []
    tools: list[str] = []
    for choice in choices:
        message = (choice.get("message") or choice.get("delta") or {}) if isinstance(choice, dict) else {}
        if isinstance(message.get("content"), str):
            texts.append(message["content"])
        for call in message.get("tool_calls") or []:
            name = (call.get("function") or {}).get("name")
            if name:
                tools.append(name)
    return texts, tools


def _output_item(item: dict[str, Any], texts: list[str], tools: list[str], text: bool) -> None:
    if item.get("type") == "function_call" and item.get("name"):
        tools.append(item["name"])
    elif text and item.get("type") == "message":
        texts.extend(part.get("text", "") for part in item.get("content") or [] if isinstance(part, dict))


def tool_calls(obj: dict[str, Any], streamed: Streamed) -> list[ToolCall]:
    """The function calls of a chat completion (a streamed one's in pieces) or a Responses answer."""
    if obj.get("type") == "response.completed" and isinstance(obj.get("response"), dict):
        obj = obj["response"]  # a Responses stream ends with the whole response, its calls included
    found: list[ToolCall] = []
    for choice in obj.get("choices") or []:
        message = (choice.get("message") or choice.get("delta") or {}) if isinstance(choice, dict) else {}
        for call in message.get("tool_calls") or []:
            function = call.get("function") or {}
            if "delta" in choice:  # a streamed call: its name comes once, its arguments in pieces
                _streamed_piece(streamed, (choice.get("index"), call.get("index")), function)
            elif function.get("name"):
                found.append((function["name"], function.get("arguments") or ""))
    for item in obj.get("output") or [] if obj.get("object") == "response" else []:
        if isinstance(item, dict) and item.get("type") == "function_call" and item.get("name"):
            found.append((item["name"], item.get("arguments") or ""))
    return found


def _streamed_piece(streamed: Streamed, key: Any, function: dict[str, Any]) -> None:
    name = function.get("name")
    if name:
        streamed[(key, name)] = [function.get("arguments") or ""]
        return
    for (k, _), parts in streamed.items():
        if k == key:
            parts.append(function.get("arguments") or "")


def reply_model(obj: dict[str, Any]) -> str | None:
    """The model a chat completion names, or a Responses answer (under `response` in its stream)."""
    for holder in (obj, obj.get("response")):
        if isinstance(holder, dict) and isinstance(holder.get("model"), str):
            return str(holder["model"])
    return None


_HEX50 = Shape(HEX, 50)
# How long the call took and the quota it left (OpenAI's headers, also sent by the vendors that speak its API).
VOLATILE_HEADERS = ("openai-processing-ms", "x-ratelimit-remaining-*", "x-ratelimit-reset-*")

PROVIDER = Provider(
    name="openai",
    base_url_vars=(
        "OPENAI_BASE_URL",  # openai SDK, pydantic-ai, OpenAI Agents SDK, instructor, LiteLLM
        "OPENAI_API_BASE",  # LangChain (read before OPENAI_BASE_URL), LiteLLM, crewAI
    ),
    proxy_path="/v1",  # what the openai SDK and LiteLLM expect
    key_var="OPENAI_API_KEY",
    upstream_var="ATTEST_OPENAI_UPSTREAM",
    default_upstream="https://api.openai.com",
    host_marks=("openai",),
    endpoints=(
        Endpoint("chat", "/chat/completions", ("messages", "tools", "functions", "model"), _chat),
        Endpoint("responses", "/responses", ("instructions", "input", "tools", "model"), _responses),
    ),
    ids={
        "chatcmpl-": Shape(BASE62, 29),
        "cmpl-": Shape(BASE62, 29),
        "call_": Shape(BASE62, 24),
        "file-": Shape(BASE62, 22),
        "req_": Shape(HEX, 32),
        **dict.fromkeys(
            ("resp_", "msg_", "fc_", "rs_", "ws_", "mcp_", "mcpr_", "ig_", "ci_", "cntr_", "ctc_"), _HEX50
        ),
        "conv_": Shape(HEX, 48),
        **dict.fromkeys(
            (
                "asst_",
                "thread_",
                "run_",
                "step_",
                "batch_",
                "vs_",
                "vsfb_",
                "ftjob-",
                "modr-",
                "item_",
                "sess_",
            )
        ),
    },
    usage=UsageFields(
        "usage", input=("prompt_tokens", "input_tokens"), output=("completion_tokens", "output_tokens")
    ),
    stream_end=(
        rb"^data: *\[DONE\]",
        rb"^event: *done\b",  # the Assistants API
        rb'"type" *: *"response\.(?:completed|incomplete|failed)"',  # the Responses API
    ),
    output_limits=("max_tokens", "max_completion_tokens", "max_output_tokens"),  # chat, Responses
    error=error,
    status_error=status_error,
    volatile_headers=VOLATILE_HEADERS,
    reply_parts=reply_parts,
    tool_calls=tool_calls,
    reply_model=reply_model,
    # Also the form of the compatible vendors' keys (DeepSeek's, OpenRouter's `sk-or-`).
    key_patterns=(
        KeyPattern(
            "OpenAI-style API key", r"\bsk-(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_\-]{16,}", ("sk-",)
        ),
    ),
    credential_headers=("openai-api-key",),
)


def compatible(
    name: str,
    base_url_vars: tuple[str, ...],
    key_var: str,
    upstream: str,
    proxy_path: str = "",
    var_paths: dict[str, str] | None = None,
    clients: dict[str, str] | None = None,
    key_patterns: tuple[KeyPattern, ...] = (),
) -> Provider:
    """A vendor that speaks OpenAI's API at its own host: OpenAI's bodies, usage, streams and errors,
    its own variables, key and upstream. Its id tails are not measured (served in the default shape)."""
    return Provider(
        name=name,
        base_url_vars=base_url_vars,
        proxy_path=proxy_path,
        var_paths=var_paths or {},
        key_var=key_var,
        upstream_var=f"ATTEST_{name.upper()}_UPSTREAM",
        default_upstream=upstream,
        host_marks=(name,),
        usage=PROVIDER.usage,
        error=error,
        status_error=status_error,
        volatile_headers=VOLATILE_HEADERS,
        clients=clients or OPENAI_CLIENTS,
        key_patterns=key_patterns,
    )
