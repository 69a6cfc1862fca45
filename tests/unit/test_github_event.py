"""The run's context from GITHUB_* and the event file, and the pull-request artifact of fork runs.

Relies on GitHub's documented event payloads: `pull_request` carries `pull_request.number`,
`head.sha`, `head.repo.full_name` (null once a fork is deleted) and `base.repo.full_name`; for
`pull_request` events GITHUB_SHA is the merge commit, not the head; `workflow_run` carries
`workflow_run.head_sha` and, for forks, an empty `pull_requests` list.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from attest_toolkit.errors import UsageError
from attest_toolkit.github.event import (
    PR_ARTIFACT,
    PrArtifact,
    load_context,
    read_pr_artifact,
    write_pr_artifact,
)

HEAD = "ab" * 20


def pull_request(head_repo: str | None = "acme/agent") -> dict[str, Any]:
    return {
        "number": 12,
        "pull_request": {
            "number": 12,
            "head": {"sha": HEAD, "repo": {"full_name": head_repo} if head_repo else None},
            "base": {"sha": "0" * 40, "repo": {"full_name": "acme/agent"}},
        },
    }


def context(tmp_path: Path, event: Any, name: str = "pull_request", **kwargs: Any) -> Any:
    path = tmp_path / "event.json"
    path.write_text(json.dumps(event))
    env = {
        "GITHUB_REPOSITORY": "acme/agent",
        "GITHUB_EVENT_NAME": name,
        "GITHUB_EVENT_PATH": str(path),
        "GITHUB_SHA": "e" * 40,
        "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"),
    }
    return load_context(env, **kwargs)


def test_a_pull_request_from_the_same_repository(tmp_path: Path) -> None:
    ctx = context(tmp_path, pull_request())
    assert ctx.pull_request.number == 12
    assert ctx.sha == HEAD  # the head commit, not GITHUB_SHA's merge commit
    assert not ctx.fork
    assert ctx.api_url == "https://api.github.com"
    assert ctx.step_summary == tmp_path / "summary.md"
    assert ctx.output is None


@pytest.mark.parametrize(
    ("head_repo", "name", "fork"),
    [
        ("mallory/agent", "pull_request", True),
        (None, "pull_request", True),  # the fork was deleted
        ("mallory/agent", "pull_request_target", False),  # runs with the base repository's token
    ],
)
def test_fork_detection(tmp_path: Path, head_repo: str | None, name: str, fork: bool) -> None:
    assert context(tmp_path, pull_request(head_repo), name).fork is fork


def test_a_push_has_no_pull_request_and_uses_github_sha(tmp_path: Path) -> None:
    ctx = context(tmp_path, {"ref": "refs/heads/main"}, "push")
    assert ctx.pull_request is None
    assert ctx.sha == "e" * 40


def test_pr_number_option_wins_over_the_event(tmp_path: Path) -> None:
    ctx = context(tmp_path, {"ref": "refs/heads/main"}, "push", pr_number=5)
    assert ctx.pull_request.number == 5


def test_workflow_run_head_sha_is_read(tmp_path: Path) -> None:
    ctx = context(tmp_path, {"workflow_run": {"head_sha": HEAD, "pull_requests": []}}, "workflow_run")
    assert ctx.workflow_run_head_sha == HEAD
    assert ctx.pull_request is None


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('{"pull_request": ', "malformed event JSON"),
        ("[1, 2]", "not a JSON object"),
        ('{"pull_request": {"number": "12"}}', "pull_request.number is not a positive integer"),
        ('{"pull_request": {"number": 12, "head": {"sha": 5}}}', "pull_request.head.sha is not a string"),
    ],
)
def test_a_malformed_event_names_the_file_and_the_problem(tmp_path: Path, text: str, problem: str) -> None:
    path = tmp_path / "event.json"
    path.write_text(text)
    with pytest.raises(UsageError) as caught:
        load_context({"GITHUB_EVENT_PATH": str(path)})
    assert str(caught.value).startswith(f"{path}: ")
    assert problem in str(caught.value)
    assert "\n" not in str(caught.value)


def test_a_missing_event_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no such event file"):
        load_context({}, event_path=tmp_path / "nope.json")


def test_the_artifact_round_trips(tmp_path: Path) -> None:
    artifact = PrArtifact(12, HEAD, "acme/agent", "mallory/agent", "attest-report.json")
    path = write_pr_artifact(tmp_path / "out", artifact)
    assert path.name == PR_ARTIFACT
    assert read_pr_artifact(tmp_path / "out") == artifact
    assert read_pr_artifact(path) == artifact


@pytest.mark.parametrize(
    ("doc", "where"),
    [
        ({"version": 1, "pr_number": 0, "head_sha": HEAD, "repository": "acme/agent"}, "pr_number"),
        ({"version": 1, "pr_number": 3, "head_sha": "HEAD", "repository": "acme/agent"}, "head_sha"),
        ({"version": 1, "pr_number": 3, "head_sha": HEAD, "repository": "../x"}, "repository"),
        (
            {"version": 1, "pr_number": 3, "head_sha": HEAD, "repository": "a/b", "report": "../r.json"},
            "report",
        ),
        ({"version": 2, "pr_number": 3, "head_sha": HEAD, "repository": "a/b"}, "version"),
        ({"version": 1, "pr_number": 3, "head_sha": HEAD, "repository": "a/b", "report": ".."}, "report"),
        ({"version": 1, "pr_number": 3, "head_sha": HEAD, "repository": "a/.."}, "repository"),
    ],
)
def test_an_untrusted_artifact_is_validated(tmp_path: Path, doc: dict[str, Any], where: str) -> None:
    (tmp_path / PR_ARTIFACT).write_text(json.dumps(doc))
    with pytest.raises(UsageError) as caught:
        read_pr_artifact(tmp_path)
    assert f"malformed artifact: invalid at /{where}:" in str(caught.value)


def test_a_missing_artifact_says_what_is_missing(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"no attest-pr\.json here"):
        read_pr_artifact(tmp_path)
