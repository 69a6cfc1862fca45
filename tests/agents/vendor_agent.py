"""A small agent on an OpenAI-compatible vendor, for the vendor tests.

    python vendor_agent.py VENDOR [QUESTION]           one chat completion and one streamed
    python vendor_agent.py litellm VENDOR [QUESTION]   the same through LiteLLM's `VENDOR/` models
    python vendor_agent.py mistralai mistral [QUESTION]  the same through the official `mistralai` SDK

groq and together use their official SDKs built with no arguments (they read GROQ_BASE_URL /
TOGETHER_BASE_URL and their keys); mistral, deepseek and openrouter use the openai SDK with the
vendor's base-URL variable, as their users write it; LiteLLM reads its own variables. The `mistralai`
SDK reads no base-URL variable: its users pass `server_url` (the host, without `/v1`). An API error
exits 4 with its status and message.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import openai

MODELS = {
    "groq": "llama-3.3-70b-versatile",
    "together": "meta-llama/Llama-3.3-70B-Instruct-Turbo",
    "mistral": "mistral-small-latest",
    "deepseek": "deepseek-chat",
    "openrouter": "anthropic/claude-sonnet-4.5",
}
# The openai SDK's users: the variable LiteLLM reads for the vendor, with its default.
BASES = {
    "mistral": ("MISTRAL_API_BASE", "https://api.mistral.ai/v1", "MISTRAL_API_KEY"),
    "deepseek": ("DEEPSEEK_API_BASE", "https://api.deepseek.com/v1", "DEEPSEEK_API_KEY"),
    "openrouter": ("OPENROUTER_API_BASE", "https://openrouter.ai/api/v1", "OPENROUTER_API_KEY"),
}


def client(vendor: str) -> Any:
    if vendor == "groq":
        import groq

        return groq.Groq(max_retries=0)
    if vendor == "together":
        import together

        return together.Together(max_retries=0)
    var, default, key = BASES[vendor]
    return openai.OpenAI(base_url=os.environ.get(var, default), api_key=os.environ[key], max_retries=0)


# LiteLLM's name for each vendor, where it is not the vendor's.
LITELLM = {"together": "together_ai"}


def mistralai_create(model: str, messages: list[dict[str, str]], stream: bool = False) -> Any:
    """The official mistralai SDK's chat, built as its users point it elsewhere: `server_url`."""
    from mistralai.client import Mistral

    server = os.environ.get("MISTRAL_API_BASE", "https://api.mistral.ai/v1").removesuffix("/v1")
    client = Mistral(api_key=os.environ["MISTRAL_API_KEY"], server_url=server)
    if not stream:
        return client.chat.complete(model=model, messages=messages)
    return (event.data for event in client.chat.stream(model=model, messages=messages))


def completions(vendor: str, via: str) -> tuple[Any, str]:
    """A `create(model=, messages=, stream=)` callable and the model name it takes."""
    if via == "mistralai":
        return mistralai_create, MODELS[vendor]
    if via == "litellm":
        import litellm

        return litellm.completion, f"{LITELLM.get(vendor, vendor)}/{MODELS[vendor]}"
    return client(vendor).chat.completions.create, MODELS[vendor]


def main() -> int:
    via = sys.argv[1] if sys.argv[1] in ("litellm", "mistralai") else "sdk"
    args = sys.argv[2:] if via != "sdk" else sys.argv[1:]
    vendor = args[0]
    question = args[1] if len(args) > 1 else "Say hello"
    create, model = completions(vendor, via)
    messages = [{"role": "system", "content": "You are terse."}, {"role": "user", "content": question}]
    try:
        reply = create(model=model, messages=messages)
        print("answer:", reply.choices[0].message.content)
        stream = create(model=model, messages=messages, stream=True)
        print("streamed:", "|".join(c.choices[0].delta.content or "" for c in stream if c.choices))
    except Exception as exc:  # each SDK raises its own APIStatusError
        status = getattr(exc, "status_code", None)
        if status is None:
            raise
        print(f"{vendor} error {status}: {getattr(exc, 'message', exc)}", file=sys.stderr)
        return 4
    return 0


if __name__ == "__main__":
    sys.exit(main())
