"""OpenAI: chat completions, responses, and every other `/v1/...` endpoint (the default provider)."""

from __future__ import annotations

from typing import Any

from .base import BASE62, HEX, OPENAI_CLIENTS, Endpoint, Provider, Shape, UsageFields

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
)


def compatible(
    name: str,
    base_url_vars: tuple[str, ...],
    key_var: str,
    upstream: str,
    proxy_path: str = "",
    var_paths: dict[str, str] | None = None,
    clients: dict[str, str] | None = None,
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
    )
