"""What a CI step gets from its forge: outputs for the steps after it, the run's summary page, and
messages in the forge's own log syntax. The forge-neutral steps speak only through this."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from ..errors import AttestError


class Step(Protocol):
    def outputs(self, values: Mapping[str, str]) -> None:
        """Values the later steps read."""

    def summary(self, markdown: str) -> None:
        """Markdown for the run's summary page."""

    def error(self, message: str) -> None:
        """One error line, shown as the forge shows a failed step's reason."""

    def warning(self, message: str) -> None:
        """One warning line: something went wrong that does not change the verdict."""

    def forget_writes(self) -> None:
        """Drop what this step's files (outputs, environment, summary) hold so far: the command under
        test could write them, and set what the steps judging it see."""


class StepFailed(AttestError):
    """The step stops: the forge shows the message as its error, and the step exits `exit_code`."""

    def __init__(self, message: str, exit_code: int = 3) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def flag(value: bool) -> str:
    """A boolean as step outputs carry it."""
    return "true" if value else "false"
