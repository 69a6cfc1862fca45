"""`attest ci pull|select|run|policy|html|publish|gate`: the steps of a CI job that gates a change, one command each.

Each step's inputs are options that also read an `ATTEST_CI_*` variable, so a workflow passes them
through its environment and no value is ever spliced into a shell line. Outputs, the summary and
messages go to the forge the job runs on (`forges.py` chooses: GitLab CI or GitHub Actions); the
decisions are `forge/`'s.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Literal

import typer

from ..fixtures.document import DEFAULT_DIR
from ..forge.changes import base_commit
from ..forge.command import Isolation, Network, RunInputs, run_step
from ..forge.fixtures import PullInputs, pull_step
from ..forge.gate import PageInputs, page_step
from ..forge.selection import SelectInputs, select_step
from ..forge.step import Step, StepFailed
from ..forge.verdict import GateInputs, gate_step, policy_step
from ..forge.verdict_file import default_path
from ..forges import PublishRequest, default_base, publish, step_for, withheld, workspace
from ..github.commands import read_env_file, read_path_file
from ..replay.modes import Mode
from ..report.policy_paths import DEFAULT_PATHS
from .command import command_group

HELP = """The steps of a CI job that gates a change: pull, select, run, policy, html, publish, gate, in that order.

Every option can be given as the ATTEST_CI_* variable its help names. On GitHub Actions, outputs,
the job summary and error lines are its own (GITHUB_OUTPUT, GITHUB_STEP_SUMMARY, workflow commands);
with GITLAB_CI=true, outputs go to a dotenv report (ATTEST_CI_DOTENV, default attest.env) and
messages are plain lines.
"""


def _opt(flag: str, env: str, help: str) -> typer.models.OptionInfo:
    return typer.Option(
        flag, envvar=f"ATTEST_CI_{env}", help=f"{help} [env: ATTEST_CI_{env}]", show_envvar=False
    )


def _as_step(action: Callable[[Step], int]) -> None:
    """Run one step: a StepFailed is the forge's error line and the step's exit code."""
    step = step_for(os.environ)
    try:
        code = action(step)
    except StepFailed as exc:
        step.error(str(exc))
        code = exc.exit_code
    raise typer.Exit(code)


FixturesDir = Annotated[str, _opt("--fixtures-dir", "FIXTURES_DIR", "Where the fixtures live.")]
Report = Annotated[str, _opt("--report", "REPORT", "The report-v2 file of the run.")]
VerdictFile = Annotated[
    Path | None,
    _opt(
        "--verdict",
        "VERDICT",
        "The verdict file the policy step wrote [default: $RUNNER_TEMP/attest-verdict.json].",
    ),
]


def _verdict_file(given: Path | None) -> Path:
    return given if given is not None else default_path(os.environ)


def select_command(
    ids_file: Annotated[Path, _opt("--ids-file", "IDS_FILE", "Where the selected test ids are written.")],
    select: Annotated[
        bool, _opt("--select/--no-select", "SELECT", "Run only the tests the change affects.")
    ] = False,
    base: Annotated[str | None, _opt("--base", "BASE", "The commit the change is compared with.")] = None,
    shard: Annotated[str | None, _opt("--shard", "SHARD", "Only shard i of N, e.g. 2/4.")] = None,
    fixtures_dir: FixturesDir = str(DEFAULT_DIR),
    fixtures: Annotated[
        bool,
        _opt(
            "--fixtures/--no-fixtures", "FIXTURES", "--no-fixtures: a fork's run without the pinned fixtures."
        ),
    ] = True,
) -> None:
    """Choose the tests to run: outputs run, kind, reason and ids (the file)."""
    inputs = SelectInputs(select, base or default_base(os.environ), shard, fixtures_dir, fixtures)
    _as_step(lambda step: select_step(inputs, ids_file, step))


def run_command(
    command: Annotated[
        str,
        _opt(
            "--command",
            "COMMAND",
            "The test command, a shell line; with isolation image, the image's arguments.",
        ),
    ] = "",
    report: Report = "attest-report.json",
    mode: Annotated[
        Mode, _opt("--mode", "MODE", "What a request with no recording gets (ATTEST_REPLAY).")
    ] = Mode.STRICT,
    network: Annotated[
        Network, _opt("--network", "NETWORK", "none: a network namespace; guard: the egress guard.")
    ] = "none",
    isolation: Annotated[
        Isolation,
        _opt("--isolation", "ISOLATION", "host: the sandbox; container: an image; image: the agent's."),
    ] = "host",
    ids_file: Annotated[
        Path | None, _opt("--ids-file", "IDS_FILE", "The selected test ids, appended as arguments.")
    ] = None,
    engine: Annotated[str | None, _opt("--engine", "ENGINE", "container: docker or podman.")] = None,
    image: Annotated[str | None, _opt("--image", "IMAGE", "container: the image to run.")] = None,
    container_options: Annotated[
        str, _opt("--container-options", "CONTAINER_OPTIONS", "container: extra options for run.")
    ] = "",
    agent_image: Annotated[
        str | None, _opt("--agent-image", "AGENT_IMAGE", "image: the agent's image.")
    ] = None,
    fixture: Annotated[str | None, _opt("--fixture", "FIXTURE", "image: its fixture's name.")] = None,
    fixtures_dir: FixturesDir = str(DEFAULT_DIR),
    setup_env: Annotated[
        Path | None,
        _opt(
            "--setup-env",
            "SETUP_ENV",
            "Variables the set-up wrote (GITHUB_ENV's format), for the command only.",
        ),
    ] = None,
    setup_path: Annotated[
        Path | None,
        _opt(
            "--setup-path",
            "SETUP_PATH",
            "PATH entries the set-up wrote (GITHUB_PATH's format), for the command only.",
        ),
    ] = None,
) -> None:
    """Run the test command with the network off; outputs report and exit-code. No report: exit 3 (or the command's)."""
    inputs = RunInputs(
        command,
        report,
        mode,
        network,
        isolation,
        tuple(ids_file.read_text(encoding="utf-8").splitlines()) if ids_file else (),
        engine,
        image,
        container_options,
        agent_image,
        fixture,
        fixtures_dir,
        workspace(os.environ),
        read_env_file(setup_env) if setup_env else {},
        read_path_file(setup_path) if setup_path else (),
        withheld(os.environ),
    )
    _as_step(lambda step: run_step(inputs, step, os.environ))


def policy_command(
    report: Report,
    policy: Annotated[str, _opt("--policy", "POLICY", "The policy file; the default may be absent.")] = str(
        DEFAULT_PATHS[0]
    ),
    verdict_file: Annotated[
        Path | None,
        _opt(
            "--verdict-file",
            "VERDICT_FILE",
            "Where the verdict is written for the later steps [default: $RUNNER_TEMP/attest-verdict.json].",
        ),
    ] = None,
) -> None:
    """Evaluate the policy, write the verdict file; outputs verdict, exit-code and policy. The step always passes."""
    _as_step(lambda step: policy_step(Path(report), policy, _verdict_file(verdict_file), step))


def gate_command(
    ran: Annotated[
        bool, _opt("--ran/--not-ran", "RAN", "Whether the tests ran (the select step's run).")
    ] = False,
    reason: Annotated[str, _opt("--reason", "REASON", "The select step's reason.")] = "",
    fixtures: Annotated[
        bool, _opt("--fixtures/--no-fixtures", "FIXTURES", "--no-fixtures: a fork's run.")
    ] = True,
    summary: Annotated[bool, _opt("--summary/--no-summary", "SUMMARY", "The job summary.")] = True,
    verdict: VerdictFile = None,
    comment_url: Annotated[
        str, _opt("--comment-url", "COMMENT_URL", "Publish's comment, passed on as an output.")
    ] = "",
) -> None:
    """End the gate with the verdict file's exit code (pass 0, blocked 1, not evaluated 2, error 3) and outputs."""
    inputs = GateInputs(ran, reason, fixtures, summary, _verdict_file(verdict), comment_url)
    _as_step(lambda step: gate_step(inputs, step))


Base = Annotated[str | None, _opt("--base", "BASE", "Show what the change re-recorded since this commit.")]
DirOpt = Annotated[Path, _opt("--fixtures-dir", "FIXTURES_DIR", "Where the fixtures live.")]
ProjectDir = Annotated[
    Path,
    _opt(
        "--project-dir",
        "PROJECT_DIR",
        "Where the tests ran: relative paths start there, and git compares there.",
    ),
]


def html_command(
    report: Annotated[Path, _opt("--report", "REPORT", "The report-v2 file of the run.")],
    page: Annotated[Path, _opt("--page", "PAGE", "The HTML file to write.")],
    verdict: Annotated[
        Path | None,
        _opt("--verdict", "VERDICT", "The verdict file the policy step wrote, shown on the page."),
    ] = None,
    base: Base = None,
    fixtures_dir: DirOpt = DEFAULT_DIR,
) -> None:
    """Write the report as one HTML page: output page. A page that cannot be written is a warning (exit 0)."""
    since = base_commit(base or default_base(os.environ))  # the note's base: the page shows what it shows
    inputs = PageInputs(report, page, None, since, fixtures_dir, verdict, judge=False)
    _as_step(lambda step: page_step(inputs, step))


def publish_command(
    report: Annotated[Path, _opt("--report", "REPORT", "The report-v2 file of the run.")],
    artifact_dir: Annotated[
        Path | None,
        _opt("--artifact-dir", "ARTIFACT_DIR", "GitHub: where a read-only run leaves attest-pr.json."),
    ] = None,
    verdict: VerdictFile = None,
    comment: Annotated[
        Literal["true", "false", "on-change"],
        _opt("--comment", "COMMENT", "The sticky PR comment; on-change: a new one only when there is news."),
    ] = "true",
    summary: Annotated[bool, _opt("--summary/--no-summary", "SUMMARY", "The job summary.")] = True,
    annotations: Annotated[
        bool, _opt("--annotations/--no-annotations", "ANNOTATIONS", "Annotations at the misses.")
    ] = True,
    check_run: Annotated[
        bool, _opt("--check-run/--no-check-run", "CHECK_RUN", "An annotated check run.")
    ] = True,
    base: Base = None,
    fixtures_dir: DirOpt = DEFAULT_DIR,
    report_url: Annotated[
        str | None,
        _opt("--report-url", "REPORT_URL", "Where the HTML page was uploaded: the comment links it."),
    ] = None,
    project_dir: ProjectDir = Path(),
) -> None:
    """Publish: on GitHub as `attest github publish` does (token: GITHUB_TOKEN; output pr-artifact), on
    GitLab the merge request's sticky note (token: ATTEST_GITLAB_TOKEN, else GITLAB_TOKEN). Never fails the step."""
    request = PublishRequest(
        report,
        artifact_dir,
        _verdict_file(verdict),
        comment,
        summary,
        annotations,
        check_run,
        base_commit(base or default_base(os.environ)),
        fixtures_dir,
        report_url,
        project_dir,
    )
    _as_step(lambda step: publish(request, step, os.environ))


def pull_command(
    fixtures_dir: DirOpt = DEFAULT_DIR,
    head_repo: Annotated[
        str, _opt("--head-repo", "HEAD_REPO", "The pull request's repository (owner/name).")
    ] = "",
    base_repo: Annotated[str, _opt("--base-repo", "BASE_REPO", "This run's repository.")] = "",
    project_dir: ProjectDir = Path(),
) -> None:
    """Pull the fixtures the lock pins (the store: OBJECT_STORE_*): output available; a fork given no store is false."""
    inputs = PullInputs(fixtures_dir, head_repo, base_repo, project_dir)
    _as_step(lambda step: pull_step(inputs, step, os.environ))


def register(app: typer.Typer) -> None:
    group = command_group("ci", HELP)
    group.command("pull")(pull_command)
    group.command("select")(select_command)
    group.command("run")(run_command)
    group.command("policy")(policy_command)
    group.command("html")(html_command)
    group.command("publish")(publish_command)
    group.command("gate")(gate_command)
    app.add_typer(group, name="ci")
