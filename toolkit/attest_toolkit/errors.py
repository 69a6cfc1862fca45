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
