"""A fresh network namespace with only loopback, held open for a container to join.

A small holder process runs in it (`unshare --net`): it brings loopback up, opens listening sockets
on 127.0.0.1 there, probes the namespace (sandbox.probe: it sends nothing) and passes the sockets
back over a socket pair. A socket keeps the namespace it was made in, so the engine (or the
recording proxy) serves the container from the host's side through them, while every socket the
container opens lives in the holder's namespace, where nothing but loopback exists. The holder
stays until its standard input closes; the container joins it by `/proc/<holder>/ns/net`.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from dataclasses import dataclass, field
from typing import Any

from ..errors import AttestError
from ..sandbox.strategy import boot_argv

MAX_MESSAGE = 1 << 16


class NamespaceError(AttestError):
    """The namespace could not be made (not root, no unshare): the run cannot start, exit 3."""


def privileged(argv: list[str]) -> list[str]:
    """`argv` as root: as it is for root, else through passwordless sudo (a GitHub-hosted runner)."""
    if os.geteuid() == 0:
        return argv
    sudo = shutil.which("sudo")
    if sudo is None:
        raise NamespaceError(f"{argv[0]} needs root: run as root or with passwordless sudo")
    return [sudo, "-n", "--", *argv]


@dataclass
class LoopbackNamespace:
    """The holder and what it passed back; use as a context manager."""

    listeners: int = 1
    sockets: list[socket.socket] = field(default_factory=list)
    probe: dict[str, Any] = field(default_factory=dict)
    _holder: subprocess.Popen[bytes] | None = None

    @property
    def path(self) -> str:
        """The namespace, as a container engine joins it (`--network ns:PATH`)."""
        assert self._holder is not None
        return f"/proc/{self._holder.pid}/ns/net"

    def __enter__(self) -> LoopbackNamespace:
        unshare = shutil.which("unshare")
        if unshare is None:
            raise NamespaceError("unshare not found: install util-linux")
        ours, theirs = socket.socketpair()
        with ours:
            argv = [*privileged([unshare, "--net", "--"]), *boot_argv(__name__), str(self.listeners)]
            # The pair's end is the holder's standard output: sudo closes every descriptor above 2.
            self._holder = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=theirs.fileno())
            theirs.close()
            message, fds, _, _ = socket.recv_fds(ours, MAX_MESSAGE, self.listeners)
        reply = json.loads(message or b"{}")
        if "error" in reply or len(fds) != self.listeners:
            self.__exit__()
            raise NamespaceError(
                f"cannot make the container's network namespace: {reply.get('error', 'no reply')}"
            )
        self.sockets = [socket.socket(fileno=fd) for fd in fds]
        self.probe = reply["probe"]
        if not self.probe["isolated"]:  # as the sandbox does: no run whose isolation is not verified
            self.__exit__()
            raise NamespaceError(
                f"the container's network namespace is not isolated: {self.probe['describe']}"
            )
        return self

    def __exit__(self, *exc: object) -> None:
        for sock in self.sockets:
            sock.close()
        if self._holder is not None:
            if self._holder.stdin is not None:
                self._holder.stdin.close()  # the holder's signal to leave
            self._holder.wait()
            self._holder = None


# --- the holder, inside the namespace --------------------------------------------------------------


def _open_listeners(count: int) -> list[socket.socket]:
    return [socket.create_server(("127.0.0.1", 0)) for _ in range(count)]


def _hold(count: int, out: socket.socket) -> None:
    from ..sandbox.netif import bring_up
    from ..sandbox.probe import LOOPBACK, run_probe

    try:
        bring_up(LOOPBACK)
        listeners = _open_listeners(count)
        probe = run_probe(confinement=False)
    except OSError as exc:
        out.sendall(json.dumps({"error": str(exc.strerror or exc)}).encode())
        return
    # The holder is root: its own privileges say nothing of the container's, so only the network is judged.
    seen = probe.describe().partition(": ")[2]
    facts = {"isolated": probe.network_isolated and probe.loopback, "describe": seen}
    socket.send_fds(out, [json.dumps({"probe": facts}).encode()], [s.fileno() for s in listeners])
    for sock in listeners:
        sock.close()
    sys.stdin.buffer.read()  # until the toolkit closes the pipe: the namespace lives as long as we do


def main() -> None:
    """`python -c BOOT COUNT`, run by `unshare --net` with the socket pair as standard output."""
    count = int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1].isdigit() else 1
    out = socket.socket(fileno=os.dup(1))
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
    with out:
        _hold(count, out)
