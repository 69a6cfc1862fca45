"""A step of a GitLab CI job, as the forge-neutral steps (`forge.step.Step`) see it.

Outputs go to a dotenv report (`artifacts:reports:dotenv`), `ATTEST_<NAME>=value` one a line: GitLab
takes no multi-line value and only ASCII letters, digits and `_` in a name. Messages are plain lines:
GitLab's log has no workflow commands, but it does read ANSI escapes and its `section_start` markers,
so a control character in a message is shown, never sent. GitLab has no job summary page: the note is
the summary, so `summary` writes nothing.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ..errors import UsageError
from ..forge.trim import cut
from .context import DOTENV

VALUE_BYTES = 300  # a dozen outputs, some written twice, stay well under the report's 5 KB
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_NAME = re.compile(r"[^A-Z0-9_]")


def plain(message: str) -> str:
    """One log line: breaks as spaces, other control characters (ESC among them) as `\\xNN`."""
    flat = " ".join(message.splitlines())
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", flat)


def dotenv_lines(values: Mapping[str, str]) -> str:
    """`ATTEST_<NAME>=value` lines, each value cut to fit: GitLab refuses a dotenv report over 5 KB."""
    return "".join(
        f"ATTEST_{_NAME.sub('_', name.upper())}={cut(plain(value), VALUE_BYTES, unit='bytes')}\n"
        for name, value in values.items()
    )


@dataclass(frozen=True)
class GitLabStep:
    env: Mapping[str, str]

    @property
    def dotenv(self) -> Path:
        return Path(self.env.get("ATTEST_CI_DOTENV") or DOTENV)

    def outputs(self, values: Mapping[str, str]) -> None:
        try:
            with self.dotenv.open("a", encoding="utf-8") as out:
                out.write(dotenv_lines(values))
        except OSError as exc:
            raise UsageError(f"cannot append to this file: {exc.strerror or exc}", self.dotenv) from None

    def summary(self, markdown: str) -> None:
        pass

    def error(self, message: str) -> None:
        print(f"ERROR: attest: {plain(message)}", file=sys.stderr, flush=True)

    def warning(self, message: str) -> None:
        print(f"WARNING: attest: {plain(message)}", flush=True)

    def forget_writes(self) -> None:
        try:
            self.dotenv.write_text("", encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"cannot empty this file: {exc.strerror or exc}", self.dotenv) from None
