"""Mistral (api.mistral.ai), OpenAI-compatible chat at `/v1/chat/completions`.

The mistralai SDK reads no base-URL variable (only `Mistral(server_url=...)`, the host: it adds
`/v1/...`, or `server="eu"` / `"us"` for its regional hosts; its only variables are MISTRAL_API_KEY and
MISTRAL_DEBUG). LiteLLM reads MISTRAL_API_BASE, which includes `/v1`, for most of its Mistral calls,
but MISTRAL_AZURE_API_BASE for its `mistral/` chat models. So the proxy sets both, and code on the
official SDK passes MISTRAL_API_BASE, less its `/v1`, as `server_url`.
"""

from __future__ import annotations

from .openai import compatible

PROVIDER = compatible(
    "mistral",
    ("MISTRAL_API_BASE", "MISTRAL_AZURE_API_BASE"),
    "MISTRAL_API_KEY",
    "https://api.mistral.ai",
    "/v1",
    clients={"pytest": "Mistral()", "vitest": "new Mistral()"},
)
