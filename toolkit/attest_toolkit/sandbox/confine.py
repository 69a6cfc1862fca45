"""Whether the current process could get back to the outer network: its privileges, and escapes tried.

A fresh network namespace is only as good as the process's inability to leave it. With
CAP_SYS_ADMIN a process can `setns()` into another namespace (`nsenter --net=/proc/PID/ns/net`),
and with sudo or a setuid binary it can get that capability back. The sandbox therefore runs its
command with no_new_privs set and no capabilities; this module reads both from /proc/self/status
and then tries the escapes for real (nsenter into PID 1's and the parent's network namespaces and
into the outer one through an inherited descriptor, and `sudo -n true`). Nothing is sent: an escape
that succeeds only runs `true`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

_STATUS = Path("/proc/self/status")
_HELD = ("CapEff", "CapPrm", "CapAmb")
_TIMEOUT = 10
BLOCKED = "blocked"
ESCAPED = "ESCAPED"


@dataclass(frozen=True)
class Confinement:
    """What the probe found: no_new_privs, the capability sets, and each escape tried with its outcome."""

    no_new_privs: bool
    capabilities: dict[str, int]
    escapes: tuple[tuple[str, str], ...]

    @property
    def held(self) -> dict[str, int]:
        """The capability sets that are not empty (the bounding set is informative only)."""
        return {
            name: self.capabilities.get(name, -1) for name in _HELD if self.capabilities.get(name, -1) != 0
        }

    @property
    def escaped(self) -> list[str]:
        return [attempt for attempt, outcome in self.escapes if outcome == ESCAPED]

    @property
    def ok(self) -> bool:
        return self.no_new_privs and not self.held and not self.escaped

    def why_not(self) -> str:
        if self.escaped:
            return f"escape possible: {', '.join(self.escaped)}"
        if not self.no_new_privs:
            return "no_new_privs is not set"
        if self.held:
            return "capabilities held: " + ", ".join(
                f"{name} {value:#x}" for name, value in self.held.items()
            )
        return ""

    def describe(self) -> str:
        caps = "none" if not self.held else ", ".join(f"{k} {v:#x}" for k, v in self.held.items())
        bounding = self.capabilities.get("CapBnd", -1)
        tried = ", ".join(f"{attempt}: {outcome}" for attempt, outcome in self.escapes) or "none"
        return (
            f"no_new_privs: {'yes' if self.no_new_privs else 'no'}; capabilities: {caps}; "
            f"bounding set: {'empty' if bounding == 0 else format(bounding, '#x')}; escapes tried: {tried}"
        )


def read_status(text: str) -> tuple[bool, dict[str, int]]:
    """no_new_privs and the capability sets, from the text of /proc/self/status."""
    nnp, caps = False, {}
    for line in text.splitlines():
        name, _, value = line.partition(":")
        if name == "NoNewPrivs":
            nnp = value.strip() == "1"
        elif name.startswith("Cap"):
            caps[name] = int(value.strip(), 16)
    return nnp, caps


def _same_namespace(path: str) -> bool:
    """The namespace at `path` (a /proc path or a descriptor's) is this process's own, so entering it
    proves nothing: a sandbox in an already isolated container is handed its own namespace."""
    try:
        return os.stat(path).st_ino == os.stat("/proc/self/ns/net").st_ino
    except OSError:  # not allowed to look: the attempt below decides
        return False


def _try(argv: list[str], pass_fds: tuple[int, ...] = ()) -> str:
    if shutil.which(argv[0]) is None:
        return f"not tried ({argv[0]} not found)"
    try:
        done = subprocess.run(
            argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=_TIMEOUT, pass_fds=pass_fds
        )
    except subprocess.TimeoutExpired:
        return f"{BLOCKED} (timed out)"
    except OSError as exc:
        return f"{BLOCKED} ({exc.strerror or exc})"
    return ESCAPED if done.returncode == 0 else f"{BLOCKED} (exit {done.returncode})"


def attempts(outer_net_fd: int | None = None) -> list[tuple[str, list[str], tuple[int, ...]]]:
    """The escapes to try here: (label, argv, descriptors to pass)."""
    true = shutil.which("true") or "/bin/true"
    tries: list[tuple[str, list[str], tuple[int, ...]]] = []
    for pid in dict.fromkeys((1, os.getppid())):
        path = f"/proc/{pid}/ns/net"
        if pid > 0 and os.path.lexists(f"/proc/{pid}") and not _same_namespace(path):
            tries.append((f"nsenter --net={path}", ["nsenter", f"--net={path}", "--", true], ()))
    if outer_net_fd is not None and not _same_namespace(f"/proc/self/fd/{outer_net_fd}"):
        argv = ["nsenter", f"--net=/proc/self/fd/{outer_net_fd}", "--", true]
        tries.append(("nsenter into the outer network namespace", argv, (outer_net_fd,)))
    tries.append(("sudo -n true", ["sudo", "-n", "true"], ()))
    return tries


def check_confinement(outer_net_fd: int | None = None) -> Confinement:
    """Read this process's privileges, then try every escape; each outcome is recorded."""
    try:
        nnp, caps = read_status(_STATUS.read_text(encoding="ascii"))
    except OSError:
        nnp, caps = False, {}
    escapes = tuple((label, _try(argv, fds)) for label, argv, fds in attempts(outer_net_fd))
    return Confinement(nnp, caps, escapes)
