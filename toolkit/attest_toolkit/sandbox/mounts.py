"""The command's view of the filesystem inside the sandbox: a private /tmp, hidden daemon sockets.

A unix socket is a file, so it crosses network namespaces: a daemon listening on one (a tmux or
ssh-agent socket in /tmp, the Docker socket, a user's systemd or D-Bus socket) could do for the
command what the missing network will not. In the sandbox's own mount namespace, /tmp becomes an
empty tmpfs into which the directories the run needs are bound back (the working directory and the
/tmp paths named on the command line or in the environment), /run/user is replaced by empty
directories, and known container-engine sockets are covered with /dev/null. Mounts are made with
util-linux `mount`; the mount namespace is private (`unshare --mount`), so the host sees none of it.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
from collections.abc import Iterable
from pathlib import Path

TMP = "/tmp"
RUN_USER = "/run/user"
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


def private_run_user() -> None:
    """Replace /run/user (per-user runtime directories: session buses, rootless engine sockets) with
    empty directories of the same names, owners and modes."""
    if not os.path.isdir(RUN_USER):
        return
    original = os.open(RUN_USER, os.O_RDONLY | os.O_DIRECTORY)
    try:
        names = os.listdir(original)
        _mount(["-t", "tmpfs", "-o", "mode=0755,nosuid,nodev", "tmpfs", RUN_USER])
        for name in names:
            target = os.path.join(RUN_USER, name)
            with contextlib.suppress(OSError):
                os.mkdir(target)
                _copy_owner(original, name, target)
    finally:
        os.close(original)


def hide_engine_sockets() -> list[str]:
    """Cover every container-engine socket that exists with /dev/null; return the ones covered."""
    hidden: list[str] = []
    for path in dict.fromkeys(os.path.realpath(p) for p in ENGINE_SOCKETS):
        if os.path.exists(path) and not os.path.isdir(path):
            _mount(["--bind", "/dev/null", path])
            hidden.append(path)
    return hidden
