"""The socket hooks behind the egress guard, and their counted installation.

`socket.getaddrinfo` refuses provider names before any DNS query; `socket.socket.connect` and
`connect_ex` refuse a provider name given directly and mark a socket that reaches an environment
proxy; the send methods screen what a marked socket carries. Once a request on a marked socket is
refused, reading from it fails with the same error, because some clients answer a failed write by
waiting for a response. socket.socket is a Python subclass of the C socket type, so its methods can
be replaced at class level and every socket (including those asyncio transports write through with
`sock.send`) goes through the hooks. Unmarked sockets pay one emptiness test per send or receive;
connections pay a cached host lookup and a read of the proxy variables.
"""

from __future__ import annotations

import functools
import socket
import threading
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from .hosts import EgressBlockedError
from .proxies import environment_proxies, is_proxy
from .scope import check, refused
from .screen import RequestScreen

_SOCKET_METHODS = ("connect", "connect_ex", "send", "sendall", "sendmsg", "sendfile", "recv", "recv_into")

# An address can be named by many host names; cleared when it grows past this, since it only needs
# to remember the lookup that just preceded a connection.
_MAX_RESOLVED = 1024

_lock = threading.Lock()
_installs = 0
_real: dict[str, Any] = {}  # the functions the hooks replaced, called through
_owned: dict[str, bool] = {}  # whether socket.socket defined the method itself (else it inherits it)
# Screens of proxy connections, keyed by a weak reference to the socket (equal to any other live
# reference to it) that removes its entry when the socket is collected. A plain dict rather than a
# WeakKeyDictionary: its emptiness test, on every send and receive, must cost next to nothing.
_screens: dict[weakref.ref[socket.socket], RequestScreen] = {}
_resolved: dict[str, set[str]] = {}  # address -> host names that resolved to it


def install() -> None:
    """Turn the guard on, or count one more user of a guard that is already on."""
    global _installs
    with _lock:
        if _installs == 0:
            _patch()
        _installs += 1


def uninstall() -> None:
    """Release one install; the guard goes off when the last user releases it."""
    global _installs
    with _lock:
        if _installs == 0:
            raise RuntimeError("attest egress guard: uninstall() without a matching install()")
        _installs -= 1
        if _installs == 0:
            _unpatch()


def installed() -> bool:
    """True while at least one install has not been released."""
    return _installs > 0


@contextmanager
def blocking() -> Iterator[None]:
    """The guard on for the duration of a with block (counted like install/uninstall)."""
    install()
    try:
        yield
    finally:
        uninstall()


def _patch() -> None:
    _real["getaddrinfo"] = socket.getaddrinfo
    socket.getaddrinfo = _getaddrinfo  # type: ignore[assignment]
    for name in _SOCKET_METHODS:
        _owned[name] = name in vars(socket.socket)
        _real[name] = getattr(socket.socket, name)
        setattr(socket.socket, name, _HOOKS[name])


def _unpatch() -> None:
    socket.getaddrinfo = _real.pop("getaddrinfo")
    for name in _SOCKET_METHODS:
        original = _real.pop(name)
        if _owned.pop(name):
            setattr(socket.socket, name, original)
        else:
            delattr(socket.socket, name)
    _screens.clear()
    _resolved.clear()


def _host_text(host: object) -> str | None:
    if isinstance(host, str):
        return host
    if isinstance(host, (bytes, bytearray)):  # anyio passes IDNA-encoded bytes
        return bytes(host).decode("ascii", "replace")
    return None


def _port_text(port: object) -> int | str | None:
    if isinstance(port, (bytes, bytearray)):
        return bytes(port).decode("ascii", "replace")
    return port if isinstance(port, (int, str)) else None


@functools.wraps(socket.getaddrinfo)
def _getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> list[Any]:
    name = host if type(host) is str else _host_text(host)
    if name is not None and refused(name):
        raise EgressBlockedError(name, _port_text(port))
    results = _real["getaddrinfo"](host, port, *args, **kwargs)
    if name:
        _remember(name, results)
    return results


def _remember(name: str, results: Sequence[Any]) -> None:
    for result in results:
        address = result[4][0] if len(result) > 4 and result[4] else None
        if address != name and isinstance(address, str):  # a literal address resolves to itself
            if len(_resolved) >= _MAX_RESOLVED:
                _resolved.clear()
            _resolved.setdefault(address, set()).add(name.lower().rstrip("."))


