"""Which hosts are model providers, and the error a connection to one of them raises."""

from __future__ import annotations

import re
from functools import lru_cache

# Exact provider API hosts (the seed's list).
BLOCKED_HOSTS = frozenset(
    {
        "api.openai.com",
        "eu.api.openai.com",  # OpenAI's data-residency endpoints
        "us.api.openai.com",
        "api.anthropic.com",
        "generativelanguage.googleapis.com",
        "aiplatform.googleapis.com",
        "api.mistral.ai",
        "api.groq.com",
        "openrouter.ai",
        "api.together.xyz",
        "api.together.ai",
    }
)

# The seed's wildcard forms. A star stands for a non-empty run of name characters; under
# openai.azure.com any depth of subdomain is an Azure OpenAI resource endpoint.
_BLOCKED_PATTERN = re.compile(
    r"""
      [^.]+-aiplatform\.googleapis\.com          # Vertex AI regional endpoints: <region>-aiplatform
    | (?:[^.]+\.)+openai\.azure\.com             # Azure OpenAI: <resource>.openai.azure.com
    | (?:[^.]+\.)+cognitiveservices\.azure\.com  # Azure AI services: <resource>.cognitiveservices.azure.com
    | (?:[^.]+\.)+services\.ai\.azure\.com       # Azure AI Foundry: <resource>.services.ai.azure.com
    | bedrock-runtime(?:-fips)?\.[^.]+\.amazonaws\.com  # AWS Bedrock (and FIPS): bedrock-runtime.<region>...
    """,
    re.VERBOSE,
)


class EgressBlockedError(ConnectionError):
    """A connection from the test process to a known model provider, failed by the egress guard.

    A ConnectionError (an OSError), so HTTP clients surface it the way they surface a refused
    connection, with this error in the cause chain.
    """

    def __init__(self, host: str, port: int | str | None = None) -> None:
        self.host = host
        self.port = port
        where = host if port is None else f"{host}:{port}"
        super().__init__(f"attest egress guard: connection to {where} blocked")

    def __reduce__(self) -> tuple[type[EgressBlockedError], tuple[str, int | str | None]]:
        # OSError pickles its message as args; rebuild from host and port instead.
        return (type(self), (self.host, self.port))


@lru_cache(maxsize=4096)
def is_blocked_host(host: str) -> bool:
    """True when `host` is a provider host the guard blocks (case-insensitive, trailing dot allowed).

    Cached: every connection and name lookup of the test process asks, mostly for the same few names.
    """
    name = host.lower().rstrip(".")
    return name in BLOCKED_HOSTS or _BLOCKED_PATTERN.fullmatch(name) is not None


def check_host(host: str, port: int | str | None) -> None:
    """Raise EgressBlockedError when `host` is a provider host."""
    if is_blocked_host(host):
        raise EgressBlockedError(host, port)
