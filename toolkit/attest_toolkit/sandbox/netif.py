"""Network interfaces of the current network namespace, asked of the kernel through a socket.

`/sys/class/net` shows the namespace of whoever mounted sysfs, not the caller's, so after `unshare
--net` it still lists the host's interfaces; an ioctl on a socket always answers for the namespace
the socket lives in. Bringing `lo` up with SIOCSIFFLAGS keeps the sandbox free of iproute2.
"""

from __future__ import annotations

import fcntl
import socket
import struct

SIOCGIFFLAGS = 0x8913
SIOCSIFFLAGS = 0x8914
IFF_UP = 0x1
# struct ifreq: a 16-byte interface name, then a union whose first member is the short ifr_flags.
_IFREQ = struct.Struct("16sH22x")


def _flags(sock: socket.socket, name: str) -> int:
    request = _IFREQ.pack(name.encode(), 0)
    return _IFREQ.unpack(fcntl.ioctl(sock.fileno(), SIOCGIFFLAGS, request))[1]


def interface_flags() -> dict[str, int]:
    """Every interface of this namespace and its flags."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        return {name: _flags(sock, name) for _, name in socket.if_nameindex()}


def up_interfaces() -> list[str]:
    """The names of the interfaces that are administratively up, sorted."""
    return sorted(name for name, flags in interface_flags().items() if flags & IFF_UP)


def bring_up(name: str = "lo") -> None:
    """Set IFF_UP on an interface; needs CAP_NET_ADMIN in the namespace (raises PermissionError)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        flags = _flags(sock, name)
        if not flags & IFF_UP:
            fcntl.ioctl(sock.fileno(), SIOCSIFFLAGS, _IFREQ.pack(name.encode(), flags | IFF_UP))
