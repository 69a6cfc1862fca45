"""The HTTP proxies named by the environment, and whether a connection goes to one of them."""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any
from urllib.parse import urlsplit

# Either case; NO_PROXY is deliberately not read (a client that honors it connects directly, and
# the host check blocks that connection instead).
PROXY_VARIABLES = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy")

_DEFAULT_PROXY_PORT = 80


@dataclass(frozen=True)
class ProxyAddress:
    """Where a plain-HTTP proxy listens: a lower-case host name or IP literal, and a port."""

    host: str
    port: int


# os.environ keeps its variables in a plain dict (`_data`, keys encoded as `encodekey` does). Reading
# that dict directly costs six lookups per connection; os.environ.get raises and catches a KeyError
# inside for every unset variable, which costs more than the rest of the connect hook.
_ENVIRON_DATA: dict[Any, Any] | None = getattr(os.environ, "_data", None)
_ENCODED_NAMES = tuple(map(getattr(os.environ, "encodekey", str), PROXY_VARIABLES))


def environment_proxies() -> tuple[ProxyAddress, ...]:
    """The inspectable proxies the environment names right now (read on every call)."""
    if isinstance(_ENVIRON_DATA, dict):
        values = tuple(map(_ENVIRON_DATA.get, _ENCODED_NAMES))
    else:
        values = tuple(map(os.environ.get, PROXY_VARIABLES))
    if not any(values):
        return ()
    return _parse_all(values)


@lru_cache(maxsize=64)
def _parse_all(values: tuple[str | bytes | None, ...]) -> tuple[ProxyAddress, ...]:
    found = (plain_http_proxy(os.fsdecode(value)) for value in values if value)
    return tuple(dict.fromkeys(proxy for proxy in found if proxy is not None))


def plain_http_proxy(value: str) -> ProxyAddress | None:
    """The address of a proxy URL the guard can read, or None.

    Only http:// proxies (or a bare host:port, which clients treat as http://) carry readable
    request lines; an https:// proxy hides them in TLS and a SOCKS proxy speaks another protocol.
    """
    text = value.strip()
    if "://" not in text:
        text = f"http://{text}"
    try:
        parts = urlsplit(text)
        port = parts.port or _DEFAULT_PROXY_PORT
    except ValueError:
        return None
    if parts.scheme.lower() != "http" or not parts.hostname:
        return None
    return ProxyAddress(parts.hostname.rstrip("."), port)


def is_proxy(
    host: str,
    port: int,
    proxies: Collection[ProxyAddress],
    resolved_names: Mapping[str, Collection[str]],
) -> bool:
    """True when a connection to (host, port) reaches one of `proxies`.

    Clients connect to the address a proxy name resolved to, so `resolved_names` maps an address back
    to the names that resolved to it.
    """
    name = host.lower().rstrip(".")
    for proxy in proxies:
        if proxy.port == port and (proxy.host == name or proxy.host in resolved_names.get(name, ())):
            return True
    return False
