"""Together AI (api.together.ai), OpenAI-compatible under `/v1`.

The together SDK reads TOGETHER_BASE_URL (the host: it adds `/v1/chat/completions`) and
TOGETHER_API_KEY; LiteLLM's `together_ai/` models read TOGETHER_AI_API_BASE, which includes `/v1`.
"""

from __future__ import annotations

from .openai import compatible

PROVIDER = compatible(
    "together",
    ("TOGETHER_BASE_URL", "TOGETHER_AI_API_BASE"),
    "TOGETHER_API_KEY",
    "https://api.together.ai",
    var_paths={"TOGETHER_AI_API_BASE": "/v1"},
    clients={"pytest": "Together()", "vitest": "new Together()"},
)
