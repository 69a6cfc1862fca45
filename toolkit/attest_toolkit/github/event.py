"""What a GitHub Actions run is about: repository, pull request, head commit, fork or not.

Read from the GITHUB_* variables and the event file at GITHUB_EVENT_PATH. A `pull_request` run from a
fork gets a read-only token, so it cannot comment; it leaves a small artifact (`attest-pr.json`) that
the `workflow_run` publish workflow, which has a write token, reads to know which pull request and
commit the report belongs to (`workflow_run` events of forks carry no pull request number).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import UsageError, read_text
from ..fixtures.document import atomic_write
from ..fixtures.validation import first_error

PR_ARTIFACT = "attest-pr.json"
DEFAULT_API_URL = "https://api.github.com"
DEFAULT_SERVER_URL = "https://github.com"


@dataclass(frozen=True)
class PullRequest:
    number: int
    head_sha: str | None
    head_repo: str | None = None
    base_repo: str | None = None


@dataclass(frozen=True)
class Context:
    """Everything publishing needs to know about the run, with the GitHub Actions defaults applied."""

    repository: str | None
    event_name: str | None
    sha: str | None
    pull_request: PullRequest | None
    fork: bool
    api_url: str = DEFAULT_API_URL
    server_url: str = DEFAULT_SERVER_URL
    step_summary: Path | None = None
    output: Path | None = None
    workflow_run_head_sha: str | None = None
    workflow_run_conclusion: str | None = None  # how the gate run that triggered this one ended


def read_event(path: str | Path) -> dict[str, Any]:
    """The event payload; a missing or malformed file is a one-line error naming it."""
    text = read_text(Path(path), UsageError, "event file")
    try:
        event = json.loads(text)
    except json.JSONDecodeError as exc:
        where = f"line {exc.lineno} column {exc.colno}"
        raise UsageError(f"malformed event JSON: {exc.msg} at {where}", path) from None
    if not isinstance(event, dict):
        raise UsageError("malformed event: the top level is not a JSON object", path)
    return event


def _get(doc: Any, dotted: str) -> Any:
    for key in dotted.split("."):
        if not isinstance(doc, dict):
            return None
        doc = doc.get(key)
    return doc


def _string(event: dict, dotted: str, path: Path) -> str | None:
    value = _get(event, dotted)
    if value is not None and not isinstance(value, str):
        raise UsageError(f"malformed event: {dotted} is not a string", path)
    return value


def _pull_request(event: dict, path: Path) -> PullRequest | None:
    pr = event.get("pull_request")
    if pr is None:
        return None
    if not isinstance(pr, dict):
        raise UsageError("malformed event: pull_request is not an object", path)
    number = pr.get("number", event.get("number"))
    if not isinstance(number, int) or isinstance(number, bool) or number < 1:
        raise UsageError("malformed event: pull_request.number is not a positive integer", path)
    return PullRequest(
        number=number,
        head_sha=_string(event, "pull_request.head.sha", path),
        head_repo=_string(event, "pull_request.head.repo.full_name", path),
        base_repo=_string(event, "pull_request.base.repo.full_name", path),
    )


def is_fork(pr: PullRequest | None, event_name: str | None) -> bool:
    """A `pull_request` run whose head lives in another repository (a deleted fork has no head repo)."""
    if pr is None or event_name != "pull_request":
        return False
    return pr.head_repo is None or pr.head_repo != pr.base_repo


def _path(value: str | None) -> Path | None:
    return Path(value) if value else None


def load_context(
    env: Mapping[str, str], event_path: str | Path | None = None, pr_number: int | None = None
) -> Context:
    """The run's context from `env` (GITHUB_*) and the event file (`event_path` or GITHUB_EVENT_PATH)."""
    path = _path(str(event_path) if event_path else env.get("GITHUB_EVENT_PATH"))
    event = read_event(path) if path else {}
    event_name = env.get("GITHUB_EVENT_NAME") or None
    pr = _pull_request(event, path) if path else None
    if event_name is None and pr is not None:
        event_name = "pull_request"
    fork = is_fork(pr, event_name)
    if pr_number is not None and (pr is None or pr.number != pr_number):
        pr = PullRequest(number=pr_number, head_sha=None)
    sha = (pr.head_sha if pr else None) or env.get("GITHUB_SHA") or None
    return Context(
        repository=env.get("GITHUB_REPOSITORY") or (pr.base_repo if pr else None),
        event_name=event_name,
        sha=sha,
        pull_request=pr,
        fork=fork,
        api_url=(env.get("GITHUB_API_URL") or DEFAULT_API_URL).rstrip("/"),
        server_url=(env.get("GITHUB_SERVER_URL") or DEFAULT_SERVER_URL).rstrip("/"),
        step_summary=_path(env.get("GITHUB_STEP_SUMMARY")),
        output=_path(env.get("GITHUB_OUTPUT")),
        workflow_run_head_sha=_string(event, "workflow_run.head_sha", path) if path else None,
        workflow_run_conclusion=_string(event, "workflow_run.conclusion", path) if path else None,
    )


# --- the pull-request artifact of fork runs ------------------------------------------------------


@dataclass(frozen=True)
class PrArtifact:
    pr_number: int
    head_sha: str
    repository: str
    head_repository: str | None = None
    report: str | None = None
    path_prefix: str | None = None  # where the tests ran, relative to the repository root


def write_pr_artifact(directory: str | Path, artifact: PrArtifact) -> Path:
    """`DIR/attest-pr.json`, written atomically, for the workflow_run publish workflow to read."""
    doc = {
        "version": 1,
        "pr_number": artifact.pr_number,
        "head_sha": artifact.head_sha,
        "repository": artifact.repository,
        "head_repository": artifact.head_repository,
        "report": artifact.report,
    }
    if artifact.path_prefix:
        doc["path_prefix"] = artifact.path_prefix
    _validate_artifact(doc, Path(directory) / PR_ARTIFACT)
    Path(directory).mkdir(parents=True, exist_ok=True)
    path = Path(directory) / PR_ARTIFACT
    atomic_write(path, json.dumps(doc, indent=2, sort_keys=True) + "\n", mode=0o644)
    return path


def read_pr_artifact(location: str | Path) -> PrArtifact:
    """The artifact in directory `location` (or the file itself); it comes from an untrusted run."""
    path = Path(location)
    if path.is_dir():
        path = path / PR_ARTIFACT
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(f"no {PR_ARTIFACT} here; was the artifact downloaded?", path) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read the artifact: {getattr(exc, 'strerror', None) or exc}", path) from None
    except json.JSONDecodeError as exc:
        raise UsageError(f"malformed artifact JSON: {exc.msg} at line {exc.lineno}", path) from None
    _validate_artifact(doc, path)
    return PrArtifact(
        pr_number=doc["pr_number"],
        head_sha=doc["head_sha"],
        repository=doc["repository"],
        head_repository=doc.get("head_repository"),
        report=doc.get("report"),
        path_prefix=doc.get("path_prefix"),
    )


def _validate_artifact(doc: Any, path: Path) -> None:
    problem = first_error("pr-artifact.schema.json", doc)
    if problem:
        raise UsageError(f"malformed artifact: {problem}", path)
