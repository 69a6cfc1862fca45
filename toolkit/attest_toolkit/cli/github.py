"""`attest github publish` and the `/attest refresh` steps: parse the options and hand them to
`attest_toolkit.github.publish` and `attest_toolkit.github.refresh`."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from ..errors import UsageError
from ..fixtures.document import atomic_write
from ..forge.verdict_file import default_path
from ..github import refresh
from ..github.commands import append_outputs
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
    group.command("refresh-check")(refresh_check)
    group.command("refresh-logs")(refresh_logs)
    group.command("refresh-reply")(refresh_reply)
    app.add_typer(group, name="github")


def publish_command(
    report: Annotated[Path | None, Opt("--report", help="The report-v2 file.")] = None,
    policy: Annotated[
        Path | None, Opt("--policy", help="Policy file (default: .attest/policy.yml if present).")
    ] = None,
    verdict: Annotated[
        Path | None,
        Opt(
            "--verdict",
            help="The verdict file `attest ci policy` or `attest policy evaluate --verdict-file` wrote: "
            "published as it is, instead of judging the report by --policy.",
        ),
    ] = None,
    verdict_file: Annotated[
        Path | None,
        Opt(
            "--verdict-file",
            help="With --from-artifact: where the base's verdict on the fork's report is written "
            "[default: $RUNNER_TEMP/attest-verdict.json when RUNNER_TEMP is set].",
        ),
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
    project_dir: Annotated[
        Path,
        Opt(
            "--project-dir",
            help="Where the tests ran: --report, --policy, --artifact-dir and "
            "--fixtures-dir start there, and --base-ref is compared there.",
        ),
    ] = Path(),
) -> None:
    """Publish a report. Exits 0 even when GitHub fails (a warning says so); 3 on bad input."""
    options = PublishOptions(
        report=report,
        policy=policy,
        verdict=verdict,
        verdict_file=verdict_file or _runner_verdict_file(),
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
        project_dir=project_dir,
    )
    publish(options, os.environ)


def _runner_verdict_file() -> Path | None:
    return default_path(os.environ) if os.environ.get("RUNNER_TEMP") else None


def refresh_check(
    token_env: Annotated[str, Opt("--token-env", help="Variable holding the token.")] = "GITHUB_TOKEN",
) -> None:
    """Check a `/attest refresh COMMIT [NAME...]` comment: the commenter's permission (asked of the API),
    the pull request (this repository's) and its head (COMMIT). Writes the outputs sha, ref, names and
    refused (the one line to reply instead). Exits 1 when the commenter may not start a refresh."""
    output = os.environ.get("GITHUB_OUTPUT", "")
    if not output:
        raise UsageError("GITHUB_OUTPUT is not set: refresh-check runs as a GitHub Actions step")
    plan = refresh.plan_from_env(os.environ, token_env)
    append_outputs(output, plan.outputs())
    typer.echo(
        plan.refused or f"attest refresh: {plan.sha} of {plan.ref}: {' '.join(plan.names) or 'every fixture'}"
    )


def refresh_logs(
    raw: Annotated[Path, typer.Argument(help="NAME.exit and NAME.log of each re-run.")],
    out: Annotated[Path, typer.Argument(help="Where the redacted logs and results.json go.")],
    secret_env: Annotated[
        list[str] | None, Opt("--secret-env", help="A variable whose value is redacted (repeatable).")
    ] = None,
) -> None:
    """Keep what each re-run printed, redacted with the named variables' values and the credential scan."""
    refresh.keep_logs(raw, out, refresh.job_secrets(os.environ, secret_env or []))


def refresh_reply(
    directory: Annotated[Path, typer.Argument(help="What refresh-logs wrote.")],
    out: Annotated[Path, Opt("--out", help="The reply's markdown file.")],
    commit: Annotated[str, Opt("--commit", help="The commit made (empty: nothing changed).")] = "",
    branch: Annotated[str, Opt("--branch", help="The branch it was pushed to.")] = "",
    diffstat: Annotated[Path | None, Opt("--diffstat", help="`git diff --stat` of the fixtures.")] = None,
) -> None:
    """Write the reply: what was committed, then each fixture's exit status and its output as text."""
    stat = diffstat.read_text(encoding="utf-8", errors="replace") if diffstat else ""
    text = refresh.reply(
        directory, refresh.headline(commit, branch), stat, refresh.job_secrets(os.environ, [])
    )
    atomic_write(out, text, mode=0o644)
