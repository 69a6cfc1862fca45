"""`attest github publish`: a report to the pull request, the job summary, annotations and outputs.

The steps, in order: annotations as workflow commands on stdout; the job summary; then, when the
token may write, the sticky comment and a check run; last, the step outputs. GitHub failing never
changes the gate's verdict: a failed step prints one `::warning::` line and the others still run.
A pull request from a fork has a read-only token, and so has any run that GitHub answers with 403
"Resource not accessible by integration": those skip the comment and the check run with one notice
and leave `attest-pr.json` (and a copy of the report) for the `workflow_run` publish workflow, which
runs `attest github publish --from-artifact DIR` with a write token. Only bad input (a malformed
report, policy, event file or artifact) is an error.
"""

from __future__ import annotations

import re
import shutil
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TextIO

from ..credentials.scan import Secrets
from ..errors import AttestError, UsageError
from ..fixtures.document import atomic_write
from ..forge.changes import fixture_changes
from ..forge.gate import run_outputs, worth_telling
from ..forge.step import Step
from ..forge.verdict_file import GateVerdict, judge, read_verdict, write_verdict
from ..report.build import Report, contradiction, load_report, redact_report, run_secrets
from ..report.policy import Policy, load_policy, parse_policy, parse_text
from ..report.policy_paths import DEFAULT_PATHS
from ..report.summary import render
from . import annotations as ann
from .commands import Annotation, annotation_command, append_outputs, append_step_summary, notice, warning
from .event import Context, PrArtifact, PullRequest, load_context, read_pr_artifact, write_pr_artifact
from .links import blob_links
from .paths import from_root, repository_prefix
from .publisher import ACTIONS_BOT, MARKER, CommentResult, Publisher, PublishError, ReadOnlyToken, RetryPolicy
from .trim import CHECK_RUN_TEXT_LIMIT, COMMENT_LIMIT, STEP_SUMMARY_LIMIT, fit

DEFAULT_ARTIFACT_DIR = Path("attest-pr")
ARTIFACT_REPORT = "attest-report.json"
CHECK_RUN_NOTICE = "… trimmed to fit GitHub's check run summary limit; see the job summary for the rest."
# Room left in a comment for the marker line and the safety trim's closing lines.
COMMENT_MARGIN = 256
CONCLUSIONS = {"pass": "success", "blocked": "failure", "not_evaluated": "neutral"}
# A link in the comment's markdown: nothing that could end the link or add markup.
_SAFE_URL = re.compile(r"https://[A-Za-z0-9._~:/?#@!$&'*+,;=%-]+")


@dataclass(frozen=True)
class PublishOptions:
    report: Path | None = None
    policy: Path | None = None  # judged by, when no verdict file is given
    verdict: Path | None = None  # the policy step's verdict file: published as it is, never judged again
    verdict_file: Path | None = None  # --from-artifact: where the base's verdict on the fork's report goes
    token_env: str = "GITHUB_TOKEN"
    comment: bool = True
    summary: bool = True
    annotations: bool = True
    check_run: bool = True
    pr_number: int | None = None
    event: Path | None = None
    from_artifact: Path | None = None
    artifact_dir: Path = DEFAULT_ARTIFACT_DIR
    check_name: str = "attest"
    base_ref: str | None = None  # show what the change re-recorded since this revision
    fixtures_dir: Path = Path("tests/attest/fixtures")
    bot_login: str = ACTIONS_BOT  # who an installation token comments as (GET /user answers it 403)
    # on-change: a run with nothing to tell a reviewer posts no new comment (an existing one is
    # still kept true), as Codecov's require_changes
    comment_on_change: bool = False
    report_url: str | None = None  # where the HTML report was uploaded; the comment links it
    # Where the tests ran: the relative paths above start there and git reads the change there, so
    # the step that holds the token can work elsewhere than the pull request's checkout.
    project_dir: Path = Path()

    def in_project(self) -> PublishOptions:
        """The options with the report, policy, verdict and artifact paths taken from the project directory."""
        return replace(
            self,
            report=self.project_dir / self.report if self.report is not None else None,
            policy=self.project_dir / self.policy if self.policy is not None else None,
            verdict=self.project_dir / self.verdict if self.verdict is not None else None,
            artifact_dir=self.project_dir / self.artifact_dir,
        )


