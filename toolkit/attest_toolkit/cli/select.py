"""`attest select`: print the tests a change affects, optionally one deterministic shard of them."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Iterator
from enum import Enum
from pathlib import Path
from typing import Annotated, TypeVar

import typer

from ..fixtures.document import DEFAULT_DIR
from ..progress import on_terminal
from ..report.build import load_report
from ..selection import Selection, parse_shard, select_tests, split
from ..selection.scan import pytest_runnable

T = TypeVar("T")
PROGRESS_FROM = 200  # files to scan before a terminal shows a progress bar

HELP = """Print the tests affected by the changes between BASE and HEAD.

A changed, deleted or renamed fixture selects the tests that use it (static scan of the tests, plus
the last report's per-test fixtures); a changed test file selects that file; any other change selects
everything unless --only-fixtures. Without --head, uncommitted and untracked files count too.

Nothing to run prints nothing and exits 0 (JSON: "selection": "none"); check for it before
`pytest $(attest select ...)`, since pytest with no arguments runs the whole suite. The JSON
"selection" is "none", "some" or "all" (then "tests" holds the tests directory).
"""


class Format(str, Enum):
    pytest = "pytest"
    lines = "lines"
    json = "json"


BaseOpt = typer.Option("--base", help="The revision the change is compared with.")
HeadOpt = typer.Option("--head", help="The changed revision (default: the working tree).")
FormatOpt = typer.Option("--format", help="pytest: pytest-runnable ids; lines: every id; json.")
ShardOpt = typer.Option("--shard", help="Print only shard i of N (1-based), e.g. 2/4.")
ReportOpt = typer.Option("--report", help="The last report-v2: per-test fixtures and durations.")
FixturesOpt = typer.Option("--fixtures-dir", help="Where attest_replay(name) looks by default.")
TestsOpt = typer.Option("--tests-dir", help="The test sources to scan.")
OtherOpt = typer.Option(
    "--all-on-other-change/--only-fixtures",
    help="Run everything when a non-fixture, non-test file changes, or let only fixture changes select.",
)
RepoOpt = typer.Option("--repo", help="The project directory, inside a git work tree.")


def select_command(
    base: Annotated[str, BaseOpt],
    head: Annotated[str | None, HeadOpt] = None,
    output: Annotated[Format, FormatOpt] = Format.lines,
    shard: Annotated[str | None, ShardOpt] = None,
    report: Annotated[Path | None, ReportOpt] = None,
    fixtures_dir: Annotated[str, FixturesOpt] = str(DEFAULT_DIR),
    tests_dir: Annotated[str, TestsOpt] = "tests",
    all_on_other_change: Annotated[bool, OtherOpt] = True,
    repo: Annotated[Path, RepoOpt] = Path("."),
) -> None:
    shard_of = parse_shard(shard) if shard is not None else None
    last = load_report(report) if report is not None else None
    selection = select_tests(
        repo,
        base,
        head,
        fixtures_dir=fixtures_dir,
        tests_dir=tests_dir,
        report=last,
        only_fixtures=not all_on_other_change,
        progress=_terminal_progress,
    )
    if shard_of is not None:
        selection = split(selection, repo, head, *shard_of, report=last)
    text = render(selection, output)
    if text:
        sys.stdout.write(text)


def render(selection: Selection, output: Format) -> str:
    if output is Format.json:
        return json.dumps(selection.to_json(), indent=2) + "\n"
    tests = pytest_runnable(selection.tests) if output is Format.pytest else selection.tests
    return "".join(f"{t}\n" for t in tests)


def _terminal_progress(items: Iterable[T], total: int) -> Iterator[T]:
    """A progress bar on stderr for a big scan, only at a terminal and never in CI."""
    if total < PROGRESS_FROM or not on_terminal(sys.stderr):
        yield from items
        return
    with typer.progressbar(
        items, length=total, label="attest select: scanning tests", file=sys.stderr
    ) as bar:
        yield from bar


def register(app: typer.Typer) -> None:
    app.command("select", help=HELP)(select_command)
