"""Which hosts are model providers, and the error a connection to one of them raises."""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path

# The one host list, shared with the Vitest helper (see its `about`).
HOSTS_FILE = Path(__file__).resolve().parent.parent / "providers" / "hosts.json"
_HOSTS = json.loads(HOSTS_FILE.read_text(encoding="utf-8"))

# Exact provider API hosts (the seed's list, and OpenAI's data-residency endpoints).
BLOCKED_HOSTS = frozenset(_HOSTS["hosts"])
# The seed's wildcard forms (Vertex AI regions, Azure resources, Bedrock regions).
_BLOCKED_PATTERN = re.compile("|".join(f"(?:{p['pattern']})" for p in _HOSTS["patterns"]))


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