@dataclass
class PublishResult:
    verdict: str
    outputs: dict[str, str] = field(default_factory=dict)
    comment: CommentResult | None = None
    check_run_url: str | None = None
    artifact: Path | None = None
    skipped: str | None = None  # why the comment and check run were not attempted
    warnings: list[str] = field(default_factory=list)
    waits: list[float] = field(default_factory=list)


@dataclass(frozen=True)
class _Run:
    """What every step needs, read and checked before anything is written."""

    options: PublishOptions
    context: Context
    report: Report
    report_text: str
    verdict: GateVerdict
    token: str
    secrets: Secrets
    out: TextIO
    fixture_changes: list[dict] | None = None
    path_prefix: str = ""  # where the tests ran, relative to the repository root

    @property
    def shown(self) -> Report:
        """The report with its paths from the repository root, for annotations and links."""
        return from_root(self.report, self.path_prefix)


def publish(
    options: PublishOptions,
    env: Mapping[str, str],
    out: TextIO | None = None,
    retry: RetryPolicy | None = None,
) -> PublishResult:
    """Publish as far as the token allows; raises AttestError only for bad input."""
    return _publish(options.in_project(), env, out, retry)


def _publish(
    options: PublishOptions, env: Mapping[str, str], out: TextIO | None, retry: RetryPolicy | None
) -> PublishResult:
    run = _prepare(options, env, out or sys.stdout, retry)
    result = PublishResult(verdict=run.verdict.verdict)
    found = [_redacted(a, run.secrets) for a in ann.from_report(run.shown)]
    if options.annotations:
        for annotation in found:
            _say(run, annotation_command(annotation))
    if options.summary and run.context.step_summary:
        append_step_summary(run.context.step_summary, _markdown(run, STEP_SUMMARY_LIMIT))
    if options.comment or options.check_run:
        _publish_to_github(run, found, result, retry)
    result.outputs = _outputs(run, result)
    if run.context.output:
        append_outputs(run.context.output, result.outputs)
    return result


def publish_step(options: PublishOptions, step: Step, env: Mapping[str, str]) -> int:
    """The gate's publish step: publishing never decides the gate, so a failure is a warning and the
    step passes; a read-only run's artifact (for the publish workflow) is named in the output
    `pr-artifact`."""
    options = options.in_project()
    shutil.rmtree(options.artifact_dir, ignore_errors=True)  # never a stale artifact for this run
    try:
        _publish(options, env, None, None)
    except AttestError as exc:
        print(f"attest: {exc}", file=sys.stderr, flush=True)
        step.warning(f"publishing exited {exc.exit_code}; the gate's verdict is unchanged")
    except Exception as exc:  # whatever broke, the policy step's verdict stands
        step.warning(f"publishing failed ({type(exc).__name__}); the gate's verdict is unchanged")
    if (options.artifact_dir / "attest-pr.json").is_file():
        step.outputs({"pr-artifact": str(options.artifact_dir)})
    return 0


# --- reading the inputs ----------------------------------------------------------------------------


