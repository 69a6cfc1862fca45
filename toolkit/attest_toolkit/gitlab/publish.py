"""`attest ci publish` on GitLab: the report as the merge request's sticky note, and the run's outputs.

The report is redacted as the GitHub comment is (the same functions, with the GitLab token among the
secrets) before anything is rendered, and rendered by the same summary, so the note is the comment's
inert markdown. Publishing never decides the gate: no token (a fork's pipeline gets none), a pipeline
that is not a merge request's, or GitLab failing is one warning line, and the step passes.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ..credentials.scan import Secrets
from ..errors import AttestError
from ..forge.changes import fixture_changes
from ..forge.gate import run_outputs, worth_telling
from ..forge.paths import from_root, repository_prefix
from ..forge.step import Step
from ..forge.sticky import MARKER
from ..forge.verdict_file import GateVerdict, default_path, read_verdict
from ..report.build import Report, load_report, redact_report, run_secrets
from ..report.summary import NO_LINKS, Links, render
from .client import Client, GitLabError, RetryPolicy
from .context import TOKEN_VARIABLES, Pipeline, token
from .notes import NOTE_LIMIT, MergeRequestNotes, NoteResult

NOTE_MARGIN = 256  # room for the marker, the footer and the safety trim's closing lines


@dataclass(frozen=True)
class NoteOptions:
    report: Path
    verdict: Path | None = None  # the policy step's verdict file: shown as it is, never judged again
    comment: bool = True
    comment_on_change: bool = False  # a new note only when there is something to tell
    base_ref: str | None = None
    fixtures_dir: Path = Path("tests/attest/fixtures")
    report_url: str | None = None
    project_dir: Path = Path()  # where the tests ran: the report's relative paths start there


def summary_markdown(
    options: NoteOptions, env: Mapping[str, str], step: Step
) -> tuple[str, GateVerdict, Report, list[dict] | None]:
    """The note's markdown, redacted, its miss locations linked to the commit on GitLab."""
    pipeline = Pipeline.of(env)
    report = load_report(options.project_dir / options.report)
    verdict = read_verdict(options.project_dir / (options.verdict or default_path(env))).judged()
    secrets = Secrets.of([*run_secrets().values, token(env)])
    redacted = redact_report(report, secrets)
    shown = from_root(redacted, repository_prefix(options.project_dir, env.get("CI_PROJECT_DIR")))
    notes = [f"[The full report (HTML)]({options.report_url})"] if options.report_url else None
    changes = _changes(options, step)
    text = render(
        shown,
        "markdown",
        links=_links(pipeline),
        max_chars=NOTE_LIMIT - len(MARKER) - NOTE_MARGIN,
        verdict=verdict,
        fixture_changes=changes,
        notes=notes,
    )
    return secrets.redact(text), verdict, redacted, changes


def _links(pipeline: Pipeline) -> Links:
    """`{server}/{project}/-/blob/{sha}/{file}#L{line}`; without a project and a commit, none."""
    if not (pipeline.project_path and pipeline.sha):
        return NO_LINKS
    return Links(f"{pipeline.server_url}/{pipeline.project_path}/-/blob/{pipeline.sha}/")


def _changes(options: NoteOptions, step: Step) -> list[dict] | None:
    try:
        return fixture_changes(options.base_ref, options.fixtures_dir, options.project_dir)
    except AttestError as exc:
        step.warning(f"cannot compare fixtures with {options.base_ref}: {exc}")
        return None


def why_not(env: Mapping[str, str]) -> str:
    """Why no note can be written in this pipeline, or "" when one can."""
    pipeline = Pipeline.of(env)
    if not token(env):
        return f"no GitLab token in {' or '.join(TOKEN_VARIABLES)} (a fork's pipeline gets none)"
    if not pipeline.merge_request_iid:
        return "not a merge request pipeline (no CI_MERGE_REQUEST_IID)"
    if not (pipeline.api_url and pipeline.project_id):
        return "CI_API_V4_URL or CI_PROJECT_ID is not set"
    return ""


def post_note(
    options: NoteOptions,
    env: Mapping[str, str],
    markdown: str,
    create: bool,
    retry: RetryPolicy | None = None,
) -> NoteResult:
    """The sticky note holds `markdown`; GitLabError when GitLab fails."""
    pipeline = Pipeline.of(env)
    client = Client(pipeline.api_url, token(env), retry)
    try:
        return MergeRequestNotes(client, pipeline.project_id, pipeline.merge_request_iid).upsert(
            markdown, create=create
        )
    finally:
        client.close()


def publish_step(
    options: NoteOptions, step: Step, env: Mapping[str, str], retry: RetryPolicy | None = None
) -> int:
    """The gate's publish step on GitLab: the note and the outputs; never fails the step."""
    try:
        markdown, verdict, report, changes = summary_markdown(options, env, step)
    except AttestError as exc:
        print(f"attest: {exc}", file=sys.stderr, flush=True)
        step.warning(f"publishing exited {exc.exit_code}; the gate's verdict is unchanged")
        return 0
    url = ""
    skipped = "the note is off (--comment false)" if not options.comment else why_not(env)
    if skipped:
        step.warning(f"{skipped}: skipping the merge request note")
    else:
        try:
            create = not options.comment_on_change or worth_telling(report, verdict, changes)
            url = _told(post_note(options, env, markdown, create, retry), env)
        except GitLabError as exc:
            step.warning(f"publishing to GitLab failed: {exc}; the gate's verdict is unchanged")
        except Exception as exc:  # whatever broke, the policy step's verdict stands
            step.warning(f"publishing failed ({type(exc).__name__}); the gate's verdict is unchanged")
    step.outputs(run_outputs(verdict, url))
    return 0


def _told(note: NoteResult, env: Mapping[str, str]) -> str:
    """The note's URL, said in the log; "" when none was posted."""
    if note.note_id is None:
        print("attest: note not posted: nothing to tell a reviewer (comment: on-change)", flush=True)
        return ""
    url = Pipeline.of(env).note_url(note.note_id)
    extra = f" ({note.deleted} duplicate(s) removed)" if note.deleted else ""
    print(f"attest: note {note.action}: {url}{extra}", flush=True)
    return url
