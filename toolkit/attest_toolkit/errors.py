"""Errors every module shares, with the exit codes SPEC.md assigns to them."""

from __future__ import annotations

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


def read_text(path: Path, error: type[AttestError], kind: str, missing: str | None = None) -> str:
    """The UTF-8 text of a user's file, or `error` naming the file and the problem on one line."""
    try:
        return path.read_bytes().decode("utf-8-sig")
    except FileNotFoundError:
        raise error(missing or f"no such {kind}", path) from None
    except IsADirectoryError:
        raise error(f"is a directory, not a {kind}", path) from None
    except OSError as exc:
        raise error(f"cannot read: {exc.strerror or exc}", path) from None
    except UnicodeDecodeError:
        raise error(f"not a text file (a {kind} is UTF-8 text)", path) from None
