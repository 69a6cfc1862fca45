"""The Gemini API (generativelanguage.googleapis.com), as the google-genai SDK calls it.

The model is in the path (`/v1beta/models/gemini-2.5-flash:generateContent`), not the body.
google-genai reads its base URL from GOOGLE_GEMINI_BASE_URL, and its key from GOOGLE_API_KEY, else
GEMINI_API_KEY, sending it in `x-goog-api-key`. Streaming is `:streamGenerateContent?alt=sse`, whose
events carry no end marker: the one with a `finishReason` is the last. Embeddings go through
`:batchEmbedContents`, whose body is all parameters (as OpenAI's embeddings are).
"""

from __future__ import annotations

import re
from typing import Any

from .base import Endpoint, KeyPattern, Provider, Streamed, ToolCall, UsageFields

_OWN_KEYS = ("contents", "systemInstruction", "system_instruction", "tools", "model")


def _generate(body: dict[str, Any]) -> dict[str, Any]:
    system = body.get("systemInstruction", body.get("system_instruction"))
    return {"system": system, "messages": body.get("contents"), "tools": body.get("tools")}


# google.rpc.Status names of the codes the proxy answers with itself.
_STATUS = {400: "INVALID_ARGUMENT", 402: "RESOURCE_EXHAUSTED", 502: "UNAVAILABLE"}


def error(status: int, message: str) -> dict[str, Any]:
    """Google's error form: google-genai raises ClientError (4xx) or ServerError (5xx) with it."""
    return {"error": {"code": status, "message": message, "status": _STATUS.get(status, "UNKNOWN")}}


# google.rpc.Status names of the statuses a fault injects.
_FAULT_STATUS = {429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 504: "DEADLINE_EXCEEDED"}


def status_error(status: int, message: str) -> tuple[dict[str, Any], dict[str, str]]:
    name = _FAULT_STATUS.get(status, "UNAVAILABLE")
    return {"error": {"code": status, "message": message, "status": name}}, {}


def reply_parts(obj: dict[str, Any]) -> tuple[list[str], list[str]] | None:
    """The text and function calls of a generateContent answer or stream event."""
    if not isinstance(obj.get("candidates"), list):
        return None
    texts: list[str] = []
    tools: list[str] = []
    for candidate in obj["candidates"]:
        content = candidate.get("content") if isinstance(candidate, dict) else None
        for part in (content or {}).get("parts") or []:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                texts.append(part["text"])
            elif isinstance(part, dict) and isinstance(part.get("functionCall"), dict):
                tools.append(str(part["functionCall"].get("name")))
    return texts, tools


def tool_calls(obj: dict[str, Any], streamed: Streamed) -> list[ToolCall]:
    """The function calls of a generateContent answer or stream event (each event carries whole calls)."""
    calls: list[ToolCall] = []
    for candidate in obj.get("candidates") or [] if isinstance(obj.get("candidates"), list) else []:
        content = candidate.get("content") if isinstance(candidate, dict) else None
        for part in (content or {}).get("parts") or []:
            call = part.get("functionCall") if isinstance(part, dict) else None
            if isinstance(call, dict) and call.get("name"):
                calls.append((str(call["name"]), call.get("args")))
    return calls


_MODEL = re.compile(r"/models/([^/:]+):[A-Za-z]+$")

PROVIDER = Provider(
    name="gemini",
    on_httpx=False,
    base_url_vars=(
        "GOOGLE_GEMINI_BASE_URL",  # google-genai (HttpOptions.base_url wins over it), pydantic-ai, LangChain
        "GEMINI_API_BASE",  # LiteLLM's `gemini/` models (the host: it adds /v1beta/models/...)
    ),
    proxy_path="",  # the SDK adds /v1beta (or GOOGLE_GENAI_API_VERSION) and /models/...
    path_marker="generativelanguage.googleapis.com",  # for Vertex AI's calls (see vertex.py)
    key_var="GEMINI_API_KEY",
    key_header="x-goog-api-key",
    upstream_var="ATTEST_GEMINI_UPSTREAM",
    default_upstream="https://generativelanguage.googleapis.com",
    path=re.compile(r"(?:^|/)v1(?:alpha|beta)?/models/[^/:]+:[A-Za-z]+$"),
    host_marks=("generativelanguage", "gemini"),
    endpoints=tuple(
        Endpoint(kind, suffix, _OWN_KEYS, _generate, model_in_path=_MODEL)
        for kind, suffix in (
            ("gemini", ":generateContent"),
            ("gemini", ":streamGenerateContent"),
            ("gemini", ":countTokens"),
        )
    ),
    usage=UsageFields(
        "usageMetadata",
        input=("promptTokenCount",),
        output=("candidatesTokenCount",),
        also_output=("thoughtsTokenCount",),  # thinking tokens are billed as output
    ),
    stream_end=(rb'"finishReason" *:',),
    # thinking tokens count against it; google-genai sends the camelCase form, REST callers either
    output_limits=("generationConfig.maxOutputTokens", "generation_config.max_output_tokens"),
    error=error,
    status_error=status_error,
    reply_parts=reply_parts,
    tool_calls=tool_calls,
    key_patterns=(KeyPattern("Google API key", r"\bAIza[0-9A-Za-z_\-]{35}", ("AIza",)),),  # Vertex AI's too
    clients={"pytest": "genai.Client()", "vitest": "new GoogleGenAI()"},
)
