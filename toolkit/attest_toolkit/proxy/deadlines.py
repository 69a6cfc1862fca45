"""A live call's deadlines, in seconds: to connect, and for the whole answer to arrive.

Read from the user's environment. The engine reads them when it starts, so a value that is not a
number of seconds is a usage error before any call, though the live forwarder (and aiohttp) is only
built when a call first goes live.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ..errors import UsageError

CONNECT_TIMEOUT_VAR, CONNECT_TIMEOUT = "ATTEST_LIVE_CONNECT_TIMEOUT", 30.0
TOTAL_TIMEOUT_VAR, TOTAL_TIMEOUT = "ATTEST_LIVE_TIMEOUT", 600.0


@dataclass(frozen=True)
class Deadlines:
    connect: float
    total: float

    @classmethod
    def of(cls, env: Mapping[str, str]) -> Deadlines:
        return cls(
            seconds(env, CONNECT_TIMEOUT_VAR, CONNECT_TIMEOUT), seconds(env, TOTAL_TIMEOUT_VAR, TOTAL_TIMEOUT)
        )


def seconds(env: Mapping[str, str], var: str, default: float) -> float:
    text = env.get(var, "").strip()
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not 0 < value < float("inf"):
        raise UsageError(f"{var} must be a number of seconds above 0, not {text!r}")
    return value
