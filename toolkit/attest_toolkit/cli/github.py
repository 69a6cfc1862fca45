"""`attest github publish`: parse the options and hand them to `attest_toolkit.github.publish`."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from ..github.publish import DEFAULT_ARTIFACT_DIR, PublishOptions, publish
from ..github.publisher import ACTIONS_BOT
from .command import command_group

Opt = typer.Option


def register(app: typer.Typer) -> None:
    group = command_group(
        "github",
        "Publish a report to GitHub: sticky PR comment, job summary, annotations, check run, outputs.",
    )
    group.command("publish")(publish_command)
    app.add_typer(group, name="github")


def publish_command(
    report: Annotated[Path | None, Opt("--report", help="The report-v2 file.")] = None,
    policy: Annotated[
        Path | None, Opt("--policy", help="Policy file (default: .attest/policy.yml if present).")
    ] = None,
    token_env: Annotated[str, Opt("--token-env", help="Variable holding the token.")] = "GITHUB_TOKEN",
    comment: Annotated[bool, Opt("--comment/--no-comment", help="The sticky PR comment.")] = True,
    comment_on_change: Annotated[
        bool,
        Opt(
            "--comment-on-change",
            help="Post no new comment when the run has nothing to tell a reviewer (an existing one is kept true).",
        ),
    ] = False,
    report_url: Annotated[
        str | None, Opt("--report-url", help="Where the HTML report was uploaded: the comment links it.")
    ] = None,
    summary: Annotated[bool, Opt("--summary/--no-summary", help="The job summary.")] = True,
    annotations: Annotated[
        bool, Opt("--annotations/--no-annotations", help="Annotations as workflow commands.")
    ] = True,
    check_run: Annotated[bool, Opt("--check-run/--no-check-run", help="A check run, annotated.")] = True,
    pr_number: Annotated[int | None, Opt("--pr-number", min=1, help="Default: from the event.")] = None,
    event: Annotated[Path | None, Opt("--event", help="Default: $GITHUB_EVENT_PATH.")] = None,
    from_artifact: Annotated[
        Path | None,
        Opt("--from-artifact", help="Directory with attest-pr.json (and the report) of a fork's run."),
    ] = None,
    artifact_dir: Annotated[
        Path, Opt("--artifact-dir", help="Where a read-only run writes attest-pr.json.")
    ] = DEFAULT_ARTIFACT_DIR,
    check_name: Annotated[str, Opt("--check-name", help="Name of the check run.")] = "attest",
    base_ref: Annotated[
        str | None,
        Opt("--base-ref", help="Show what the change re-recorded since this revision (the PR's base)."),
    ] = None,
    fixtures_dir: Annotated[
        Path, Opt("--fixtures-dir", help="Where the fixtures live, for --base-ref.")
    ] = Path("tests/attest/fixtures"),
    bot_login: Annotated[
        str,
        Opt(
            "--bot-login", help="Who an app's installation token comments as (GET /user names a PAT's user)."
        ),
    ] = ACTIONS_BOT,
) -> None:
    """Publish a report. Exits 0 even when GitHub fails (a warning says so); 3 on bad input."""
    options = PublishOptions(
        report=report,
        policy=policy,
        token_env=token_env,
        comment=comment,
        comment_on_change=comment_on_change,
        report_url=report_url,
        summary=summary,
        annotations=annotations,
        check_run=check_run,
        pr_number=pr_number,
        event=event,
        from_artifact=from_artifact,
        artifact_dir=artifact_dir,
        check_name=check_name,
        base_ref=base_ref,
        fixtures_dir=fixtures_dir,
        bot_login=bot_login,
    )
    publish(options, os.environ)
