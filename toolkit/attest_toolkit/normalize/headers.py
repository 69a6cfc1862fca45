"""Response headers: which a fixture keeps, which it templates, and which a re-record may see change.

A fixture keeps every response header the provider sent, as sent, since code reads usage, request ids
and rate limits from them (Bedrock's token counts, `with_raw_response`). Two kinds are left out: the
transport's own (the engine frames the body it serves itself) and any that carries a credential or a
cookie. Request ids are templated as ids in bodies are (`{{id_N}}`). Other values that change from call
to call (when the answer was made, how long it took, how much quota is left) are kept as sent, and a
re-record that differs only in them leaves the fixture as it was.
"""

from __future__ import annotations

import fnmatch
import functools
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..credentials.names import is_secret_key
from ..credentials.scan import Secrets
from ..providers import PROVIDERS

# How the bytes travelled, not what was said: the engine frames (and never encodes) what it serves.
TRANSPORT = frozenset({"connection", "keep-alive", "transfer-encoding", "content-length", "content-encoding"})
_REQUEST_IDS = ("*request-id", "*requestid")  # `*` is any run of characters
# Values that change from call to call whatever the provider (HTTP's and its proxies' own); a provider
# names its own such headers in the registry (`Provider.volatile_headers`).
_VOLATILE = (
    "date",
    "age",
    "expires",
    "retry-after",
    "retry-after-ms",
    "server-timing",
    "via",
    "cf-ray",
    "traceresponse",
    "traceparent",
    "x-cloud-trace-context",
    "x-envoy-upstream-service-time",
    *_REQUEST_IDS,
)


def _matches(name: str, patterns: Iterable[str]) -> bool:
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns)


@functools.lru_cache(maxsize=1024)
def is_volatile(name: str, provider: str) -> bool:
    """True for a (lowercase) header whose value a provider changes from call to call."""
    found = PROVIDERS.get(provider)
    own = found.volatile_headers if found is not None else ()
    return _matches(name, _VOLATILE) or _matches(name, own)


def carries_credential(name: str, value: str, secrets: Secrets) -> bool:
    """True for a header named like a credential or a cookie (`set-cookie`, `x-api-key`) or whose
    value holds something the credential scan finds."""
    return is_secret_key(name) or secrets.find(value) is not None


def kept(
    headers: Iterable[tuple[str, str]], secrets: Secrets, template: Callable[[str], str] | None
) -> dict[str, str]:
    """The headers a fixture stores, names lowercased, in the order sent (a repeated name's values
    joined by `, `, as HTTP reads them); `template` (if any) is applied to each request id."""
    stored: dict[str, str] = {}
    for name, value in headers:
        lowered = name.lower()
        if lowered in TRANSPORT or carries_credential(lowered, value, secrets):
            continue
        if template is not None and _matches(lowered, _REQUEST_IDS):
            value = template(value)
        stored[lowered] = f"{stored[lowered]}, {value}" if lowered in stored else value
    return stored


def steady(interaction: Mapping[str, Any]) -> dict[str, Any]:
    """A model interaction without the header values that change from call to call: what a
    re-record compares, so one of identical traffic leaves the fixture byte for byte."""
    response = interaction["response"]
    headers = response.get("headers") or {}
    provider = interaction["provider"]
    kept_steady = {k: v for k, v in headers.items() if not is_volatile(k.lower(), provider)}
    return {**interaction, "response": {**response, "headers": kept_steady}}
