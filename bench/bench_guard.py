"""The egress guard's cost on loopback traffic, which every replayed call pays.

Each figure is measured with the guard off (the baseline) and on, in the same run, alternating, and
the median of several runs is kept. Loopback round trips and connections should cost the same with
the guard on (target: within 10 %). Shown for information: a lone name lookup (one per connection,
the hook's fixed cost in microseconds) and the screened path (a socket to a proxy named by
HTTPS_PROXY).

    python bench/bench_guard.py [--ops 20000] [--runs 7]
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from attest_toolkit import guard

PAYLOAD = b"x" * 1024
TARGET = 1.10
# A CONNECT and the first bytes of a TLS record: after these the guard reads nothing more.
TUNNEL_OPENING = b"CONNECT models.example.test:443 HTTP/1.1\r\n\r\n\x16\x03\x01"


def serve_forever() -> None:
    """The server side, in its own process so that it does not share the measured process's GIL.

    Prints the ports of an echo listener and of a listener that closes every connection, then serves
    until its standard input closes.
    """
    echo_listener = listen(lambda conn: threading.Thread(target=echo, args=(conn,), daemon=True).start())
    closing_listener = listen(socket.socket.close)
    print(echo_listener.getsockname()[1], closing_listener.getsockname()[1], flush=True)
    sys.stdin.read()


def listen(handle: Callable[[socket.socket], object]) -> socket.socket:
    listener = socket.create_server(("127.0.0.1", 0), backlog=1024)

    def accept_all() -> None:
        while True:
            conn, _ = listener.accept()
            handle(conn)

    threading.Thread(target=accept_all, daemon=True).start()
    return listener


def echo(conn: socket.socket) -> None:
    with conn:
        while chunk := conn.recv(65536):
            conn.sendall(chunk)


@contextmanager
def servers() -> Iterator[tuple[int, int]]:
    """The ports of the echo and closing listeners, served by a child process."""
    argv = [sys.executable, __file__, "--serve"]
    with subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) as child:
        assert child.stdout is not None and child.stdin is not None
        echo_port, closing_port = map(int, child.stdout.readline().split())
        try:
            yield echo_port, closing_port
        finally:
            child.stdin.close()


def round_trips(port: int, ops: int, opening: bytes = b"") -> Callable[[], None]:
    def work() -> None:
        with socket.create_connection(("127.0.0.1", port)) as sock:
            if opening:
                exchange(sock, opening)
            for _ in range(ops):
                exchange(sock, PAYLOAD)

    return work


def exchange(sock: socket.socket, data: bytes) -> None:
    sock.sendall(data)
    received = 0
    while received < len(data):
        received += len(sock.recv(65536))


def connections(port: int, ops: int) -> Callable[[], None]:
    def work() -> None:
        for _ in range(ops):
            socket.create_connection(("127.0.0.1", port)).close()

    return work


def lookups(ops: int) -> Callable[[], None]:
    def work() -> None:
        for _ in range(ops):
            socket.getaddrinfo("127.0.0.1", 443, type=socket.SOCK_STREAM)

    return work


def screened_requests(port: int, ops: int) -> Callable[[], None]:
    request = b"GET http://models.example.test/v1/models HTTP/1.1\r\nHost: models.example.test\r\n\r\n"

    def work() -> None:
        with socket.create_connection(("127.0.0.1", port)) as sock:
            for _ in range(ops):
                exchange(sock, request)

    return work


@contextmanager
def proxy_named(port: int) -> Iterator[None]:
    os.environ["HTTPS_PROXY"] = f"http://127.0.0.1:{port}"
    try:
        yield
    finally:
        del os.environ["HTTPS_PROXY"]


def off_and_on(work: Callable[[], None], runs: int) -> tuple[float, float]:
    """Median seconds with the guard off and on, interleaved and in alternating order, so that both
    see the same machine load and neither always runs second (connections leave TIME_WAIT behind)."""
    off: list[float] = []
    on: list[float] = []
    for run in range(runs):
        for guarded in (False, True) if run % 2 == 0 else (True, False):
            if guarded:
                with guard.blocking():
                    on.append(timed(work))
            else:
                off.append(timed(work))
    return statistics.median(off), statistics.median(on)


def timed(work: Callable[[], None]) -> float:
    start = time.perf_counter()
    work()
    return time.perf_counter() - start


def line(name: str, ops: int, off: float, on: float, target: float | None) -> str:
    ratio = on / off
    verdict = "" if target is None else ("met" if ratio <= target else "MISSED")
    return f"{name:44} {off / ops * 1e6:8.2f} us {on / ops * 1e6:8.2f} us {ratio:6.2f}x  {verdict}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=20000, help="operations per timed run")
    parser.add_argument("--runs", type=int, default=7, help="timed runs per figure (the median is kept)")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve_forever()
        return
    os.environ.pop("HTTPS_PROXY", None)
    ops, few = args.ops, max(args.ops // 10, 1)
    with servers() as (port, closing_port):
        print(
            f"median of {args.runs} runs; per operation, guard off (baseline) and on; target <= {TARGET:.2f}x"
        )
        print(f"{'measure':44} {'off':>11} {'on':>11} {'ratio':>7}")
        print(line("loopback round trip, 1 KiB", ops, *off_and_on(round_trips(port, ops), args.runs), TARGET))
        print(line("getaddrinfo of a loopback address", ops, *off_and_on(lookups(ops), args.runs), None))
        figures = off_and_on(connections(closing_port, few), args.runs)
        print(line("connect + close, 127.0.0.1", few, *figures, TARGET))
        with proxy_named(port):
            figures = off_and_on(round_trips(port, ops, opening=TUNNEL_OPENING), args.runs)
            print(line("round trip to the proxy, TLS-opaque", ops, *figures, None))
            figures = off_and_on(screened_requests(port, few), args.runs)
            print(line("round trip to the proxy, screened request", few, *figures, None))


if __name__ == "__main__":
    main()
