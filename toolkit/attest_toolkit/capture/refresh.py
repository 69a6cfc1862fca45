"""`attest capture --refresh`: re-running what a fixture records it was made by.

The plan read from the fixture's source (the command and its flags, or the pytest test that recorded
it), the command shown shell-quoted with its control characters visible, the confirmation asked at a
terminal (or `--yes`), and the re-run, which replaces the fixture only if it ends as expected.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from ..credentials.scan import Secrets, redact_argv
from ..errors import AttestError, FixtureError, UsageError
from ..fixtures.document import fixture_path, read_fixture
from ..progress import ProgressLine
from ..replay.rerecord import by_command
from ..tools.declare import specs_of
from .run import CaptureFailed, capture, capture_secrets, describe_exit, portable_command, run_child


@dataclass(frozen=True)
class RefreshPlan:
    name: str
    fixtures_dir: Path | None
    path: Path
    command: list[str]
    expect_fail: bool
    tools: list[str] = field(default_factory=list)  # the `--tool` declarations to re-create
    test: str | None = None  # the pytest node id that recorded it: a refresh re-runs that test


def plan_refresh(
    name: str,
    fixtures_dir: str | Path | None = None,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> RefreshPlan:
    """What `capture --refresh` would re-run, from the fixture's recorded source."""
    path = fixture_path(name, fixtures_dir)
    doc = read_fixture(path, capture_secrets(dict(os.environ if env is None else env), cwd))
    source = doc["source"]
    command = list(source.get("command") or [])
    if source.get("image"):
        raise FixtureError(
            f"was recorded from the image {source['image']}; re-record it with "
            f"`attest capture --image {source['image']} --name {name}`",
            path,
        )
    if not command:
        origin = f" (imported from {source['imported_from']})" if source.get("imported_from") else ""
        raise FixtureError(
            f"records no command to re-run{origin}; record it with `attest capture --name {name} -- CMD`",
            path,
        )
    expect_fail = bool(source.get("flags", {}).get("expect_fail", False))
    tools = specs_of(doc.get("tools", {}), dict(os.environ if env is None else env))
    test = source.get("test")
    if test is not None and (not test or test.startswith("-")):  # an option smuggled in as a node id
        raise FixtureError(f"source.test {test!r} is not a pytest node id", path)
    directory = Path(fixtures_dir) if fixtures_dir else None
    return RefreshPlan(name, directory, path, command, expect_fail, tools, test)


_NAMED_ESCAPES = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def _escape_char(char: str) -> str:
    if char in "'\\":
        return "\\" + char
    if char in _NAMED_ESCAPES:
        return _NAMED_ESCAPES[char]
    if char.isprintable():
        return char
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def quote_arg(arg: str) -> str:
    """Shell quoting that also shows control characters ($'...'), so a printed command hides nothing."""
    if arg.isprintable():
        return shlex.quote(arg)
    return "$'" + "".join(_escape_char(c) for c in arg) + "'"


def quote_command(argv: Sequence[str]) -> str:
    return " ".join(quote_arg(arg) for arg in argv)


def describe_plan(plan: RefreshPlan, only_misses: bool = False) -> list[str]:
    if plan.test is not None:
        return [
            f"attest capture: recorded test: {quote_arg(plan.test)}",
            f"attest capture: runs: {quote_command(test_command(plan.test, only_misses))}",
        ]
    flags = " ".join([*(["--expect-fail"] if plan.expect_fail else []), *(f"--tool {t}" for t in plan.tools)])
    flags = flags or "(none)"
    return [
        f"attest capture: recorded command: {quote_command(plan.command)}",
        f"attest capture: flags: {flags}",
    ]


def test_command(test: str, only_misses: bool, python: str = sys.executable) -> list[str]:
    """pytest re-running one test with recording on (given on the command line, so also under CI)."""
    mode = "new" if only_misses else "all"
    return [python, "-m", "pytest", "-q", f"--attest-record={mode}", "--", test]


