"""`attest-engine serve --socket PATH`: control mode for the first runner that connects to a Unix socket
(the engine the Vitest plugin starts before its workers, claimed by the first one).

Its own module, light to import, so `__main__`'s fast path and the CLI share it without either
importing the other."""

from __future__ import annotations

import sys

from ..proxy.ca_store import engine_process


def serve_socket(path: str) -> int:
    """`serve --socket PATH`: the socket is bound before anything heavy is imported, so a runner that
    connects while the engine is still starting waits in its backlog for the ready line."""
    import socket

    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        listener.bind(path)
    except OSError as exc:
        print(f"attest-engine: cannot listen on {path}: {exc.strerror}", file=sys.stderr)
        return 3
    listener.listen(8)
    from .runner import serve_claimed

    engine_process()
    serve_claimed(listener, path)
    return 0