def _prepare(options: PublishOptions, env: Mapping[str, str], out: TextIO, retry: RetryPolicy | None) -> _Run:
    context = load_context(env, options.event, options.pr_number)
    prefix = repository_prefix(options.project_dir, env.get("GITHUB_WORKSPACE"))
    if options.from_artifact is not None:
        context, options, prefix = _from_artifact(context, options)
    if options.report is None:
        raise UsageError("--report is required (or --from-artifact with a report beside attest-pr.json)")
    if options.report_url is not None and not _SAFE_URL.fullmatch(options.report_url):
        raise UsageError(
            f"--report-url must be an https:// URL without spaces or brackets: {options.report_url!r}"
        )
    report = load_report(options.report)
    token = env.get(options.token_env, "")
    verdict = _verdict(options, report, context, token, retry)
    secrets = Secrets.of([*run_secrets().values, token])
    return _Run(
        options=options,
        context=context,
        # The one way into everything published (comment, summary, annotations, check run, log lines):
        # every string of the report redacted before any of it is rendered or escaped.
        report=redact_report(report, secrets),
        report_text=Path(options.report).read_text(encoding="utf-8"),
        verdict=verdict,
        token=token,
        secrets=secrets,
        out=out,
        fixture_changes=_fixture_changes(options, out),
        path_prefix=prefix,
    )


def _verdict(
    options: PublishOptions, report: Report, context: Context, token: str, retry: RetryPolicy | None
) -> GateVerdict:
    """The policy step's verdict when its file is given; a fork's report is judged here, by the base
    repository's policy, and that verdict written to the same kind of file."""
    assert options.report is not None
    if options.from_artifact is None:
        if options.verdict is not None:
            return read_verdict(options.verdict).judged()
        return judge(report, load_policy(options.policy, root=options.project_dir), str(options.report))
    # A fork's report: its summary must be what its rows add up to, and the policy is the base's.
    problem = contradiction(report)
    if problem:
        raise UsageError(f"the report contradicts itself: {problem}", options.report)
    policy = _base_policy(context, token, retry) if options.policy is None else load_policy(options.policy)
    verdict = judge(report, policy, str(options.report))
    if options.verdict_file is not None:
        write_verdict(options.verdict_file, verdict)
    return verdict


def _base_policy(context: Context, token: str, retry: RetryPolicy | None) -> Policy:
    """The base repository's policy, read from its default branch through the API: a fork's pull
    request cannot loosen the policy its report is judged by, and none of its code runs."""
    if not (token and context.repository):
        raise UsageError(
            "--from-artifact reads the base repository's policy: it needs a token and the repository"
        )
    publisher = Publisher(token, context.repository, context.api_url, retry)
    try:
        found = publisher.default_branch_file(tuple(p.as_posix() for p in DEFAULT_PATHS))
    except PublishError as exc:
        raise UsageError(f"cannot read the base repository's policy: {exc}") from None
    finally:
        publisher.close()
    if found is None:
        return Policy(source=f"built-in defaults (no policy file on {context.repository}'s default branch)")
    branch, path, text = found
    source = f"{context.repository}@{branch}:{path}"
    return parse_policy(parse_text(text, source), source)


def _fixture_changes(options: PublishOptions, out: TextIO) -> list[dict] | None:
    """What the change re-recorded; a repository git cannot read only loses this section."""
    try:
        return fixture_changes(options.base_ref, Path(options.fixtures_dir), options.project_dir)
    except AttestError as exc:
        # The ref and git's message are the pull request's words: escaped like every workflow command.
        print(warning(f"cannot compare fixtures with {options.base_ref}: {exc}", title="attest"), file=out)
        return None


