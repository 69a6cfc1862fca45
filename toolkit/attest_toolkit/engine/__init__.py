"""The replay engine: fixtures indexed by request key, served on loopback to the official SDKs.

Exports load on first use: a test runner that only talks to an engine in another process
(`engine.client`) must not pay for importing the server and aiohttp.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "Engine": "server",
    "ReplayRun": "runner",
    "run_command": "runner",
    "serve": "runner",
    "serve_control": "runner",
    "MODES": "session",
    "MATCHES": "session",
    "Mode": "session",
    "default_mode": "session",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
