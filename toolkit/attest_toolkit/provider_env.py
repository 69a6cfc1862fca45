"""The environment variables through which SDKs and agent frameworks find their provider.

Capture and replay point every one of them at the proxy: a framework that reads a variable the proxy
left alone would talk to the provider directly, and a strict replay would pass without replaying it.
The same variables, as the user set them, name the user's own gateway (Azure, a LiteLLM proxy, vLLM,
a company gateway), which capture then records from.
"""

from __future__ import annotations

from collections.abc import Mapping

# Per provider, in the order the user's own value is looked for. The first of each is the official
# SDK's; the proxy's URL for OpenAI ends in /v1 (what the openai SDK and LiteLLM expect), Anthropic's
# does not (the anthropic SDK, langchain-anthropic and LiteLLM add /v1/messages themselves).
BASE_URL_VARS: dict[str, tuple[str, ...]] = {
    "openai": (
        "OPENAI_BASE_URL",  # openai SDK, pydantic-ai, OpenAI Agents SDK, instructor, LiteLLM
        "OPENAI_API_BASE",  # LangChain (read before OPENAI_BASE_URL), LiteLLM, crewAI
    ),
    "anthropic": (
        "ANTHROPIC_BASE_URL",  # anthropic SDK, pydantic-ai, LiteLLM
        "ANTHROPIC_API_URL",  # langchain-anthropic
        "ANTHROPIC_API_BASE",  # LiteLLM
    ),
}
OTLP_TRACES_VAR = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
ALL_VARS: tuple[str, ...] = (*(v for vs in BASE_URL_VARS.values() for v in vs), OTLP_TRACES_VAR)
# The variable each provider's SDKs read their key from.
KEY_VARS: dict[str, str] = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}


def proxy_env(prefix: str) -> dict[str, str]:
    """Every variable pointed at a proxy serving `<prefix>/openai`, `<prefix>/anthropic`, `<prefix>/otlp`."""
    urls = {"openai": f"{prefix}/openai/v1", "anthropic": f"{prefix}/anthropic"}
    env = {var: urls[provider] for provider, names in BASE_URL_VARS.items() for var in names}
    env[OTLP_TRACES_VAR] = f"{prefix}/otlp/v1/traces"
    return env


def user_base_url(provider: str, env: Mapping[str, str]) -> str | None:
    """The base URL the user set for `provider` (their own gateway), if any."""
    return next((env[var] for var in BASE_URL_VARS[provider] if env.get(var, "").strip()), None)
