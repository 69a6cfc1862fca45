"""Files named directly under /tmp: copied into the private /tmp at start, copied back out at the end.

A directory under /tmp is bound back into the private /tmp (`mounts`), but a file directly under /tmp
has no directory of its own to bind: its directory is the private tmpfs itself. Binding the file
alone would not do either: a writer that writes a temp file and renames it over the target (the
report writer) gets EBUSY on a mount point, and a path that does not exist yet would have to be
created as the wrong kind of thing. So stage one, which made the tmpfs, keeps a descriptor of the
real /tmp, copies each such file in (when it exists), waits for the command instead of exec'ing it,
and copies back what the command left there. Nothing planted inside is trusted: only regular files
are read, opened without following symlinks, and each is written outside atomically (a temp file in
the real /tmp, fsync, rename onto the name), so a symlink or a name outside /tmp is never written
through. Nothing else of the private /tmp leaves it.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass, field

from .mounts import TMP

_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_CHUNK = 1 << 20


def direct_names(paths: Iterable[str]) -> list[str]:
    """The names of `paths` (resolved) that sit directly in /tmp and are regular files there, or
    nothing yet (a socket or a FIFO named there is no file to return)."""
    names = set()
    for path in paths:
        if os.path.dirname(path) == TMP and (os.path.isfile(path) or not os.path.lexists(path)):
            names.add(os.path.basename(path))
    return sorted(names)


def _copy(src: int, dst: int) -> None:
    while chunk := os.read(src, _CHUNK):
        view = memoryview(chunk)
        while view:
            view = view[os.write(dst, view) :]


def _open_regular(dir_fd: int, name: str) -> int | None:
    """A read descriptor of `name` in `dir_fd` when it is a regular file; None when it is not there.

    Raises OSError for anything else (a symlink, a FIFO, a directory)."""
    try:
        fd = os.open(name, _READ, dir_fd=dir_fd)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise OSError("it is a symbolic link, not a regular file") from exc
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError("it is not a regular file")
    return fd


def _signature(st: os.stat_result) -> tuple[int, int, int]:
    return (st.st_ino, st.st_size, st.st_mtime_ns)


@dataclass
class TmpFiles:
    """The files directly under /tmp the run names, between the real /tmp and the private one."""

    outside: int  # a descriptor of the real /tmp, opened before the tmpfs covered it
    inside: int = -1  # a descriptor of the private /tmp
    names: list[str] = field(default_factory=list)
    # What each copied-in file looked like right after the copy: unchanged ones are not written back.
    copied: dict[str, tuple[int, int, int]] = field(default_factory=dict)

    def copy_in(self) -> list[str]:
        """Copy each named file that exists outside into the private /tmp (same mode and owner);
        return one line for each that could not be."""
        self.inside = os.open(TMP, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        problems = []
        for name in self.names:
            try:
                self._copy_in(name)
            except OSError as exc:
                problems.append(f"{os.path.join(TMP, name)} not copied in: {exc.strerror or exc}")
        return problems

    def _copy_in(self, name: str) -> None:
        src = _open_regular(self.outside, name)
        if src is None:
            return
        try:
            st = os.fstat(src)
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
            dst = os.open(name, flags, 0o600, dir_fd=self.inside)
            try:
                _copy(src, dst)
                os.fchown(dst, st.st_uid, st.st_gid)
                os.fchmod(dst, stat.S_IMODE(st.st_mode))
                self.copied[name] = _signature(os.fstat(dst))
            finally:
                os.close(dst)
        finally:
            os.close(src)

    def copy_back(self) -> list[str]:
        """Write each named file the command left (or changed) in the private /tmp to the real /tmp;
        return one line for each that could not be."""
        problems = []
        for name in self.names:
            try:
                self._copy_back(name)
            except OSError as exc:
                problems.append(f"{os.path.join(TMP, name)} not returned: {exc.strerror or exc}")
        return problems

    def _copy_back(self, name: str) -> None:
        src = _open_regular(self.inside, name)
        if src is None:
            return
        try:
            st = os.fstat(src)
            if self.copied.get(name) == _signature(st):
                return
            self._replace_outside(name, src, st)
        finally:
            os.close(src)

    def _replace_outside(self, name: str, src: int, st: os.stat_result) -> None:
        temp = f".{name}.attest-{os.getpid()}.tmp"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        dst = os.open(temp, flags, 0o600, dir_fd=self.outside)
        try:
            try:
                _copy(src, dst)
                os.fchmod(dst, stat.S_IMODE(st.st_mode))
                os.fsync(dst)
            finally:
                os.close(dst)
            # rename replaces the directory entry: a symlink at the name is replaced, never followed.
            os.rename(temp, name, src_dir_fd=self.outside, dst_dir_fd=self.outside)
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(temp, dir_fd=self.outside)
            raise

    def close(self) -> None:
        for fd in (self.outside, self.inside):
            if fd >= 0:
                os.close(fd)
