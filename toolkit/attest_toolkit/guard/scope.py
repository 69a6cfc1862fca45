"""What the guard refuses: provider hosts (`block`), or every host but loopback and the allowed ones
(`block-all`, pytest-recording's `--block-network` with its `--allowed-hosts`).

Under block-all a name is refused before any DNS query, like a provider name; a connection to a
literal address passes when it is loopback, allowed, or the address an allowed name just resolved to.
The hooks ask `refused`; the scope is process-wide, like the guard itself.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

from .hosts import EgressBlockedError, is_blocked_host

_LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"})


class _Scope:
    block_all = False
    allowed: frozenset[str] = frozenset()


_scope = _Scope()


def _plain(host: str) -> str:
    return host.lower().rstrip(".").removeprefix("[").removesuffix("]")


def parse_hosts(text: str | Iterable[str] | None) -> frozenset[str]:
    """Allowed hosts from `a.example,b.example` (pytest-recording's form) or a list; `*` is not a host."""
    items = text.split(",") if isinstance(text, str) else list(text or ())
    return frozenset(_plain(item.strip()) for item in items if item.strip())


def block_all(allowed: Iterable[str] = ()) -> None:
    """From now on refuse every host but loopback and `allowed` (names or addresses)."""
    _scope.block_all = True
    _scope.allowed = parse_hosts(list(allowed))


def providers_only() -> None:
    """Back to refusing provider hosts only (the guard's `block`)."""
    _scope.block_all = False
    _scope.allowed = frozenset()


def is_loopback(host: str) -> bool:
    name = _plain(host)
    if name in _LOOPBACK_NAMES or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name.split("%", 1)[0]).is_loopback
    except ValueError:
        return False


def refused(host: str, resolved_from: Iterable[str] = ()) -> bool:
    """True when the guard must refuse a connection to `host` (named by `resolved_from` when it is an
    address a lookup just returned)."""
    if not _scope.block_all:
        return is_blocked_host(host)
    if is_blocked_host(host) or any(is_blocked_host(name) for name in resolved_from):
        return True  # a provider stays blocked even when allowed: zero live calls is the guard's promise
    name = _plain(host)
    if is_loopback(name) or name in _scope.allowed:
        return False
    return not any(_plain(source) in _scope.allowed for source in resolved_from)


def check(host: str, port: int | str | None, resolved_from: Iterable[str] = ()) -> None:
    """Raise EgressBlockedError when the guard refuses `host`."""
    if refused(host, resolved_from):
        raise EgressBlockedError(host, port)
