"""Reads a streamed HTTP response at the socket and returns its HTTP chunks with their arrival times.

The engine answers a stream with chunked transfer encoding, one write per recorded event, so each
event is its own HTTP chunk whatever TCP does with the segments. Comparing the chunks with the
recorded events proves the engine neither re-chunks nor buffers; the arrival times, against a paced
upstream, show that a live stream reaches the client as the provider sends it.
"""

from __future__ import annotations

import socket
import time
from dataclasses import dataclass
from urllib.parse import urlsplit


@dataclass(frozen=True)
class Chunk:
    data: bytes
    at: float  # seconds since the request was sent


class ProbeError(Exception):
    pass


def _request(url: str, body: bytes, headers: dict[str, str]) -> tuple[socket.socket, bytes]:
    parts = urlsplit(url)
    sock = socket.create_connection((parts.hostname or "127.0.0.1", parts.port or 80), timeout=30)
    lines = [f"POST {parts.path} HTTP/1.1", f"Host: {parts.netloc}", f"Content-Length: {len(body)}"]
    lines += [f"{k}: {v}" for k, v in headers.items()] + ["Connection: close", "", ""]
    return sock, "\r\n".join(lines).encode() + body


def _take_chunks(buffer: bytearray, at: float, out: list[Chunk]) -> bool:
    """Move every complete chunk from `buffer` to `out`; True once the last (empty) chunk is read."""
    while True:
        end = buffer.find(b"\r\n")
        if end < 0:
            return False
        size = int(bytes(buffer[:end]).split(b";")[0], 16)
        if size == 0:
            return True
        if len(buffer) < end + 2 + size + 2:
            return False
        out.append(Chunk(bytes(buffer[end + 2 : end + 2 + size]), at))
        del buffer[: end + 2 + size + 2]


def stream_chunks(url: str, body: bytes, headers: dict[str, str]) -> tuple[int, list[Chunk]]:
    """POST `body` to `url`; the response status and its HTTP chunks, in order, with arrival times."""
    sock, raw = _request(url, body, headers)
    with sock:
        start = time.perf_counter()
        sock.sendall(raw)
        buffer, chunks, status, in_body = bytearray(), [], 0, False
        while True:
            data = sock.recv(65536)
            at = time.perf_counter() - start
            if not data:
                raise ProbeError("the connection closed before the last chunk")
            buffer += data
            if not in_body:
                head_end = buffer.find(b"\r\n\r\n")
                if head_end < 0:
                    continue
                head = bytes(buffer[:head_end]).decode("latin-1").lower()
                status = int(head.split(" ", 2)[1])
                if "transfer-encoding: chunked" not in head:
                    raise ProbeError(f"not a chunked response (status {status})")
                del buffer[: head_end + 4]
                in_body = True
            if _take_chunks(buffer, at, chunks):
                return status, chunks
