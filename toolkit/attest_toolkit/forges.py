"""The forge a CI job runs on, chosen here and nowhere else: GitLab CI when `GITLAB_CI=true`, else
GitHub Actions. `attest ci` asks this module for the step, the defaults the forge's variables give
and the publisher; `forge/` decides everything else without knowing which forge it is. A third forge
is one more package beside `github/` and `gitlab/`, and one more branch here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from .errors import UsageError
from .forge.step import Step
from .github.commands import ActionsStep
from .github.publish import PublishOptions
from .github.publish import publish_step as github_publish
from .gitlab.context import TOKEN_VARIABLES, on_gitlab
from .gitlab.publish import NoteOptions
from .gitlab.publish import publish_step as gitlab_publish
from .gitlab.step import GitLabStep


def step_for(env: Mapping[str, str]) -> Step:
    return GitLabStep(env) if on_gitlab(env) else ActionsStep(env)


def default_base(env: Mapping[str, str]) -> str | None:
    """The commit a change is compared with when none is given: a GitLab merge request's diff base."""
    return (env.get("CI_MERGE_REQUEST_DIFF_BASE_SHA") or None) if on_gitlab(env) else None


def workspace(env: Mapping[str, str]) -> Path | None:
    """The checkout a container mounts."""
    found = env.get("CI_PROJECT_DIR") if on_gitlab(env) else env.get("GITHUB_WORKSPACE")
    return Path(found) if found else None


def withheld(env: Mapping[str, str]) -> tuple[str, ...]:
    """Variables the test command never gets: the forge's publishing tokens."""
    return TOKEN_VARIABLES if on_gitlab(env) else ()


@dataclass(frozen=True)
class PublishRequest:
    """What `attest ci publish` was asked, whichever forge publishes it."""

    report: Path
    artifact_dir: Path | None = None
    verdict: Path | None = None  # the policy step's verdict file
    comment: str = "true"  # true, false or on-change
    summary: bool = True
    annotations: bool = True
    check_run: bool = True
    base_ref: str | None = None
    fixtures_dir: Path = Path("tests/attest/fixtures")
    report_url: str | None = None
    project_dir: Path = Path()


def publish(request: PublishRequest, step: Step, env: Mapping[str, str]) -> int:
    if on_gitlab(env):
        return gitlab_publish(_note_options(request), step, env)
    if request.artifact_dir is None:
        raise UsageError(
            "--artifact-dir is required on GitHub Actions (a read-only run leaves attest-pr.json there)"
        )
    return github_publish(_github_options(request, request.artifact_dir), step, env)


def _note_options(request: PublishRequest) -> NoteOptions:
    return NoteOptions(
        report=request.report,
        verdict=request.verdict,
        comment=request.comment != "false",
        comment_on_change=request.comment == "on-change",
        base_ref=request.base_ref,
        fixtures_dir=request.fixtures_dir,
        report_url=request.report_url,
        project_dir=request.project_dir,
    )


def _github_options(request: PublishRequest, artifact_dir: Path) -> PublishOptions:
    return PublishOptions(
        report=request.report,
        verdict=request.verdict,
        comment=request.comment != "false",
        comment_on_change=request.comment == "on-change",
        summary=request.summary,
        annotations=request.annotations,
        check_run=request.check_run,
        artifact_dir=artifact_dir,
        base_ref=request.base_ref,
        fixtures_dir=request.fixtures_dir,
        report_url=request.report_url,
        project_dir=request.project_dir,
    )
