"""`attest policy evaluate`: gate a test run on the repository's policy file."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..forge.verdict_file import judge, write_verdict
from ..report.build import load_report
from ..report.policy import load_policy
from ..report.summary import render_verdict
from .command import command_group

HELP = """Evaluate a report against the policy and print the verdict, rule by rule.

Exit 0 pass, 1 blocked by the policy, 2 not evaluated (some tests could not be evaluated and the
policy does not block them), 3 could not run (a missing or malformed report or policy).
"""

ReportOpt = typer.Option("--report", "-r", help="The report-v2 JSON file of the run.")
PolicyOpt = typer.Option(
    "--policy",
    "-p",
    help="The policy file (YAML or JSON) [default: .attest/policy.yml if present, else built-in defaults]",
)
JsonOpt = typer.Option("--json", help="Print the verdict as JSON instead of a table.")
VerdictFileOpt = typer.Option(
    "--verdict-file",
    help="Also write the verdict file (schemas/verdict.schema.json) that `attest github publish --verdict` reads.",
)


def evaluate_command(
    report: Annotated[Path, ReportOpt],
    policy: Annotated[Path | None, PolicyOpt] = None,
    as_json: Annotated[bool, JsonOpt] = False,
    verdict_file: Annotated[Path | None, VerdictFileOpt] = None,
) -> None:
    verdict = judge(load_report(report), load_policy(policy), str(report))
    if verdict_file is not None:
        write_verdict(verdict_file, verdict)
    typer.echo(render_verdict(verdict, "json" if as_json else "text"), nl=False)
    raise typer.Exit(verdict.exit_code)


def register(app: typer.Typer) -> None:
    group = command_group("policy", "The policy gate.")
    group.command("evaluate", help=HELP)(evaluate_command)
    app.add_typer(group, name="policy")
