"""The replay engine: fixtures indexed by request key, served on loopback to the official SDKs.

Exports load on first use: a test runner that only talks to an engine in another process
(`engine.client`) must not pay for importing the server and aiohttp.
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import ssl

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


# aiohttp builds its default TLS contexts when it is imported, loading the system's CA store (about
# 0.2 s of an engine's start). The engine makes no TLS connection until it forwards a call live, which a
# strict or --no-live replay never does: its entry points import aiohttp inside `ca_store_deferred()`,
# and the live forwarder calls `load_ca_store()` before its first connection.
_unloaded: list[ssl.SSLContext] = []


@contextlib.contextmanager
def ca_store_deferred() -> Iterator[None]:
    """TLS contexts made inside get the system CA store only at `load_ca_store()`."""
    import ssl

    real = ssl.SSLContext.set_default_verify_paths

    def later(context: ssl.SSLContext) -> None:
        _unloaded.append(context)

    ssl.SSLContext.set_default_verify_paths = later  # type: ignore[method-assign]
    try:
        yield
    finally:
        ssl.SSLContext.set_default_verify_paths = real  # type: ignore[method-assign]


def load_ca_store() -> None:
    """Give the contexts made under `ca_store_deferred()` the CA store they were made without."""
    while _unloaded:
        _unloaded.pop().set_default_verify_paths()
