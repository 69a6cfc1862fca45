"""The providers the proxy serves: one record per provider, and the questions the rest of the package
asks about them (which provider a path or host belongs to, how its body splits, its ids, its usage).

Adding a provider is one module here that defines `PROVIDER` (see `base.Provider`), imported and
listed below; nothing else lists providers, and no code outside this package names one. The first one
(OpenAI) is the default: a path no other provider claims is OpenAI's, as an OpenAI-compatible
gateway's paths are.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import Any

from . import (
    anthropic,
    azure,
    bedrock,
    deepseek,
    gemini,
    groq,
    mistral,
    openai,
    openrouter,
    otlp,
    together,
    vertex,
)
from .base import (
    Endpoint,
    KeyPattern,
    Provider,
    ReplyModel,
    ReplyParts,
    Shape,
    Signer,
    SigningFailed,
    Streamed,
    ToolCall,
    ToolCalls,
    UsageFields,
)

_ALL = (
    openai.PROVIDER,
    anthropic.PROVIDER,
    otlp.PROVIDER,
    gemini.PROVIDER,
    azure.PROVIDER,
    vertex.PROVIDER,
    groq.PROVIDER,
    mistral.PROVIDER,
    together.PROVIDER,
    deepseek.PROVIDER,
    openrouter.PROVIDER,
    bedrock.PROVIDER,
)
PROVIDERS: dict[str, Provider] = {p.name: p for p in _ALL}
DEFAULT = _ALL[0]
RECORDED: tuple[str, ...] = tuple(name for name, p in PROVIDERS.items() if p.records)
# Providers whose calls are only counted, accepted and answered empty (OTLP traces).
COUNTED: frozenset[str] = frozenset(PROVIDERS) - frozenset(RECORDED)
# Checked before the default, the most recently added first: its marks and paths are the narrower.
_SPECIFIC = [p for p in reversed(PROVIDERS.values()) if p is not DEFAULT]

ENDPOINTS: tuple[Endpoint, ...] = tuple(e for p in PROVIDERS.values() for e in p.endpoints)
ID_SHAPES: dict[tuple[str, str], Shape | None] = {
    (p.name, prefix): shape for p in PROVIDERS.values() for prefix, shape in p.ids.items()
}
ID_PREFIXES: frozenset[str] = frozenset(prefix for _, prefix in ID_SHAPES)


def provider_for(path: str, hint: str | None = None) -> str:
    """The provider of a request path; `hint` (a provider or host name) wins."""
    named = provider_of_host(hint) if hint else None
    if named is not None:
        return named
    for p in _SPECIFIC:
        if p.path is not None and p.path.search(path):
            return p.name
    return DEFAULT.name


def provider_of_host(host: str) -> str | None:
    """The provider whose host marks `host` (a host or provider name) carries, or None."""
    lowered = host.lower()
    return next((p.name for p in [*_SPECIFIC, DEFAULT] if any(m in lowered for m in p.host_marks)), None)


def route(provider: str, path: str) -> tuple[str, str]:
    """The provider and path of a request the proxy got as `/<provider><path>`: the provider's base-URL
    marker dropped, and a path that only a provider sent under `provider`'s base URL can have given to
    that one (google-genai sends Vertex AI calls to the Gemini base URL when the environment chose it)."""
    marker = PROVIDERS[provider].path_marker
    if marker and (path == f"/{marker}" or path.startswith(f"/{marker}/")):
        path = path[len(marker) + 1 :] or "/"
    for p in _SPECIFIC:
        if provider in p.also_under and p.path is not None and p.path.search(path):
            return p.name, path
    return provider, path


@functools.lru_cache(maxsize=1024)  # a handful of paths, asked again on every call's key
def endpoint_for(path: str) -> Endpoint | None:
    """The endpoint whose body a request to `path` has, or None (its body is all parameters)."""
    path = path.rstrip("/")
    return next((e for e in ENDPOINTS if path.endswith(e.suffix)), None)


def model_of(path: str, body: Any) -> str | None:
    """The model a call asks for: the body's `model`, else the one its path names (Gemini's)."""
    model = body.get("model") if isinstance(body, dict) else None
    if isinstance(model, str):
        return model
    return _model_in_path(path)


def output_limit(body: Any) -> int | None:
    """The most output tokens a request body lets its answer have (the largest cap it sets, in any
    provider's fields), or None when it sets none."""
    found = [n for n in (_dotted(body, f) for f in OUTPUT_LIMITS) if n is not None]
    return max(found) if found else None


def _dotted(body: Any, path: str) -> int | None:
    for name in path.split("."):
        body = body.get(name) if isinstance(body, dict) else None
    # a bool is an int to Python, never a token count
    return body if isinstance(body, int) and not isinstance(body, bool) and body >= 0 else None


@functools.lru_cache(maxsize=1024)
def _model_in_path(path: str) -> str | None:
    endpoint = endpoint_for(path)
    found = endpoint.model_in_path.search(path) if endpoint and endpoint.model_in_path else None
    return found.group(1) if found else None


def error_body(provider: str, status: int, message: str) -> dict[str, Any]:
    """The body of an error the proxy answers itself (a miss, an upstream it cannot reach), in the
    provider's own form, so its SDK raises its usual error with `message` in it."""
    found = PROVIDERS.get(provider)
    form = found.error if found is not None and found.error is not None else DEFAULT.error
    assert form is not None
    return form(status, message)


def error_headers(provider: str, status: int) -> dict[str, str]:
    """The headers that go with `error_body` (AWS SDKs read an error's kind from `x-amzn-ErrorType`)."""
    found = PROVIDERS.get(provider)
    return found.error_headers(status) if found is not None and found.error_headers is not None else {}


def status_error(provider: str, status: int, message: str) -> tuple[dict[str, Any], dict[str, str]]:
    """The body and headers `provider` itself answers a rate limit, an overload or a server error with
    (OpenAI's shape for a provider that has none of its own), so its SDK raises and retries as it does."""
    found = PROVIDERS.get(provider)
    form = (
        found.status_error if found is not None and found.status_error is not None else DEFAULT.status_error
    )
    assert form is not None
    return form(status, message)


def _merged_usage() -> dict[str, UsageFields]:
    """Each usage container's fields, over every provider that reports usage in it."""
    merged: dict[str, UsageFields] = {}
    for p in PROVIDERS.values():
        if p.usage is None:
            continue
        u, seen = p.usage, merged.get(p.usage.container)
        if seen is not None:
            u = UsageFields(
                u.container,
                tuple(dict.fromkeys(seen.input + u.input)),
                tuple(dict.fromkeys(seen.output + u.output)),
                tuple(dict.fromkeys(seen.cached + u.cached)),
                tuple(dict.fromkeys(seen.also_output + u.also_output)),
            )
        merged[u.container] = u
    return merged


USAGE_FIELDS: Mapping[str, UsageFields] = _merged_usage()
# Every provider's output caps: their names do not collide, so a body is read for all of them.
OUTPUT_LIMITS: tuple[str, ...] = tuple(dict.fromkeys(f for p in PROVIDERS.values() for f in p.output_limits))
# The events that end a stream, any provider's: after one, the answer is complete.
STREAM_END_RE = re.compile(b"|".join(mark for p in PROVIDERS.values() for mark in p.stream_end), re.MULTILINE)
# How model ids that wrap a price table name (Bedrock's) are priced; tried in turn, the first answer wins.
PRICED_AS = tuple(p.priced_as for p in PROVIDERS.values() if p.priced_as is not None)
# The providers whose SDK fetches a Google token before calling, even in replay.
GOOGLE_TOKEN: frozenset[str] = frozenset(name for name, p in PROVIDERS.items() if p.google_token)
# The first of them: whose error form answers a token request for a session the engine does not know.
GOOGLE_TOKEN_PROVIDER: str = next(name for name, p in PROVIDERS.items() if p.google_token)
# Every provider's key shapes, and the headers that carry a provider credential (besides Authorization).
KEY_PATTERNS: tuple[KeyPattern, ...] = tuple(k for p in PROVIDERS.values() for k in p.key_patterns)
CREDENTIAL_HEADERS: tuple[str, ...] = tuple(
    dict.fromkeys(h for p in PROVIDERS.values() for h in (p.key_header, *p.credential_headers) if h)
)

__all__ = [
    "COUNTED",
    "CREDENTIAL_HEADERS",
    "DEFAULT",
    "ENDPOINTS",
    "GOOGLE_TOKEN",
    "GOOGLE_TOKEN_PROVIDER",
    "ID_PREFIXES",
    "ID_SHAPES",
    "KEY_PATTERNS",
    "PRICED_AS",
    "PROVIDERS",
    "RECORDED",
    "STREAM_END_RE",
    "USAGE_FIELDS",
    "Endpoint",
    "KeyPattern",
    "Provider",
    "ReplyModel",
    "ReplyParts",
    "Shape",
    "Signer",
    "SigningFailed",
    "Streamed",
    "ToolCall",
    "ToolCalls",
    "UsageFields",
    "endpoint_for",
    "error_body",
    "error_headers",
    "model_of",
    "provider_for",
    "provider_of_host",
    "route",
    "status_error",
]
