"""The harness of the `attest github publish` tests: a GitHub Actions step against the fake GitHub."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path
from typing import Any

import pytest
import typer
from attest_toolkit.cli import run
from attest_toolkit.cli.github import register
from attest_toolkit.github import publisher
from attest_toolkit.github.publish import PublishOptions, PublishResult, publish
from attest_toolkit.github.publisher import RetryPolicy
from attest_toolkit.report.build import write_report
from fake_github import FakeGitHub
from fake_runner import parse_outputs
from report_factory import make_miss, make_report, make_test, replay_facts

REPO = "acme/agent"
FORK = "mallory/agent"
HEAD = "a1" * 20
MERGE = "e9" * 20
PR = 7
NOW = 1_700_000_000.0
TOKEN = "test-token-not-a-real-one-0001"


# --- building blocks ------------------------------------------------------------------------------


def row(
    n: int,
    outcome: str = "passed",
    *,
    miss: str | None = None,
    live: int = 0,
    message: str | None = None,
    line: int = 10,
) -> dict[str, Any]:
    """Test n of tests/test_agent.py, two replayed calls; a miss is located at agent/core.py:40+n."""
    facts = replay_facts(
        2,
        live=live,
        misses=1 if miss else 0,
        cost=0.01 * live if live else None,
        miss=make_miss(miss, "messages", "agent/core.py", 40 + n) if miss else None,
        fixtures=[f"tests/attest/fixtures/t{n}.attest.json"],
    )
    return make_test(f"tests/test_agent.py::test_{n}", outcome, line=line + n, message=message, replay=facts)


def report_file(tmp_path: Path, tests: list[dict[str, Any]] | None, name: str = "report.json") -> Path:
    """A report file of `tests` (None: one test of every outcome)."""
    return write_report(make_report(tests), tmp_path / name)


def pr_event(head_repo: str = REPO) -> dict[str, Any]:
    return {
        "action": "synchronize",
        "number": PR,
        "pull_request": {
            "number": PR,
            "head": {"sha": HEAD, "repo": {"full_name": head_repo}},
            "base": {"sha": "0" * 40, "repo": {"full_name": REPO}},
        },
        "repository": {"full_name": REPO},
    }


@pytest.fixture
def gh() -> Any:
    with FakeGitHub() as fake:
        fake.add_pull(REPO, PR, HEAD)
        yield fake


@pytest.fixture
def waits(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The waits the publisher asked for, in order; nothing really sleeps."""
    recorded: list[float] = []
    policy = RetryPolicy(
        sleep=recorded.append, clock=lambda: NOW, seconds_between_requests=None, seconds_between_writes=None
    )
    monkeypatch.setattr(publisher, "DEFAULT_RETRY", policy)
    return recorded


@pytest.fixture
def actions(tmp_path: Path, gh: FakeGitHub, waits: list[float], monkeypatch: pytest.MonkeyPatch) -> Any:
    """A GitHub Actions `pull_request` step: GITHUB_* set, files in tmp_path, the fake as the API."""
    return Actions(tmp_path, gh, monkeypatch)


class Actions:
    def __init__(self, tmp: Path, gh: FakeGitHub, monkeypatch: pytest.MonkeyPatch) -> None:
        self.tmp, self.gh, self.monkeypatch = tmp, gh, monkeypatch
        self.summary, self.output, self.event = tmp / "step_summary.md", tmp / "output", tmp / "event.json"
        self.event.write_text(json.dumps(pr_event()))
        self.stdout = io.StringIO()
        self.env = {
            "GITHUB_ACTIONS": "true",
            "GITHUB_REPOSITORY": REPO,
            "GITHUB_EVENT_NAME": "pull_request",
            "GITHUB_EVENT_PATH": str(self.event),
            "GITHUB_SHA": MERGE,
            "GITHUB_API_URL": gh.url,
            "GITHUB_SERVER_URL": "https://github.com",
            "GITHUB_STEP_SUMMARY": str(self.summary),
            "GITHUB_OUTPUT": str(self.output),
            "GITHUB_TOKEN": TOKEN,
        }
        monkeypatch.chdir(tmp)

    def set_event(self, event: dict[str, Any], name: str) -> None:
        self.event.write_text(json.dumps(event))
        self.env["GITHUB_EVENT_NAME"] = name

    def publish(self, report: Path, **options: Any) -> PublishResult:
        """The library call, its workflow commands collected in `self.stdout`."""
        return publish(PublishOptions(report=report, **options), self.env, out=self.stdout)

    def cli(self, *argv: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
        """`attest github publish ARGV` with exactly `self.env` as the GITHUB_* environment."""
        for key in [k for k in os.environ if k.startswith("GITHUB_")]:
            self.monkeypatch.delenv(key)
        for key, value in self.env.items():
            self.monkeypatch.setenv(key, value)
        app = typer.Typer()
        register(app)
        code = run(app, ["github", "publish", *argv])
        out, err = capsys.readouterr()
        return code, out, err

    def outputs(self) -> dict[str, str]:
        return parse_outputs(self.output.read_text())


def writes(gh: FakeGitHub) -> list[Any]:
    return [r for r in gh.state.requests if r.method != "GET"]


def workflow_run_event(head_sha: str = HEAD, conclusion: str = "success") -> dict[str, Any]:
    return {
        "action": "completed",
        "workflow_run": {
            "head_sha": head_sha,
            "conclusion": conclusion,
            "event": "pull_request",
            "pull_requests": [],
            "head_repository": {"full_name": FORK},
        },
        "repository": {"full_name": REPO},
    }


def fork_artifact(actions: Actions, capsys: pytest.CaptureFixture[str], tests: list[dict[str, Any]]) -> Path:
    """What the fork's pull_request run leaves behind, ready for the workflow_run publish workflow."""
    env = dict(actions.env)
    actions.set_event(pr_event(head_repo=FORK), "pull_request")
    code, _, err = actions.cli(
        "--report", str(report_file(actions.tmp, tests)), "--artifact-dir", "downloaded", capsys=capsys
    )
    assert code == 0, err
    actions.env = env
    actions.set_event(workflow_run_event(), "workflow_run")
    actions.env["GITHUB_SHA"] = "d" * 40  # workflow_run runs on the default branch
    return actions.tmp / "downloaded"
