"""Mistral (api.mistral.ai), OpenAI-compatible chat at `/v1/chat/completions`.

The mistralai SDK reads no base-URL variable (only `Mistral(server_url=...)`, the host: it adds
`/v1/...`); LiteLLM's `mistral/` models read MISTRAL_API_BASE, which includes `/v1`. So the proxy sets
MISTRAL_API_BASE, and code on the official SDK passes it, less its `/v1`, as `server_url`.
"""

from __future__ import annotations

from .openai import compatible

PROVIDER = compatible(
    "mistral",
    ("MISTRAL_API_BASE",),
    "MISTRAL_API_KEY",
    "https://api.mistral.ai",
    "/v1",
    clients={"pytest": "Mistral()", "vitest": "new Mistral()"},
)
