"""The replay engine: fixtures indexed by request key, served on loopback to the official SDKs.

The package itself imports none of its modules: a test runner that only talks to an engine in another
process (`engine.client`) must not pay for importing the server. Import what you use from its module
(`engine.server.Engine`, `engine.runner.run_command`, `engine.session.MODES`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import ssl

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

    def later(self: ssl.SSLContext) -> None:
        _unloaded.append(self)

    ssl.SSLContext.set_default_verify_paths = later  # type: ignore[method-assign]
    try:
        yield
    finally:
        ssl.SSLContext.set_default_verify_paths = real  # type: ignore[method-assign]


def load_ca_store() -> None:
    """Give the contexts made under `ca_store_deferred()` the CA store they were made without."""
    while _unloaded:
        _unloaded.pop().set_default_verify_paths()
