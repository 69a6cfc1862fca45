"""Proof that the current network namespace cannot reach anything but loopback, sending no packet.

The probe lists the interfaces that are up, reads the routing tables, and `connect()`s a UDP socket to
documentation addresses (192.0.2.1, RFC 5737; 2001:db8::1, RFC 3849) on the discard port. A UDP
connect only asks the kernel for a route and sends nothing, so the probe is safe to run anywhere;
"network unreachable" there is the proof that no packet could leave. A TCP connection to 127.0.0.1
checks that loopback, where the replay engine listens, works.

A namespace without routes is not enough: the process must not be able to leave it. When the network
part holds, the probe also checks the process's privileges and tries the escapes (`confine`), and
`isolated` is true only when all of them fail.
"""

from __future__ import annotations

import errno
import socket
from dataclasses import dataclass, replace
from pathlib import Path

from .confine import Confinement, check_confinement
from .netif import up_interfaces

PROBE_V4 = ("192.0.2.1", 9)
PROBE_V6 = ("2001:db8::1", 9)
LOOPBACK = "lo"
# Route lookup outcomes that prove no route exists. Without an IPv6 address on a usable interface the
# kernel answers EADDRNOTAVAIL; without IPv6 at all, the socket cannot be created.
_V4_UNREACHABLE = frozenset({"ENETUNREACH"})
_V6_UNREACHABLE = frozenset({"ENETUNREACH", "EADDRNOTAVAIL", "unavailable"})
_ROUTE_TABLES = (
    (Path("/proc/net/route"), 0),  # iface is the first column
    (Path("/proc/net/ipv6_route"), -1),  # and the last one here
)


@dataclass(frozen=True)
class Probe:
    """What the probe saw; `isolated` is the verdict, `describe()` the one-line account."""

    interfaces_up: tuple[str, ...]
    route_interfaces: tuple[str, ...]
    v4: str
    v6: str
    loopback: bool
    # None when not checked: the network part failed already, or only the network was asked about.
    confinement: Confinement | None = None

    @property
    def network_isolated(self) -> bool:
        """No interface but loopback is up and the kernel has no route out."""
        outside = [name for name in self.interfaces_up if name != LOOPBACK]
        return (
            not outside
            and not self.route_interfaces
            and self.v4 in _V4_UNREACHABLE
            and self.v6 in _V6_UNREACHABLE
        )

    @property
    def isolated(self) -> bool:
        """The network is off and this process cannot turn it back on (no privileges, no escape)."""
        return self.network_isolated and self.confinement is not None and self.confinement.ok

    def why_not(self, *, confinement: bool = True) -> str:
        """The first reason this namespace is not usable as a sandbox, briefly; "" when it is.

        With confinement=False only the namespace itself is judged (is there a network to leave by).
        """
        outside = [name for name in self.interfaces_up if name != LOOPBACK]
        if outside:
            return f"{', '.join(outside)} up"
        if self.route_interfaces:
            return f"routes via {', '.join(self.route_interfaces)}"
        if not self.network_isolated:
            return f"route lookup for {PROBE_V4[0]}: {self.v4}, for {PROBE_V6[0]}: {self.v6}"
        if confinement and self.confinement is None:
            return "privileges not checked"
        if confinement and self.confinement is not None and not self.confinement.ok:
            return self.confinement.why_not()
        return "" if self.loopback else "loopback does not work"

    def describe(self) -> str:
        verdict = "isolated" if self.isolated else "NOT isolated"
        routes = ", ".join(self.route_interfaces) or "none"
        text = (
            f"{verdict}: interfaces up: {', '.join(self.interfaces_up) or 'none'}; "
            f"routes via: {routes}; udp connect {PROBE_V4[0]}:{PROBE_V4[1]}: {self.v4}; "
            f"udp connect [{PROBE_V6[0]}]:{PROBE_V6[1]}: {self.v6}; "
            f"tcp 127.0.0.1: {'ok' if self.loopback else 'failed'}"
        )
        return text if self.confinement is None else f"{text}; {self.confinement.describe()}"


def route_interfaces() -> tuple[str, ...]:
    """Interfaces other than loopback that carry a route, from the kernel's IPv4 and IPv6 tables."""
    found: set[str] = set()
    for table, column in _ROUTE_TABLES:
        try:
            lines = table.read_text(encoding="ascii").splitlines()
        except OSError:  # no /proc or no IPv6: the route lookups below still decide
            continue
        rows = lines[1:] if column == 0 else lines  # only the IPv4 table has a header
        found.update(row.split()[column] for row in rows if row.split())
    found.discard(LOOPBACK)
    return tuple(sorted(found))


def route_lookup(family: socket.AddressFamily, address: tuple[str, int]) -> str:
    """The errno name of the kernel's refusal to route, or "route found"."""
    try:
        sock = socket.socket(family, socket.SOCK_DGRAM)
    except OSError:
        return "unavailable"
    with sock:
        try:
            sock.connect(address)  # UDP: a route lookup only, nothing is sent
        except OSError as exc:
            return errno.errorcode.get(exc.errno or 0, str(exc))
        return "route found"


def loopback_works() -> bool:
    """A TCP connection to a listener on 127.0.0.1 succeeds."""
    try:
        with (
            socket.create_server(("127.0.0.1", 0)) as server,
            socket.create_connection(server.getsockname(), timeout=5),
        ):
            conn, _ = server.accept()
            conn.close()
    except OSError:
        return False
    return True


def run_probe(*, confinement: bool = True, outer_net_fd: int | None = None) -> Probe:
    """Probe the network; when it is off and `confinement` is asked for, the escapes too.

    The escapes are only tried inside a network-isolated namespace, so an ordinary run (pytest on a
    laptop) never calls sudo or nsenter.
    """
    probe = Probe(
        interfaces_up=tuple(up_interfaces()),
        route_interfaces=route_interfaces(),
        v4=route_lookup(socket.AF_INET, PROBE_V4),
        v6=route_lookup(socket.AF_INET6, PROBE_V6),
        loopback=loopback_works(),
    )
    if not (confinement and probe.network_isolated):
        return probe
    return replace(probe, confinement=check_confinement(outer_net_fd))