def _from_artifact(context: Context, options: PublishOptions) -> tuple[Context, PublishOptions, str]:
    """The pull request and head commit a fork's run left behind, checked against this run."""
    assert options.from_artifact is not None
    artifact = read_pr_artifact(options.from_artifact)
    where = Path(options.from_artifact)
    if not context.repository:
        # The repository whose policy judges the report and whose pull request gets the comment is
        # the run's own, never one the artifact names.
        raise UsageError("--from-artifact needs GITHUB_REPOSITORY, the repository of this run", where)
    if artifact.repository != context.repository:
        raise UsageError(
            f"the artifact is for {artifact.repository}, this run for {context.repository}", where
        )
    # The workflow_run event is GitHub's word on which commit the gate ran and how it ended; the
    # artifact is the fork's, so without that word nothing in it can be checked.
    if not context.workflow_run_head_sha:
        raise UsageError("--from-artifact needs a workflow_run event with workflow_run.head_sha", where)
    if not context.workflow_run_conclusion:
        raise UsageError("--from-artifact needs a workflow_run event with workflow_run.conclusion", where)
    if artifact.head_sha != context.workflow_run_head_sha:
        raise UsageError(
            "the artifact's head_sha is not the head commit of the triggering workflow run", where
        )
    if options.report is None and artifact.report:
        base = where if where.is_dir() else where.parent
        options = replace(options, report=base / artifact.report)
    pr = PullRequest(artifact.pr_number, artifact.head_sha, artifact.head_repository, artifact.repository)
    context = replace(
        context, repository=artifact.repository, pull_request=pr, sha=artifact.head_sha, fork=False
    )
    return context, options, artifact.path_prefix or ""


# --- what is published -----------------------------------------------------------------------------


def _say(run: _Run, line: str) -> None:
    print(line, file=run.out, flush=True)


def _redacted(annotation: Annotation, secrets: Secrets) -> Annotation:
    title = secrets.redact(annotation.title) if annotation.title else None
    return replace(annotation, message=secrets.redact(annotation.message), title=title)


def _markdown(run: _Run, max_chars: int) -> str:
    ctx = run.context
    text = render(
        run.shown,
        "markdown",
        links=blob_links(ctx.repository, ctx.sha, ctx.server_url),
        max_chars=max_chars,
        verdict=run.verdict,
        fixture_changes=run.fixture_changes,
        notes=_notes(run),
    )
    return run.secrets.redact(text)


def _notes(run: _Run) -> list[str] | None:
    notes = [_gate_note(run)] if _gate_failed(run) else []
    if run.options.report_url:
        notes.append(f"[The full report (HTML)]({run.options.report_url})")
    return notes or None


def _gate_failed(run: _Run) -> bool:
    """A fork's gate run that did not succeed: whatever its report says, it is not published as a pass."""
    conclusion = run.context.workflow_run_conclusion
    return run.options.from_artifact is not None and conclusion != "success"


def _gate_note(run: _Run) -> str:
    conclusion = run.context.workflow_run_conclusion
    return f"**The gate run concluded `{conclusion}`**: this is not published as a pass, whatever the report says."


def _conclusion(run: _Run) -> str:
    return "failure" if _gate_failed(run) else CONCLUSIONS[run.verdict.verdict]


def _outputs(run: _Run, result: PublishResult) -> dict[str, str]:
    return run_outputs(run.verdict, result.comment.url if result.comment else "")


# --- GitHub ----------------------------------------------------------------------------------------


def _publish_to_github(
    run: _Run, found: list[Annotation], result: PublishResult, retry: RetryPolicy | None
) -> None:
    ctx = run.context
    if ctx.fork:
        _degrade(run, result, "this pull request comes from a fork, whose token is read-only")
        return
    if not run.token:
        _skip(run, result, f"no GitHub token in ${run.options.token_env}")
        return
    if not ctx.repository:
        _skip(run, result, "GITHUB_REPOSITORY is not set")
        return
    publisher = Publisher(run.token, ctx.repository, ctx.api_url, retry, bot_login=run.options.bot_login)
    try:
        _comment_step(run, publisher, result)
        _check_run_step(run, publisher, found, result)
    except ReadOnlyToken as exc:
        _degrade(run, result, f"GitHub refused a write: {exc}")
    finally:
        publisher.close()
        result.waits = list(publisher.waits)
        if result.waits:
            waited = f"{len(result.waits)} retries, {sum(result.waits):.0f}s of waiting in all"
            _say(run, f"attest: GitHub was busy or rate-limited: {waited}")


