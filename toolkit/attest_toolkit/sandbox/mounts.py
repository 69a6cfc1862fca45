"""The command's view of the filesystem inside the sandbox: a private /tmp, hidden daemon sockets.

A unix socket is a file, so it crosses network namespaces: a daemon listening on one (a tmux, screen,
ssh-agent or gpg-agent socket, X11, the D-Bus session bus, the Docker or podman socket, the systemd
user bus) could do for the command what the missing network will not. In the sandbox's own mount
namespace, /tmp becomes an empty tmpfs into which the directories the run needs are bound back (the
working directory and the /tmp paths named on the command line or in the environment, but never the
ones the session's socket variables name: `TMUX`, `SSH_AUTH_SOCK`, ...), /run/user and /run/screen are
replaced by empty directories, and every named socket of the outer network namespace still visible
(listed by the outer process from /proc/net/unix), like the known container-engine sockets, is
covered with /dev/null. Mounts are made with util-linux `mount`; the mount namespace is private
(`unshare --mount`), so the host sees none of it.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import stat
import subprocess
from collections.abc import Iterable
from pathlib import Path

TMP = "/tmp"
RUN_USER = "/run/user"
# Directories of per-user daemon sockets, replaced by empty ones: session buses, rootless engines,
# gpg-agent (under /run/user), screen sessions.
SESSION_DIRS = (RUN_USER, "/run/screen")
# Variables that name a session's sockets: a /tmp directory they name is not bound back.
SESSION_SOCKET_VARIABLES = (
    "TMUX",
    "TMUX_TMPDIR",
    "STY",
    "SCREENDIR",
    "SSH_AUTH_SOCK",
    "GPG_AGENT_INFO",
    "DBUS_SESSION_BUS_ADDRESS",
    "DISPLAY",
    "WAYLAND_DISPLAY",
    "DOCKER_HOST",
    "CONTAINER_HOST",
    "XDG_RUNTIME_DIR",
)
# Sockets that start containers or processes outside the sandbox on request.
ENGINE_SOCKETS = (
    "/run/docker.sock",
    "/var/run/docker.sock",
    "/run/containerd/containerd.sock",
    "/run/podman/podman.sock",
    "/run/buildkit/buildkitd.sock",
)
# A /tmp path inside a longer text (a `sh -c` script, `--opt=/tmp/x`, a PATH list).
_TMP_PATH = re.compile(r"(?<![\w.~-])/tmp(?:/[^\s'\"`;|&<>(){}$:,]+)+")


class MountError(Exception):
    pass


def _mount(args: list[str], pass_fds: tuple[int, ...] = ()) -> None:
    program = shutil.which("mount")
    if program is None:
        raise MountError("mount not found (util-linux)")
    done = subprocess.run([program, *args], capture_output=True, text=True, pass_fds=pass_fds)
    if done.returncode != 0:
        raise MountError((done.stderr.strip().splitlines() or [f"mount exited {done.returncode}"])[-1])


def named_tmp_paths(texts: Iterable[str]) -> set[str]:
    """Every /tmp path mentioned in `texts` (arguments, environment values), resolved."""
    found = set()
    for text in texts:
        for match in _TMP_PATH.findall(text):
            found.add(os.path.realpath(match))
    return found


def _anchor(path: str) -> str | None:
    """The directory to bind back for `path`: itself, its directory, or its nearest existing ancestor."""
    while not os.path.exists(path):
        path = os.path.dirname(path)
    if not os.path.isdir(path):
        path = os.path.dirname(path)
    return path if path.startswith(TMP + "/") else None


def dirs_to_keep(paths: Iterable[str]) -> list[str]:
    """The directories under /tmp to bind back, with nested ones dropped (binding the parent keeps them)."""
    anchors = sorted({a for p in paths if p.startswith(TMP + "/") for a in [_anchor(p)] if a})
    kept: list[str] = []
    for path in anchors:
        if not any(path.startswith(parent + "/") for parent in kept):
            kept.append(path)
    return kept


def _copy_owner(fd: int, rel: str, target: str) -> None:
    """Give a recreated directory the mode and owner of the original (best effort)."""
    with contextlib.suppress(OSError):
        st = os.stat(rel, dir_fd=fd)
        os.chown(target, st.st_uid, st.st_gid)
        os.chmod(target, st.st_mode & 0o7777)


def _recreate(fd: int, rel: str) -> None:
    """mkdir -p of /tmp/`rel` in the new tmpfs, each level like the original."""
    parts = Path(rel).parts
    for depth in range(1, len(parts) + 1):
        sub = os.path.join(*parts[:depth])
        target = os.path.join(TMP, sub)
        if not os.path.isdir(target):
            os.mkdir(target)
            _copy_owner(fd, sub, target)


def private_tmp(keep: Iterable[str]) -> str:
    """Put an empty tmpfs on /tmp and bind `keep` (directories under /tmp) back; return what was done.

    Raises MountError when /tmp cannot be replaced consistently.
    """
    cwd = os.getcwd()
    if os.path.realpath(cwd) == TMP:
        return "shared (the working directory is /tmp)"
    keep = dirs_to_keep([*keep, os.path.realpath(cwd)])
    original = os.open(TMP, os.O_RDONLY | os.O_DIRECTORY)
    try:
        _mount(["-t", "tmpfs", "-o", "mode=1777,nosuid,nodev", "tmpfs", TMP])
        for path in keep:
            rel = os.path.relpath(path, TMP)
            _recreate(original, rel)
            # -c: mount must not canonicalise the /proc/self/fd path, the kernel resolves it to the
            # original /tmp, which the tmpfs now covers.
            _mount(["--rbind", "-c", f"/proc/self/fd/{original}/{rel}", path], pass_fds=(original,))
    finally:
        os.close(original)
    # The old working directory still points into the covered /tmp, whose ".." leads to the rest of
    # it: enter the same path again, in the new view.
    os.chdir(cwd)
    return "private" + (
        f" ({len(keep)} director{'y' if len(keep) == 1 else 'ies'} bound back)" if keep else ""
    )


def private_session_dirs() -> None:
    """Replace each of SESSION_DIRS with empty directories of the same names, owners and modes."""
    for top in SESSION_DIRS:
        if os.path.isdir(top) and not os.path.islink(top):
            _empty_copy(top)


def _empty_copy(top: str) -> None:
    original = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    try:
        names = os.listdir(original)
        st = os.fstat(original)
        _mount(["-t", "tmpfs", "-o", f"mode={st.st_mode & 0o7777:o},nosuid,nodev", "tmpfs", top])
        for name in names:
            target = os.path.join(top, name)
            with contextlib.suppress(OSError):
                os.mkdir(target)
                _copy_owner(original, name, target)
    finally:
        os.close(original)


def outside_sockets(table: str) -> list[str]:
    """The named unix sockets in `table` (the text of /proc/net/unix): every path a process of that
    network namespace is bound to, listening or not (a datagram socket takes messages too)."""
    paths = []
    for line in table.splitlines()[1:]:
        fields = line.split(maxsplit=7)
        if len(fields) == 8 and fields[7].startswith("/"):
            paths.append(fields[7])
    return list(dict.fromkeys(paths))


def hide_sockets(paths: Iterable[str]) -> list[str]:
    """Cover each of `paths` that is a socket in this view with /dev/null; return the ones covered."""
    hidden: list[str] = []
    for path in dict.fromkeys(paths):
        try:
            is_socket = stat.S_ISSOCK(os.stat(path).st_mode)
        except OSError:  # not here: under the private /tmp, in an emptied directory, or gone
            continue
        if is_socket:
            _mount(["--bind", "/dev/null", path])
            hidden.append(path)
    return hidden


def hide_engine_sockets() -> list[str]:
    """Cover every container-engine socket that exists with /dev/null; return the ones covered."""
    hidden: list[str] = []
    for path in dict.fromkeys(os.path.realpath(p) for p in ENGINE_SOCKETS):
        if os.path.exists(path) and not os.path.isdir(path):
            _mount(["--bind", "/dev/null", path])
            hidden.append(path)
    return hidden
