"""`attest ci` steps under GITLAB_CI=true: outputs in the dotenv report, plain lines, the merge
request's diff base for selection, and a test command that never gets the publishing token."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import chat_request, chat_response, clean_env, exchange, git, run_cli, write_fixture
from report_factory import make_miss, make_report, make_test, replay_facts


class Job:
    """A GitLab CI job: its variables and its dotenv report."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.dotenv = tmp / "attest.env"

    def __call__(
        self, *args: str, cwd: Path | None = None, **variables: str
    ) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in clean_env().items() if not k.startswith(("GITHUB_", "ATTEST_CI_", "PYTEST_"))}
        env.update(GITLAB_CI="true", ATTEST_CI_DOTENV=str(self.dotenv))
        env.update(variables)
        return run_cli(["ci", *args], cwd=cwd or self.tmp, env=env)

    def outputs(self) -> dict[str, str]:
        lines = self.dotenv.read_text(encoding="utf-8").splitlines() if self.dotenv.exists() else []
        return dict(line.split("=", 1) for line in lines)


@pytest.fixture
def job(tmp_path: Path) -> Job:
    return Job(tmp_path)


def repository(tmp_path: Path) -> tuple[Path, str]:
    """A repository with two fixtures, each used by one test; a change re-records `alpha`. (dir, base)"""
    repo = tmp_path / "repo"
    fixtures = repo / "tests" / "attest" / "fixtures"
    git(repo.parent, "init", "-q", "-b", "main", str(repo))
    for name in ("alpha", "beta"):
        write_fixture(fixtures, name, [exchange(chat_request(), chat_response("Hi"))])
        (repo / "tests" / f"test_{name}.py").write_text(
            f"def test_{name}(attest_replay):\n    with attest_replay('{name}'):\n        pass\n",
            encoding="utf-8",
        )
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    base = git(repo, "rev-parse", "HEAD").strip()
    write_fixture(fixtures, "alpha", [exchange(chat_request(), chat_response("Hey"))])
    git(repo, "commit", "-q", "-am", "re-record alpha")
    return repo, base


def test_select_compares_with_the_merge_requests_diff_base(job: Job, tmp_path: Path) -> None:
    repo, base = repository(tmp_path)
    ids = tmp_path / "ids.txt"
    done = job(
        "select",
        cwd=repo,
        ATTEST_CI_IDS_FILE=str(ids),
        ATTEST_CI_SELECT="true",
        CI_MERGE_REQUEST_DIFF_BASE_SHA=base,
    )
    assert done.returncode == 0, done.stderr
    assert ids.read_text(encoding="utf-8") == "tests/test_alpha.py::test_alpha\n"
    assert job.outputs()["ATTEST_RUN"] == "true" and job.outputs()["ATTEST_KIND"] == "some"
    assert "::" not in done.stdout


def test_a_select_that_cannot_compare_is_one_plain_error_line(job: Job, tmp_path: Path) -> None:
    repo, _ = repository(tmp_path)
    done = job(
        "select",
        cwd=repo,
        ATTEST_CI_IDS_FILE=str(tmp_path / "ids.txt"),
        ATTEST_CI_SELECT="true",
        CI_MERGE_REQUEST_DIFF_BASE_SHA="1" * 40,
    )
    assert done.returncode == 3
    [line] = done.stderr.splitlines()
    assert line.startswith("ERROR: attest: attest select failed: ")


def test_the_test_command_never_gets_the_gitlab_token(job: Job) -> None:
    script = (
        "import json, os\n"
        "seen = {k: os.environ.get(k) for k in ('ATTEST_GITLAB_TOKEN', 'GITLAB_TOKEN', 'CI_PROJECT_ID')}\n"
        "open(os.environ['ATTEST_REPORT'], 'w').write(json.dumps(seen))\n"
        "open(os.environ['ATTEST_CI_DOTENV'], 'a').write('ATTEST_VERDICT=pass\\n')\n"
    )
    (job.tmp / "seen.py").write_text(script, encoding="utf-8")
    done = job(
        "run",
        ATTEST_CI_COMMAND=f"{sys.executable} seen.py",
        ATTEST_CI_NETWORK="guard",
        ATTEST_GITLAB_TOKEN="glpat-parent-token-0001",
        GITLAB_TOKEN="glpat-parent-token-0002",
        CI_PROJECT_ID="42",
    )
    assert done.returncode == 0, done.stdout + done.stderr
    seen = json.loads((job.tmp / "attest-report.json").read_text(encoding="utf-8"))
    assert seen == {"ATTEST_GITLAB_TOKEN": None, "GITLAB_TOKEN": None, "CI_PROJECT_ID": "42"}
    # What the command wrote to the dotenv report is dropped: the later steps read the step's own.
    assert job.outputs() == {"ATTEST_REPORT": str(job.tmp / "attest-report.json"), "ATTEST_EXIT_CODE": "0"}


