"""Reading what a client sends to an HTTP proxy, request by request, for provider host names.

The screen follows the byte stream a client writes on one proxy connection: each request's line
(the target of a CONNECT, the host of an absolute-form target) and its Host headers are checked when
the line is complete, that is before the bytes that end it are sent, so a proxy never receives a
usable request naming a provider. Bodies (Content-Length or chunked) are skipped, not read, so a
body that mentions a provider is not mistaken for a request. After a CONNECT the screen goes opaque
on a TLS record prefix; anything else after it is screened as requests again. Once a request is
refused the connection is refused for good: nothing more is sent on it, and nothing is read from it.
"""

from __future__ import annotations

import re
from enum import Enum

from .hosts import EgressBlockedError
from .scope import check as check_host

# Request and header lines longer than this are cut: a proxy refuses them, and the part that names
# a host comes first.
_MAX_LINE = 64 * 1024

# A TLS handshake record header: content type 0x16, version 0x03 0x00 (SSL 3) to 0x03 0x04 (TLS 1.3).
_TLS_PREFIXES = tuple(bytes((0x16, 0x03, minor)) for minor in range(5))
_TLS_PREFIX_LENGTH = 3

# scheme://authority at the start of a request target; the rest of the URL does not matter here.
_ABSOLUTE_FORM = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://(?P<authority>[^/?#]*)")

_LINE_END = re.compile(rb"[\r\n]")

_DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}


class _State(Enum):
    REQUEST_LINE = "request line"
    HEADERS = "headers"
    BODY = "body"
    CHUNK_SIZE = "chunk size"
    CHUNK_DATA = "chunk data"
    TRAILERS = "trailers"
    TUNNEL_START = "tunnel start"
    OPAQUE = "opaque"


_LINE_STATES = frozenset({_State.REQUEST_LINE, _State.HEADERS, _State.CHUNK_SIZE, _State.TRAILERS})


