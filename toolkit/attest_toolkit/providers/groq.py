"""Groq (api.groq.com), OpenAI-compatible under `/openai/v1`.

The groq SDK reads GROQ_BASE_URL (the host: it adds `/openai/v1/chat/completions`) and GROQ_API_KEY;
LiteLLM's `groq/` models read GROQ_API_BASE, which includes `/openai/v1`.
"""

from __future__ import annotations

from .base import KeyPattern
from .openai import compatible

PROVIDER = compatible(
    "groq",
    ("GROQ_BASE_URL", "GROQ_API_BASE"),
    "GROQ_API_KEY",
    "https://api.groq.com",
    var_paths={"GROQ_API_BASE": "/openai/v1"},
    clients={"pytest": "Groq()", "vitest": "new Groq()"},
    key_patterns=(KeyPattern("Groq API key", r"\bgsk_[A-Za-z0-9]{20,}", ("gsk_",)),),
)