def test_a_forks_merge_request_without_a_token_still_ends_with_its_verdict(job: Job) -> None:
    miss = replay_facts(1, misses=1, miss=make_miss("changed", "messages", "agent/core.py", 3))
    report = job.tmp / "attest-report.json"
    report.write_text(
        json.dumps(make_report([make_test("tests/t.py::test_a", "failed", replay=miss)])), encoding="utf-8"
    )
    fork = {"CI_MERGE_REQUEST_IID": "7", "CI_PROJECT_ID": "42", "CI_API_V4_URL": "http://127.0.0.1:9/api/v4"}
    assert job("policy", ATTEST_CI_REPORT=str(report), **fork).returncode == 0
    published = job("publish", ATTEST_CI_REPORT=str(report), **fork)
    assert published.returncode == 0
    assert published.stdout.splitlines() == [
        "WARNING: attest: no GitLab token in ATTEST_GITLAB_TOKEN or GITLAB_TOKEN (a fork's pipeline gets none):"
        " skipping the merge request note"
    ]
    gate = job("gate", ATTEST_CI_RAN="true", **fork)
    assert gate.returncode == 1
    assert "attest: verdict blocked (exit 1)" in gate.stdout


def test_without_gitlab_ci_publish_is_githubs_and_needs_its_artifact_dir(job: Job) -> None:
    report = job.tmp / "attest-report.json"
    report.write_text(json.dumps(make_report([make_test("tests/t.py::test_a")])), encoding="utf-8")
    done = job("publish", ATTEST_CI_REPORT=str(report), GITLAB_CI="false")
    assert done.returncode == 3
    [line] = done.stderr.splitlines()
    assert (
        line
        == "attest: --artifact-dir is required on GitHub Actions (a read-only run leaves attest-pr.json there)"
    )


def test_the_jobs_script_gates_a_project_attest_init_wrote(tmp_path: Path) -> None:
    # The script of .gitlab-ci.yml as the runner runs it (one bash, -e and pipefail), on the project
    # `attest init --forge gitlab` writes, on the default branch (no merge request: no note) and with
    # the egress guard, since this machine may refuse the namespace.
    project = tmp_path / "project"
    project.mkdir()
    assert run_cli(["init", str(project), "--forge", "gitlab"]).returncode == 0
    job = yaml.safe_load((project / ".gitlab-ci.yml").read_text(encoding="utf-8"))["attest"]
    env = {k: v for k, v in clean_env().items() if not k.startswith(("GITHUB_", "ATTEST_", "PYTEST_", "CI_"))}
    env.update({k: str(v) for k, v in job["variables"].items()})
    env.update(
        GITLAB_CI="true", ATTEST_CI_NETWORK="guard", PATH=f"{Path(sys.executable).parent}:{env['PATH']}"
    )
    done = subprocess.run(
        ["bash", "-eo", "pipefail", "-c", "\n".join(job["script"])],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "attest: verdict pass (exit 0)" in done.stdout
    assert "WARNING: attest: no GitLab token" in done.stdout
    reports = job["artifacts"]["reports"]
    assert (project / reports["junit"]).is_file()
    assert json.loads((project / reports["codequality"]).read_text(encoding="utf-8")) == []
    dotenv = dict(
        line.split("=", 1) for line in (project / reports["dotenv"]).read_text(encoding="utf-8").splitlines()
    )
    assert dotenv["ATTEST_VERDICT"] == "pass" and dotenv["ATTEST_REPLAYED"] == "1"
