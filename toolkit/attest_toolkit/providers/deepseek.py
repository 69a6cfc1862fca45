"""DeepSeek (api.deepseek.com), OpenAI-compatible; its users call it with the openai SDK.

No SDK of its own: LiteLLM's `deepseek/` models read DEEPSEEK_API_BASE (with its version path), and
code on the openai SDK passes the same variable as `base_url`. The key is DEEPSEEK_API_KEY.
"""

from __future__ import annotations

from .openai import compatible

PROVIDER = compatible(
    "deepseek",
    ("DEEPSEEK_API_BASE",),
    "DEEPSEEK_API_KEY",
    "https://api.deepseek.com",
    "/v1",
    # its users call it with the openai SDK, its base URL theirs
    clients={"pytest": "OpenAI(base_url=...)", "vitest": "new OpenAI({ baseURL })"},
)