def _on_connect(sock: socket.socket, address: Any) -> None:
    if type(address) is not tuple or len(address) < 2:  # AF_UNIX paths and other families
        return
    host, port = _host_text(address[0]), address[1]
    if host is None:
        return
    check(host, _port_text(port), _resolved.get(host, ()))
    proxies = environment_proxies()
    if proxies and isinstance(port, int) and is_proxy(host, port, proxies, _resolved):
        _track(sock, RequestScreen())


def _track(sock: socket.socket, screen: RequestScreen) -> None:
    _screens[weakref.ref(sock, _forget)] = screen


def _forget(ref: weakref.ref[socket.socket]) -> None:
    _screens.pop(ref, None)


def _screen_of(sock: socket.socket) -> RequestScreen | None:
    screen = _screens.get(weakref.ref(sock))
    if screen is not None and screen.opaque:
        _screens.pop(weakref.ref(sock), None)  # a TLS tunnel: nothing more to read on this socket
        return None
    return screen


def _connect(self: socket.socket, address: Any) -> None:
    _on_connect(self, address)
    return _real["connect"](self, address)


def _connect_ex(self: socket.socket, address: Any) -> int:
    _on_connect(self, address)
    return _real["connect_ex"](self, address)


# The send and receive hooks test `_screens` inline: it is empty unless a proxy connection is open,
# and this is the path every loopback byte of a replay takes.


def _send(self: socket.socket, data: Any, flags: int = 0) -> int:
    screen = _screen_of(self) if _screens else None
    if screen is None:
        return _real["send"](self, data, flags)
    return _send_screened(self, screen, bytes(data), lambda: _real["send"](self, data, flags))


def _sendmsg(self: socket.socket, buffers: Any, *args: Any) -> int:
    screen = _screen_of(self) if _screens else None
    if screen is None:
        return _real["sendmsg"](self, buffers, *args)
    buffers = list(buffers)  # may be a one-shot iterable, and is read twice here
    data = b"".join(bytes(buffer) for buffer in buffers)
    return _send_screened(self, screen, data, lambda: _real["sendmsg"](self, buffers, *args))


def _send_screened(sock: socket.socket, screen: RequestScreen, data: bytes, send: Callable[[], int]) -> int:
    # Screen all of it before anything leaves, but advance only over what the socket took: the
    # caller sends the rest again.
    trial = screen.clone()
    try:
        trial.feed(data)
    except EgressBlockedError:
        _track(sock, trial)  # remembers the refusal
        raise
    sent = send()
    if sent >= len(data):
        _track(sock, trial)
    else:
        screen.feed(data[:sent])
    return sent


def _sendall(self: socket.socket, data: Any, flags: int = 0) -> None:
    screen = _screen_of(self) if _screens else None
    if screen is not None:
        screen.feed(bytes(data))
    return _real["sendall"](self, data, flags)


def _sendfile(self: socket.socket, file: Any, offset: int = 0, count: int | None = None) -> int:
    if _screens and _screen_of(self) is not None:
        # os.sendfile would write past the hooks; the plain path goes through send().
        return self._sendfile_use_send(file, offset, count)  # type: ignore[attr-defined]
    return _real["sendfile"](self, file, offset, count)


def _recv(self: socket.socket, bufsize: int, flags: int = 0) -> bytes:
    if _screens:
        _raise_if_refused(self)
    return _real["recv"](self, bufsize, flags)


def _recv_into(self: socket.socket, buffer: Any, nbytes: int = 0, flags: int = 0) -> int:
    if _screens:
        _raise_if_refused(self)
    return _real["recv_into"](self, buffer, nbytes, flags)


def _raise_if_refused(sock: socket.socket) -> None:
    screen = _screens.get(weakref.ref(sock))
    if screen is not None:
        screen.raise_if_refused()


_HOOKS: dict[str, Callable[..., Any]] = {
    "connect": _connect,
    "connect_ex": _connect_ex,
    "send": _send,
    "sendall": _sendall,
    "sendmsg": _sendmsg,
    "sendfile": _sendfile,
    "recv": _recv,
    "recv_into": _recv_into,
}