def check_overwrite(argv: Sequence[str], name: str, fixtures_dir: str | Path | None = None) -> None:
    """Refuse, before anything runs, a new capture that would replace a fixture recorded from another
    command (or by a test, an import, an image): a reused name must not lose a recording in silence.
    An unreadable fixture is no recording to keep."""
    path = fixture_path(name, fixtures_dir)
    try:
        source = json.loads(path.read_text(encoding="utf-8"))["source"]
    except (OSError, ValueError, KeyError, TypeError):
        return
    if not isinstance(source, dict):
        return
    recorded = source.get("command") if by_command(source) else None
    # Both as a fixture stores a command (an older fixture may hold the interpreter's absolute path).
    if isinstance(recorded, list) and portable_command([str(a) for a in recorded]) == redact_argv(
        portable_command(argv), Secrets.of([])
    ):
        return
    raise UsageError(
        f"was recorded {_origin(source)}, not from this command; overwrite it with --force, or pick "
        "another --name",
        path,
    )


def _origin(source: Mapping[str, Any]) -> str:
    """How a fixture was recorded, in the words of a refusal to overwrite it."""
    if source.get("test"):
        return f"by the test {quote_arg(str(source['test']))}"
    if source.get("imported_from"):
        return "by an import"
    if source.get("image"):
        return f"from the image {quote_arg(str(source['image']))}"
    command = source.get("command")
    return (
        f"from `{quote_command([str(a) for a in command])}`" if isinstance(command, list) else "another way"
    )


class RefreshDeclined(AttestError):
    """The user answered no: nothing ran, nothing changed."""


def _interactive(stdin: IO[str]) -> bool:
    isatty = getattr(stdin, "isatty", None)
    return bool(isatty and isatty())


def confirm_refresh(
    plan: RefreshPlan, yes: bool, stdin: IO[str], out: IO[str], only_misses: bool = False
) -> None:
    """Ask at a terminal; without one, --yes is required. Raises when the refresh must not run."""
    for line in describe_plan(plan, only_misses):
        out.write(line + "\n")
    out.flush()
    if yes:
        return
    if not _interactive(stdin):
        raise UsageError(
            "refusing to re-run the recorded command without confirmation: no terminal to ask at; "
            "review the command above, then pass --yes",
            plan.path,
        )
    out.write(f"Re-run this command and overwrite {plan.path}? [y/N] ")
    out.flush()
    if stdin.readline().strip().lower() not in ("y", "yes"):
        raise RefreshDeclined("not confirmed; nothing ran and the fixture is unchanged", plan.path)


def refresh(
    plan: RefreshPlan,
    *,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    progress: ProgressLine | None = None,
    only_misses: bool = False,
) -> None:
    """Re-run the recorded command with its recorded flags; replace the fixture only if the run ended
    as expected (a failed refresh leaves it byte for byte). A fixture a test recorded is refreshed by
    that test, under pytest with `--attest-record`. `only_misses`: see `capture.only_misses`."""
    if plan.test is not None:
        refresh_test(plan, only_misses, env, cwd)
        return
    capture(
        local_command(plan.command),
        plan.name,
        fixtures_dir=plan.fixtures_dir,
        expect_fail=plan.expect_fail,
        env=env,
        cwd=cwd,
        progress=progress,
        tools=plan.tools,
        only_misses=only_misses,
    )


def local_command(command: Sequence[str]) -> list[str]:
    """A stored command as `--refresh` runs it: `python` is the interpreter attest runs under (the
    project's virtualenv), as the command's own absolute interpreter was when it was recorded."""
    return [sys.executable, *command[1:]] if command and command[0] == "python" else list(command)


def refresh_test(
    plan: RefreshPlan, only_misses: bool, env: Mapping[str, str] | None, cwd: Path | None
) -> None:
    """The plugin in that pytest run records and writes the fixture, only if the test passes."""
    assert plan.test is not None
    returncode = run_child(
        test_command(plan.test, only_misses), dict(os.environ if env is None else env), cwd
    )
    if returncode != 0:
        raise CaptureFailed(
            f"pytest {describe_exit(returncode)}; a test writes its fixture only when it passes", plan.path
        )
