"""OpenRouter (openrouter.ai), OpenAI-compatible under `/api/v1`; its users call it with the openai SDK.

LiteLLM's `openrouter/` models read OPENROUTER_API_BASE (`.../api/v1`), and code on the openai SDK
passes the same variable as `base_url`. The key is OPENROUTER_API_KEY.
"""

from __future__ import annotations

from .openai import compatible

PROVIDER = compatible(
    "openrouter",
    ("OPENROUTER_API_BASE",),
    "OPENROUTER_API_KEY",
    "https://openrouter.ai",
    "/api/v1",
    clients={"pytest": "OpenAI(base_url=...)", "vitest": "new OpenAI({ baseURL })"},  # the openai SDK's
)
