"""`attest report`: the pull-request summary, the HTML page, shard merge, and JUnit XML in and out."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from ..fixtures.diff import changes_between_dirs
from ..fixtures.document import DEFAULT_DIR, atomic_write
from ..forge.changes import fixture_changes
from ..forge.gate import PageInputs, policy_verdict, write_page
from ..github.event import DEFAULT_SERVER_URL
from ..github.links import blob_links
from ..gitlab.codequality import write_codequality
from ..report.build import load_report, merge_reports, write_report
from ..report.junit import from_junit, to_junit
from ..report.summary import render
from .command import command_group

SUMMARY_HELP = """Render a report as the pull-request summary.

The first line is the summary line (`N replayed · N live model calls · $X`); then replay misses at
file:line (linked to the commit with --repo and --sha), failures, not-evaluated tests, the egress mode,
the policy verdict (with --policy, or when .attest/policy.yml exists) and, with --base-fixtures, what
the re-recorded fixtures altered.
"""


class Format(str, Enum):
    markdown = "markdown"
    text = "text"
    json = "json"


ReportOpt = typer.Option("--report", "-r", help="The report-v2 JSON file.")
FormatOpt = typer.Option("--format", "-f", help="markdown, text or json.")
RepoOpt = typer.Option("--repo", envvar="GITHUB_REPOSITORY", help="owner/name, for links to the code.")
ShaOpt = typer.Option("--sha", help="The head commit, for links to the code.")
ServerOpt = typer.Option("--server-url", envvar="GITHUB_SERVER_URL", help="The GitHub server.")
PolicyOpt = typer.Option("--policy", "-p", help="A policy file whose verdict the summary shows.")
BaseOpt = typer.Option(
    "--base-fixtures",
    help="The fixtures directory of the base revision; the summary shows what changed since.",
)
BaseRefOpt = typer.Option(
    "--base-ref", help="A git revision (the PR's base); the summary shows what was re-recorded since."
)
HeadOpt = typer.Option("--fixtures-dir", help="The fixtures directory of this revision.")
MaxOpt = typer.Option("--max-chars", min=200, help="Trim to this many characters (a PR comment: 65536).")
OutOpt = typer.Option("--output", "-o", help="Write to this file instead of standard output.")


def summary_command(
    report: Annotated[Path, ReportOpt],
    fmt: Annotated[Format, FormatOpt] = Format.markdown,
    repo: Annotated[str | None, RepoOpt] = None,
    sha: Annotated[str | None, ShaOpt] = None,
    server_url: Annotated[str, ServerOpt] = DEFAULT_SERVER_URL,
    policy: Annotated[Path | None, PolicyOpt] = None,
    base_fixtures: Annotated[Path | None, BaseOpt] = None,
    base_ref: Annotated[str | None, BaseRefOpt] = None,
    fixtures_dir: Annotated[Path, HeadOpt] = DEFAULT_DIR,
    max_chars: Annotated[int | None, MaxOpt] = None,
    output: Annotated[Path | None, OutOpt] = None,
) -> None:
    loaded = load_report(report)
    verdict = policy_verdict(loaded, policy)
    changes = fixture_changes(base_ref, fixtures_dir)
    if changes is None and base_fixtures is not None:
        changes = changes_between_dirs(base_fixtures, fixtures_dir)
    text = render(
        loaded,
        fmt.value,
        links=blob_links(repo, sha, server_url),
        max_chars=max_chars,
        verdict=verdict,
        fixture_changes=changes,
    )
    _emit(text, output)


HTML_HELP = """Write the report as one self-contained HTML page: the summary line, every test with its
duration and verdict, misses with their component, the policy verdict, each fixture's calls in order
and, with --base-ref, what the re-recorded fixtures changed. It loads nothing from the network.
"""


def html_command(
    report: Annotated[Path, ReportOpt],
    output: Annotated[Path, typer.Option("--output", "-o", help="The HTML file to write.")],
    policy: Annotated[Path | None, PolicyOpt] = None,
    base_ref: Annotated[str | None, BaseRefOpt] = None,
    fixtures_dir: Annotated[Path, HeadOpt] = DEFAULT_DIR,
) -> None:
    write_page(PageInputs(report, output, policy, base_ref, fixtures_dir))


def merge_command(
    reports: Annotated[list[Path], typer.Argument(help="The shard reports, in the order they ran.")],
    output: Annotated[Path, typer.Option("--output", "-o", help="The merged report.")],
) -> None:
    """Merge shard reports into one: tests de-duplicated by id (a retried test keeps its last run)."""
    write_report(merge_reports([load_report(r) for r in reports]), output)


def junit_command(
    report: Annotated[Path, ReportOpt],
    output: Annotated[Path, typer.Option("--output", "-o", help="The JUnit XML file to write.")],
) -> None:
    """Write a report as JUnit XML, replay facts as <properties>."""
    to_junit(load_report(report), output)


def from_junit_command(
    junit: Annotated[Path, typer.Argument(help="A JUnit XML file from any test runner.")],
    output: Annotated[Path, typer.Option("--output", "-o", help="The report-v2 JSON file to write.")],
) -> None:
    """Build a report-v2 from JUnit XML (replay facts from attest.* <properties> when present)."""
    write_report(from_junit(junit), output)


def codequality_command(
    report: Annotated[Path, ReportOpt],
    output: Annotated[
        Path, typer.Option("--output", "-o", help="The JSON file to write (gl-code-quality-report.json).")
    ],
) -> None:
    """Write GitLab's Code Quality report: one issue per replay miss and per test with live calls,
    paths from the repository root, fingerprints that survive a moved line."""
    count = write_codequality(report, output)
    typer.echo(f"attest: {count} Code Quality issue(s) written to {output}")


def _emit(text: str, output: Path | None) -> None:
    if output is None:
        typer.echo(text, nl=False)
    else:
        atomic_write(output, text, mode=0o644)


def register(app: typer.Typer) -> None:
    group = command_group("report", "Reports: PR summary, shard merge, JUnit XML, GitLab Code Quality.")
    group.command("summary", help=SUMMARY_HELP)(summary_command)
    group.command("html", help=HTML_HELP)(html_command)
    group.command("merge")(merge_command)
    group.command("junit")(junit_command)
    group.command("from-junit")(from_junit_command)
    group.command("codequality")(codequality_command)
    app.add_typer(group, name="report")
