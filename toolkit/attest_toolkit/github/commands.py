"""GitHub Actions workflow commands and environment files, escaped as GitHub's runner parses them.

Workflow commands (`::error file=F,line=L,title=T::message`) go to stdout; the runner turns them into
annotations. Data is escaped `%` -> `%25`, CR -> `%0D`, LF -> `%0A`; property values additionally
`:` -> `%3A` and `,` -> `%2C`, since those delimit the command. Outputs and the job summary are
environment files the runner reads after the step: outputs take `name=value` lines, or the
`name<<DELIMITER` heredoc form for multi-line values; the job summary is markdown, at most 1 MiB per step.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ..errors import UsageError
from .inputs import escape as escape_data  # written once: the input check runs it alone
from .trim import STEP_SUMMARY_LIMIT, fit

Level = Literal["error", "warning", "notice"]

# A workflow command's message is shown in the log and the annotation; longer ones only add noise.
MAX_MESSAGE_CHARS = 4000


def escape_property(value: str) -> str:
    return escape_data(value).replace(":", "%3A").replace(",", "%2C")


def workflow_command(name: str, message: str = "", **properties: str | int | None) -> str:
    """`::name k=v,k=v::message`, properties with a None value left out."""
    props = ",".join(f"{k}={escape_property(str(v))}" for k, v in properties.items() if v is not None)
    return f"::{name}{' ' + props if props else ''}::{escape_data(message)}"


@dataclass(frozen=True)
class Annotation:
    """One annotation: shown on the file and line in the pull request's diff."""

    level: Level
    message: str
    file: str | None = None
    line: int | None = None
    title: str | None = None


def annotation_command(annotation: Annotation) -> str:
    message = annotation.message
    if len(message) > MAX_MESSAGE_CHARS:
        message = message[: MAX_MESSAGE_CHARS - 1] + "…"
    return workflow_command(
        annotation.level,
        message,
        file=annotation.file,
        line=annotation.line if annotation.file else None,
        title=annotation.title,
    )


def notice(message: str, title: str | None = None) -> str:
    return workflow_command("notice", message, title=title)


def warning(message: str, title: str | None = None) -> str:
    return workflow_command("warning", message, title=title)


def format_outputs(values: Mapping[str, str]) -> str:
    """The text to append to GITHUB_OUTPUT: `name=value`, or the heredoc form for multi-line values."""
    lines = []
    for name, value in values.items():
        if not name or any(c in name for c in "=<\r\n"):
            raise UsageError(f"output name {name!r} cannot be written to GITHUB_OUTPUT")
        if "\n" in value or "\r" in value:
            # A random delimiter, as GitHub's own toolkit does, so the value cannot end the block early.
            delimiter = f"ghadelimiter_{secrets.token_hex(16)}"
            lines.append(f"{name}<<{delimiter}\n{value}\n{delimiter}")
        else:
            lines.append(f"{name}={value}")
    return "".join(line + "\n" for line in lines)


def append_file(path: str | Path, text: str) -> None:
    """Append `text` with one write on an O_APPEND descriptor.

    The runner owns these files and other steps' tools append to them too, so they are appended to,
    as GitHub's toolkit does, rather than replaced by a rename.
    """
    data = text.encode("utf-8")
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            written = 0
            while written < len(data):
                written += os.write(fd, data[written:])
        finally:
            os.close(fd)
    except OSError as exc:
        raise UsageError(f"cannot append to this file: {exc.strerror or exc}", path) from None


def append_outputs(path: str | Path, values: Mapping[str, str]) -> None:
    append_file(path, format_outputs(values))


def append_step_summary(path: str | Path, markdown: str, limit: int = STEP_SUMMARY_LIMIT) -> bool:
    """Append markdown to the job summary, within what is left of the step's 1 MiB; True when trimmed."""
    try:
        used = Path(path).stat().st_size
    except FileNotFoundError:
        used = 0
    text = markdown if markdown.endswith("\n") else markdown + "\n"
    budget = max(limit - used, 0)
    fitted = fit(text, budget, unit="bytes", notice=STEP_SUMMARY_NOTICE)
    append_file(path, fitted)
    return fitted != text


STEP_SUMMARY_NOTICE = (
    "… trimmed to fit GitHub's 1 MiB job summary limit; the full report is in the report file."
)


def read_env_file(path: str | Path) -> dict[str, str]:
    """Variables in GITHUB_ENV's format: `NAME=value` lines, and `NAME<<DELIMITER` ... `DELIMITER` for
    a multi-line value; a missing file holds none."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read this environment file: {exc}", path) from None
    found: dict[str, str] = {}
    rows = iter(lines)
    for line in rows:
        name, heredoc, delimiter = line.partition("<<")
        if heredoc and "=" not in name:
            body = []
            for row in rows:
                if row == delimiter:
                    break
                body.append(row)
            found[name] = "\n".join(body)
        elif line:
            key, _, value = line.partition("=")
            found[key] = value
    return found


def read_path_file(path: str | Path) -> list[str]:
    """GITHUB_PATH's directories, the last one written first, as the runner puts them on PATH."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read this path file: {exc}", path) from None
    return [line for line in reversed(text.splitlines()) if line]


# The runner's files of a step, which it reads when the step ends.
RUNNER_FILES = ("GITHUB_ENV", "GITHUB_PATH", "GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY")


@dataclass(frozen=True)
class ActionsStep:
    """A step of a GitHub Actions job, as the forge-neutral steps (`forge.step.Step`) see it."""

    env: Mapping[str, str]

    def outputs(self, values: Mapping[str, str]) -> None:
        if self.env.get("GITHUB_OUTPUT"):
            append_outputs(self.env["GITHUB_OUTPUT"], values)

    def summary(self, markdown: str) -> None:
        if self.env.get("GITHUB_STEP_SUMMARY"):
            append_step_summary(self.env["GITHUB_STEP_SUMMARY"], markdown)

    def error(self, message: str) -> None:
        print(workflow_command("error", message, title="attest"), flush=True)

    def warning(self, message: str) -> None:
        print(warning(message, title="attest"), flush=True)

    def forget_writes(self) -> None:
        for name in RUNNER_FILES:
            if self.env.get(name):
                _empty(self.env[name])


def _empty(path: str) -> None:
    try:
        with open(path, "w", encoding="utf-8"):
            pass
    except OSError as exc:
        raise UsageError(f"cannot empty this file: {exc.strerror or exc}", path) from None
