"""`attest ci` steps under GITLAB_CI=true: outputs in the dotenv report, plain lines, the merge
request's diff base for selection, and a test command that never gets the publishing token."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import chat_request, chat_response, clean_env, exchange, git, run_cli, write_fixture
from fake_gitlab import FakeGitLab
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


def test_the_html_page_shows_what_the_merge_request_re_recorded(job: Job, tmp_path: Path) -> None:
    # The note compares with the merge request's diff base; the page it links shows the same.
    repo, base = repository(tmp_path)
    report = tmp_path / "report.json"
    report.write_text(
        json.dumps(make_report([make_test("tests/test_alpha.py::test_alpha")])), encoding="utf-8"
    )
    page = tmp_path / "page.html"
    done = job(
        "html",
        cwd=repo,
        ATTEST_CI_REPORT=str(report),
        ATTEST_CI_PAGE=str(page),
        CI_MERGE_REQUEST_DIFF_BASE_SHA=base,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "<code>alpha</code>: changed" in page.read_text(encoding="utf-8")


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


def init_project(tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    """A project `attest init --forge gitlab` wrote, and its job."""
    project = tmp_path / "project"
    project.mkdir()
    assert run_cli(["init", str(project), "--forge", "gitlab"]).returncode == 0
    return project, yaml.safe_load((project / ".gitlab-ci.yml").read_text(encoding="utf-8"))["attest"]


def run_script(
    project: Path, job: dict[str, Any], lines: list[str], **variables: str
) -> subprocess.CompletedProcess[str]:
    """`lines` of the job as the runner runs them (one bash, -e and pipefail), with the job's variables
    and the egress guard, since this machine may refuse the namespace."""
    env = {k: v for k, v in clean_env().items() if not k.startswith(("GITHUB_", "ATTEST_", "PYTEST_", "CI_"))}
    env.update({k: str(v) for k, v in job["variables"].items()})
    env.update(
        GITLAB_CI="true", ATTEST_CI_NETWORK="guard", PATH=f"{Path(sys.executable).parent}:{env['PATH']}"
    )
    env.update(variables)
    return subprocess.run(
        ["bash", "-eo", "pipefail", "-c", "\n".join(lines)],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def dotenv_of(project: Path, job: dict[str, Any]) -> dict[str, str]:
    text = (project / job["artifacts"]["reports"]["dotenv"]).read_text(encoding="utf-8")
    return dict(line.split("=", 1) for line in text.splitlines())


def test_the_jobs_script_gates_a_project_attest_init_wrote(tmp_path: Path) -> None:
    # On the default branch: no merge request, so no note.
    project, job = init_project(tmp_path)
    done = run_script(project, job, job["script"])
    assert done.returncode == 0, done.stdout + done.stderr
    assert "attest: verdict pass (exit 0)" in done.stdout
    assert "WARNING: attest: no GitLab token" in done.stdout
    reports = job["artifacts"]["reports"]
    assert (project / reports["junit"]).is_file()
    assert json.loads((project / reports["codequality"]).read_text(encoding="utf-8")) == []
    dotenv = dotenv_of(project, job)
    assert dotenv["ATTEST_VERDICT"] == "pass" and dotenv["ATTEST_REPLAYED"] == "1"
    # The page the merge request exposes is there, at the path artifacts:paths names.
    assert dotenv["ATTEST_PAGE"] == job["variables"]["ATTEST_CI_PAGE"] in job["artifacts"]["paths"]
    assert "<html" in (project / dotenv["ATTEST_PAGE"]).read_text(encoding="utf-8").lower()


def test_the_note_links_the_html_page_in_the_jobs_artifacts(tmp_path: Path) -> None:
    project, job = init_project(tmp_path)
    jobs = "https://gitlab.example/acme/agent/-/jobs/4242"
    with FakeGitLab() as gl:
        gl.add_merge_request(42, "acme/agent", 7)
        gl.add_user(11, "project_42_bot", "glpat-test-token-not-real-0001")
        done = run_script(
            project,
            job,
            job["script"],
            CI_API_V4_URL=gl.api_url,
            CI_PROJECT_ID="42",
            CI_MERGE_REQUEST_IID="7",
            CI_JOB_URL=jobs,
            ATTEST_GITLAB_TOKEN="glpat-test-token-not-real-0001",
        )
        assert done.returncode == 0, done.stdout + done.stderr
        [note] = gl.notes(42, 7)
    assert f"[The full report (HTML)]({jobs}/artifacts/file/attest-report.html)" in note["body"]


def test_a_forks_merge_request_without_the_store_is_not_evaluated(tmp_path: Path) -> None:
    # The pull runs in before_script (before the set-up, which never sees the store's keys); the
    # fork's pipeline has no OBJECT_STORE_*: the tests do not run, and the job is an allowed failure.
    project, job = init_project(tmp_path)
    lines = [line for line in job["before_script"] if not line.startswith("pip install")] + job["script"]
    done = run_script(
        project,
        job,
        lines,
        ATTEST_FIXTURES_STORE="s3",
        CI_MERGE_REQUEST_IID="7",
        CI_MERGE_REQUEST_SOURCE_PROJECT_PATH="mallory/agent",
        CI_MERGE_REQUEST_PROJECT_PATH="acme/agent",
    )
    assert done.returncode == 2 and done.returncode in job["allow_failure"]["exit_codes"], done.stderr
    assert "WARNING: attest: fixtures not available to forks" in done.stdout
    assert dotenv_of(project, job)["ATTEST_AVAILABLE"] == "false"
    assert not (project / job["variables"]["ATTEST_CI_REPORT"]).exists()  # nothing ran


def test_the_store_is_required_of_the_projects_own_merge_requests(tmp_path: Path) -> None:
    project, job = init_project(tmp_path)
    [pull] = [line for line in job["before_script"] if "attest ci pull" in line]
    same = {
        "CI_MERGE_REQUEST_SOURCE_PROJECT_PATH": "acme/agent",
        "CI_MERGE_REQUEST_PROJECT_PATH": "acme/agent",
    }
    done = run_script(project, job, [pull], ATTEST_FIXTURES_STORE="s3", **same)
    assert done.returncode == 3
    [line] = done.stderr.splitlines()
    assert line.startswith("ERROR: attest: pulling the pinned fixtures needs OBJECT_STORE_ADDR and the keys")
    assert run_script(project, job, [pull], **same).returncode == 0  # no store asked for: no pull