def _comment_step(run: _Run, publisher: Publisher, result: PublishResult) -> None:
    pr = run.context.pull_request
    if not run.options.comment or pr is None:
        return
    try:
        if run.options.from_artifact is not None and not _head_still(run, publisher, pr):
            return
        markdown = _markdown(run, COMMENT_LIMIT - len(MARKER) - COMMENT_MARGIN)
        create = not run.options.comment_on_change or worth_telling(
            run.report, run.verdict, run.fixture_changes
        )
        result.comment = publisher.upsert_comment(pr.number, markdown, create=create)
    except ReadOnlyToken:
        raise
    except PublishError as exc:
        _warn(run, result, str(exc))
        return
    if not result.comment.url:
        _say(run, "attest: comment not posted: nothing to tell a reviewer (comment: on-change)")
        result.comment = None
        return
    extra = f" ({result.comment.deleted} duplicate(s) removed)" if result.comment.deleted else ""
    _say(run, f"attest: comment {result.comment.action}: {result.comment.url}{extra}")


def _head_still(run: _Run, publisher: Publisher, pr: PullRequest) -> bool:
    """The artifact's commit is still the pull request's head; else its summary would be stale."""
    head = publisher.pull_head_sha(pr.number)
    if head == pr.head_sha:
        return True
    _say(
        run,
        notice(f"attest: pull request #{pr.number} has moved on to {head}; not commenting on {pr.head_sha}"),
    )
    return False


def _check_run_step(run: _Run, publisher: Publisher, found: list[Annotation], result: PublishResult) -> None:
    if not run.options.check_run or not run.context.sha:
        return
    # GitHub counts the check run's summary in UTF-8 bytes, whatever its documentation calls them.
    markdown = _markdown(run, CHECK_RUN_TEXT_LIMIT)
    summary = fit(markdown, CHECK_RUN_TEXT_LIMIT, unit="bytes", notice=CHECK_RUN_NOTICE)
    try:
        result.check_run_url = publisher.create_check_run(
            name=run.options.check_name,
            head_sha=run.context.sha,
            conclusion=_conclusion(run),
            title=run.verdict.summary_line,
            summary=summary,
            annotations=[ann.to_check_run(a) for a in found],
        )
    except ReadOnlyToken:
        raise
    except PublishError as exc:
        _warn(run, result, str(exc))
        return
    # GitHub's check run may carry no html_url (null), as its API description allows.
    _say(run, f"attest: check run created: {result.check_run_url or '(GitHub gave no URL)'}")


def _warn(run: _Run, result: PublishResult, problem: str) -> None:
    message = f"attest: publishing to GitHub failed: {problem}; the gate's verdict is unchanged"
    result.warnings.append(message)
    _say(run, warning(message))


def _skip(run: _Run, result: PublishResult, why: str, note: str = "") -> None:
    result.skipped = why
    rest = "the check run" if result.comment else "the PR comment and the check run"
    _say(run, notice(f"attest: {why}: skipping {rest}{note}"))


def _degrade(run: _Run, result: PublishResult, why: str) -> None:
    """Read-only: say so once, and leave what the workflow_run publish workflow needs."""
    pr, ctx = run.context.pull_request, run.context
    note = ""
    if pr is not None and pr.head_sha and ctx.repository and run.options.from_artifact is None:
        result.artifact = _write_artifact(run, pr, ctx.repository)
        note = f"; wrote {result.artifact} for the workflow_run publish workflow"
    _skip(run, result, why, note)


def _write_artifact(run: _Run, pr: PullRequest, repository: str) -> Path:
    directory = run.options.artifact_dir
    directory.mkdir(parents=True, exist_ok=True)
    atomic_write(directory / ARTIFACT_REPORT, run.report_text, mode=0o644)
    artifact = PrArtifact(
        pr.number, pr.head_sha or "", repository, pr.head_repo, ARTIFACT_REPORT, run.path_prefix or None
    )
    return write_pr_artifact(directory, artifact)