class RequestScreen:
    """The screening state of one client-to-proxy connection."""

    __slots__ = ("_after_cr", "_chunked", "_connect", "_length", "_line", "_refusal", "_remaining", "_state")

    def __init__(self) -> None:
        self._state = _State.REQUEST_LINE
        self._line = bytearray()  # the incomplete line (or tunnel prefix) seen so far
        self._remaining = 0  # body or chunk bytes still to skip
        self._connect = False
        self._chunked = False
        self._length = 0
        self._refusal: EgressBlockedError | None = None
        self._after_cr = False  # the last line ended with CR: a LF right after it belongs to that end

    @property
    def opaque(self) -> bool:
        """True once a tunnel carries TLS: nothing more is inspected on this connection."""
        return self._state is _State.OPAQUE

    def clone(self) -> RequestScreen:
        """An independent copy, to screen bytes before knowing how many of them the socket takes."""
        twin = RequestScreen()
        twin._state = self._state
        twin._line = bytearray(self._line)
        twin._remaining = self._remaining
        twin._connect = self._connect
        twin._chunked = self._chunked
        twin._length = self._length
        twin._refusal = self._refusal
        twin._after_cr = self._after_cr
        return twin

    def raise_if_refused(self) -> None:
        """Raise EgressBlockedError again if a request on this connection was refused."""
        if self._refusal is not None:
            # A fresh error each time: re-raising one instance would pile up its tracebacks.
            raise EgressBlockedError(self._refusal.host, self._refusal.port)

    def feed(self, data: bytes) -> None:
        """Advance over `data`; raise EgressBlockedError if a completed line names a provider."""
        self.raise_if_refused()
        try:
            self._advance(data)
        except EgressBlockedError as refusal:
            self._refusal = refusal
            raise

    def _advance(self, data: bytes) -> None:
        pos = 0
        while pos < len(data) and self._state is not _State.OPAQUE:
            if self._after_cr:
                self._after_cr = False
                if data[pos] == 0x0A:  # the LF of a CRLF
                    pos += 1
                    continue
            if self._state in _LINE_STATES:
                pos = self._feed_line(data, pos)
            elif self._state is _State.TUNNEL_START:
                pos = self._feed_tunnel_start(data, pos)
            else:
                pos = self._skip_body(data, pos)

    def _feed_line(self, data: bytes, pos: int) -> int:
        # A line ends at LF, CRLF or a bare CR: some proxies split on a bare CR, so a Host header
        # hidden behind one must be screened as the line it is to them.
        found = _LINE_END.search(data, pos)
        end = found.start() if found else -1
        self._append(data[pos : len(data) if end < 0 else end])
        if end < 0:
            return len(data)
        line = bytes(self._line)
        self._line.clear()
        self._after_cr = data[end] == 0x0D
        self._on_line(line)
        return end + 1

    def _append(self, chunk: bytes) -> None:
        room = _MAX_LINE - len(self._line)
        if room > 0:
            self._line += chunk[:room]

    def _skip_body(self, data: bytes, pos: int) -> int:
        taken = min(self._remaining, len(data) - pos)
        self._remaining -= taken
        if self._remaining == 0:
            self._state = _State.CHUNK_SIZE if self._state is _State.CHUNK_DATA else _State.REQUEST_LINE
        return pos + taken

    def _feed_tunnel_start(self, data: bytes, pos: int) -> int:
        taken = min(_TLS_PREFIX_LENGTH - len(self._line), len(data) - pos)
        self._line += data[pos : pos + taken]
        prefix = bytes(self._line)
        if _may_be_tls_prefix(prefix):
            if len(prefix) == _TLS_PREFIX_LENGTH:
                self._line.clear()
                self._state = _State.OPAQUE
            return pos + taken
        # Not TLS (a refused CONNECT, or plain HTTP through the tunnel): screen it as requests.
        self._line.clear()
        self._state = _State.REQUEST_LINE
        self._advance(prefix)
        return pos + taken

    def _on_line(self, line: bytes) -> None:
        if self._state is _State.REQUEST_LINE:
            self._on_request_line(line)
        elif self._state is _State.HEADERS:
            self._on_header_line(line)
        elif self._state is _State.CHUNK_SIZE:
            self._on_chunk_size(line)
        elif not line:  # the blank line that ends the trailers
            self._state = _State.REQUEST_LINE

    def _on_request_line(self, line: bytes) -> None:
        if not line.strip():  # empty lines before a request are allowed (RFC 9112, 2.2)
            return
        self._state = _State.HEADERS
        self._connect, self._chunked, self._length = False, False, 0
        parts = line.split()
        if len(parts) < 2:
            return
        target = parts[1].decode("latin-1")
        if parts[0].upper() == b"CONNECT":
            self._connect = True
            _check_authority(target, default_port=443)
        elif "://" in target:
            _check_absolute(target)

    def _on_header_line(self, line: bytes) -> None:
        if not line:
            self._end_headers()
            return
        name, _, value = line.partition(b":")
        field = name.strip().lower()
        if field == b"host":
            _check_authority(value.strip().decode("latin-1"), default_port=80)
        elif field == b"content-length":
            self._length = _int_or_zero(value.strip(), base=10)
        elif field == b"transfer-encoding":
            self._chunked = value.strip().lower().endswith(b"chunked")

    def _end_headers(self) -> None:
        if self._connect:
            self._state = _State.TUNNEL_START
        elif self._chunked:
            self._state = _State.CHUNK_SIZE
        elif self._length > 0:
            self._state, self._remaining = _State.BODY, self._length
        else:
            self._state = _State.REQUEST_LINE

    def _on_chunk_size(self, line: bytes) -> None:
        if not line.strip():  # the CRLF some clients leave between chunks
            return
        size = _int_or_zero(line.split(b";", 1)[0].strip(), base=16)
        if size > 0:
            self._state, self._remaining = _State.CHUNK_DATA, size + 2  # the data and its CRLF
        else:
            self._state = _State.TRAILERS


def _may_be_tls_prefix(prefix: bytes) -> bool:
    """True when `prefix` is the start (or the whole) of a TLS handshake record header."""
    return any(tls.startswith(prefix) for tls in _TLS_PREFIXES)


def _check_authority(authority: str, default_port: int) -> None:
    host, port = _split_authority(authority)
    if host:
        check_host(host, port or default_port)


def _check_absolute(target: str) -> None:
    match = _ABSOLUTE_FORM.match(target)
    if match:
        host, port = _split_authority(match["authority"])
        if host:
            check_host(host, port or _DEFAULT_PORTS.get(match["scheme"].lower(), 80))


def _split_authority(authority: str) -> tuple[str, int | None]:
    """Host and port of `[user@]host[:port]`, bracketed IPv6 included; no port when it is not a number."""
    text = authority.rpartition("@")[2]
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else ""
    else:
        host, _, port = text.partition(":")
    return host, int(port) if port.isascii() and port.isdigit() else None


def _int_or_zero(text: bytes, base: int) -> int:
    try:
        return max(int(text, base), 0)
    except ValueError:
        return 0
