"""aiohttp's TLS contexts without the system CA store until a call first goes live, in an engine's
own process: its start does not pay for loading the CA store a strict replay never uses.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import ssl

# aiohttp builds its default TLS contexts when it is imported, loading the system's CA store (about
# 0.2 s). The engine makes no TLS connection until it forwards a call live, which a strict or --no-live
# replay never does: in an engine's own process (its entry points call `engine_process()`) aiohttp is
# imported inside `ca_store_deferred()`, and the live forwarder calls `load_ca_store()` before its first
# connection. In any other process (a test that starts an `Engine`, capture) nothing is deferred: a TLS
# context of its own made meanwhile must not lose its CA store.
_unloaded: list[ssl.SSLContext] = []
_engine_process: list[bool] = []


def engine_process() -> None:
    """Called by the engine's entry points: this process runs the engine alone."""
    _engine_process.append(True)


def aiohttp_imported() -> contextlib.AbstractContextManager[None]:
    """Where the engine first imports aiohttp: with the CA store deferred in an engine's own process."""
    return ca_store_deferred() if _engine_process else contextlib.nullcontext()


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
