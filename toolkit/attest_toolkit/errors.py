"""Errors every module shares, with the exit codes SPEC.md assigns to them."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path


class AttestError(Exception):
    """A problem the user can fix; the CLI prints it on one line and exits with `exit_code`."""

    exit_code = 3

    def __init__(self, message: str, path: str | Path | None = None) -> None:
        self.path = str(path) if path is not None else None
        super().__init__(f"{self.path}: {message}" if self.path else message)


class FixtureError(AttestError):
    """A fixture is missing, malformed, of a future version, or fails validation."""


class CredentialFound(AttestError):
    """The credential scan found a secret; the message names where, never what."""


class UsageError(AttestError):
    """The command line or an input file cannot be used as given."""


def escape(text: str) -> str:
    """Control characters escaped, so a miss line stays one line and cannot drive a terminal."""
    return "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii") for ch in text)


# Any input file is read whole; past this size it is refused before it is read (a symlink to
# /dev/zero or a runaway log must not eat memory). Fixtures have a tighter cap of their own.
MAX_INPUT_BYTES = 512 * 1024 * 1024


def describe_os_error(exc: OSError) -> str:
    """The OS's own words for a file problem, with the two that puzzle people explained."""
    if exc.errno == errno.ELOOP:
        return "too many levels of symbolic links (a symlink loop)"
    if exc.errno == errno.ENAMETOOLONG:
        return "file name too long for the file system"
    return (exc.strerror or str(exc)).lower()


def size_text(size: int) -> str:
    return f"{size / (1024 * 1024):.0f} MiB" if size >= 1024 * 1024 else f"{size} bytes"


def read_bytes(path: Path, error: type[AttestError], kind: str, missing: str | None, limit: int) -> bytes:
    """A regular file's bytes, at most `limit` of them, or `error` naming the file and the problem."""
    try:
        # O_NONBLOCK: opening a FIFO must not hang; the regular-file check below refuses it.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise error(missing or f"no such {kind}", path) from None
    except OSError as exc:
        raise error(f"cannot read: {describe_os_error(exc)}", path) from None
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise error(f"is a directory, not a {kind}", path)
        if not stat.S_ISREG(st.st_mode):
            raise error(f"not a regular file (a {kind} must be one)", path)
        too_big = f"larger than the {size_text(limit)} a {kind} may be"
        if st.st_size > limit:
            raise error(too_big, path)
        try:
            data = fh.read(limit + 1)
        except OSError as exc:
            raise error(f"cannot read: {describe_os_error(exc)}", path) from None
    if len(data) > limit:  # it grew while we read it
        raise error(too_big, path)
    return data


def read_text(
    path: Path, error: type[AttestError], kind: str, missing: str | None = None, limit: int = MAX_INPUT_BYTES
) -> str:
    """The UTF-8 text of a user's file, or `error` naming the file and the problem on one line."""
    data = read_bytes(path, error, kind, missing, limit)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise error(f"not a text file (a {kind} is UTF-8 text)", path) from None
