"""The GitHub Action end to end: action.yml's steps run as the runner runs them, on a real git repository.

A project with two fixtures and a test for each gets a pull request that changes one fixture. The
action selects the affected test, runs it with the network off (a real network namespace), evaluates
the policy and publishes to a fake GitHub REST server; a second push with a strict miss is blocked and
updates the same sticky comment. A fork's run leaves the artifact that `workflows/publish.yml` turns
into the comment. That an agent inside the sandbox cannot reach a provider by name or IP is shown in
tests/system/test_sandbox.py.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from action_runner import ActionRun, interpolate, run_action, step_directory
from conftest import REPO, chat_request, chat_response, clean_env, exchange, git, run_cli, write_fixture
from fake_github import FakeGitHub
from fake_runner import parse_command
from image_helpers import NEEDS_PODMAN
from s3_server import S3

# the s3 and bucket fixtures (a real S3-compatible server on loopback); the agent image and its fixture
pytest_plugins = ["s3_server", "image_helpers", "netns"]

OWNER_REPO = "acme/refund-agent"
TOKEN = "ghs_" + "t" * 36
FIXTURES = "tests/attest/fixtures"

AGENT = """\
import openai


def ask(content):
    client = openai.OpenAI(max_retries=0)  # built after the replay starts
    reply = client.chat.completions.create(model="gpt-4o-mini", messages=[
        {"role": "system", "content": "You are terse."}, {"role": "user", "content": content}])
    return reply.choices[0].message.content
"""

TEST_FOR = """\
import agent


def test_{name}(attest_replay):
    with attest_replay("{name}"):
        assert agent.ask("{prompt}").startswith("{starts}")
"""

POLICY = """\
version: 1
max_live_calls: 0
misses: block
require_egress: none
require_isolation_verified: true
"""


def fixture(repo: Path, name: str, prompt: str, answer: str, system: str = "You are terse.") -> None:
    request = chat_request(prompt, system=system)
    write_fixture(repo / FIXTURES, name, [exchange(request, chat_response(answer))])


def commit(repo: Path, message: str) -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD").strip()


@dataclass
class Project:
    """A repository on its pull-request branch, the PR's base commit, and the runner around it."""

    repo: Path
    base: str
    tmp: Path
    gh: FakeGitHub
    number: int = 7
    runs: int = 0

    def head(self) -> str:
        return git(self.repo, "rev-parse", "HEAD").strip()

    def event(self, head_repo: str = OWNER_REPO) -> dict[str, Any]:
        def side(sha: str, repo: str) -> dict[str, Any]:
            return {"sha": sha, "ref": "main", "repo": {"full_name": repo}}

        return {
            "action": "synchronize",
            "number": self.number,
            "pull_request": {
                "number": self.number,
                "head": side(self.head(), head_repo),
                "base": side(self.base, OWNER_REPO),
            },
            "repository": {"full_name": OWNER_REPO},
        }

    def run(
        self, head_repo: str = OWNER_REPO, extra_env: dict[str, str] | None = None, **inputs: str
    ) -> ActionRun:
        """The action once, as a `pull_request` run of the current head (`extra_env`: the step's env)."""
        self.runs += 1
        runner = self.tmp / f"runner-{self.runs}"
        runner.mkdir()
        event = self.event(head_repo)
        self.gh.add_pull(OWNER_REPO, self.number, self.head(), head_repo)
        event_path = runner / "event.json"
        event_path.write_text(json.dumps(event), encoding="utf-8")
        github = {"token": TOKEN, "event": event, "action_path": str(REPO), "repository": OWNER_REPO}
        return run_action(
            REPO,
            {"command": "pytest -q -p no:cacheprovider", **inputs},
            github=github,
            env={**self.env(event_path, runner), **(extra_env or {})},
            workspace=self.repo,
            runner_temp=runner,
        )

    def env(self, event_path: Path, runner: Path) -> dict[str, str]:
        env = {k: v for k, v in clean_env().items() if not k.startswith(("PYTEST_", "GITHUB_"))}
        env.update(
            PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
            ATTEST_ACTION_SKIP_INSTALL="1",
            CI="true",
            GITHUB_ACTIONS="true",
            GITHUB_EVENT_NAME="pull_request",
            GITHUB_EVENT_PATH=str(event_path),
            GITHUB_REPOSITORY=OWNER_REPO,
            GITHUB_SHA=self.head(),
            GITHUB_API_URL=self.gh.url,
            GITHUB_SERVER_URL="https://github.com",
            GITHUB_WORKSPACE=str(self.repo),
            GITHUB_STEP_SUMMARY=str(runner / "step-summary.md"),
        )
        return env

    def report(self) -> dict[str, Any]:
        return json.loads((self.repo / "attest-report.json").read_text(encoding="utf-8"))

    def comments(self) -> list[dict[str, Any]]:
        return self.gh.comments(OWNER_REPO, self.number)


@pytest.fixture
def project(tmp_path: Path, namespace: str) -> Iterator[Project]:
    """Two fixtures with a test each on main; the pull request re-records `alpha` with a new answer."""
    repo = tmp_path / "repo"
    (repo / "tests").mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    (repo / "agent.py").write_text(AGENT, encoding="utf-8")
    (repo / "pytest.ini").write_text("[pytest]\npythonpath = .\n", encoding="utf-8")
    (repo / ".attest").mkdir()
    (repo / ".attest" / "policy.yml").write_text(POLICY, encoding="utf-8")
    for name, prompt in (("alpha", "Say hello"), ("beta", "Say goodbye")):
        test = TEST_FOR.format(name=name, prompt=prompt, starts=prompt.split()[1].capitalize())
        (repo / "tests" / f"test_{name}.py").write_text(test, encoding="utf-8")
    fixture(repo, "alpha", "Say hello", "Hello!")
    fixture(repo, "beta", "Say goodbye", "Goodbye!")
    base = commit(repo, "two fixtures, a test each")
    git(repo, "checkout", "-q", "-b", "re-record-alpha")
    fixture(repo, "alpha", "Say hello", "Hello there!")
    commit(repo, "re-record alpha")
    with FakeGitHub() as gh:
        gh.add_repo(OWNER_REPO)
        yield Project(repo, base, tmp_path, gh)


def test_a_pull_request_is_gated_offline_on_its_affected_tests_then_a_miss_blocks_it(
    project: Project,
) -> None:
    result = project.run(select="true")

    assert result.returncode == 0, result.log
    report = project.report()
    assert [t["file"] for t in report["tests"]] == ["tests/test_alpha.py"]
    assert report["tests"][0]["outcome"] == "passed"
    assert report["summary"]["egress"]["mode"] == "none"
    assert report["summary"]["egress"]["isolation_verified"] is True
    assert result.outputs["verdict"] == "pass"
    assert (result.outputs["replayed"], result.outputs["live"], result.outputs["misses"]) == ("1", "0", "0")
    assert result.outputs["cost"] == "0"
    assert result.outputs["summary"].endswith("1 replayed · 0 live model calls · $0.00")
    [comment] = project.comments()
    assert result.outputs["comment-url"] == comment["html_url"]
    assert "1 replayed · 0 live model calls · $0.00" in comment["body"].splitlines()[0]
    table = comment["body"][comment["body"].index("What the re-recorded fixtures in this change altered:") :]
    assert "| `alpha` |" in table and "| `beta` |" not in table
    assert not any(
        name == "Upload the pull-request artifact for the publish workflow" for name, *_ in result.uses
    )
    first = dict(comment)  # the fake updates its comments in place

    # The next push re-records beta with another system prompt; the test still sends the old one.
    fixture(project.repo, "beta", "Say goodbye", "Goodbye!", system="You are verbose.")
    commit(project.repo, "re-record beta")

    result = project.run(select="true")

    assert result.returncode == 1, result.log
    assert (result.outputs["verdict"], result.outputs["misses"]) == ("blocked", "1"), result.log
    report = project.report()
    assert sorted(t["file"] for t in report["tests"]) == ["tests/test_alpha.py", "tests/test_beta.py"]
    [miss] = [t for t in report["tests"] if t["file"] == "tests/test_beta.py"]
    assert miss["outcome"] == "failed"
    assert "system prompt changed" in miss["replay"]["miss"]["message"]
    [comment] = project.comments()
    assert comment["id"] == first["id"]
    assert "system prompt changed" in comment["body"]
    table = comment["body"][comment["body"].index("What the re-recorded fixtures in this change altered:") :]
    assert "| `beta` |" in table and "system" in table
    assert comment["body"] != first["body"]
    annotations = [
        parse_command(line)
        for line in result.step("publish").stdout.splitlines()
        if line.startswith("::error")
    ]
    [(_, where, _message)] = [a for a in annotations if "system prompt changed" in a[2]]
    assert where["file"] in ("agent.py", "tests/test_beta.py") and int(where["line"]) > 0


def test_nothing_affected_passes_with_a_clear_summary_and_runs_nothing(project: Project) -> None:
    git(project.repo, "reset", "-q", "--hard", project.base)
    write_fixture(project.repo / FIXTURES, "unused", [exchange(chat_request("Hi"), chat_response("Hi!"))])
    commit(project.repo, "a fixture no test uses")

    result = project.run(select="true")

    assert result.returncode == 0, result.log
    assert "Run the tests (network off)" in result.skipped
    assert not (project.repo / "attest-report.json").exists()
    assert result.outputs["verdict"] == "pass"
    assert result.outputs["summary"].startswith("attest: nothing to run:")
    summary = (project.tmp / "runner-1" / "step-summary.md").read_text(encoding="utf-8")
    assert "nothing to run" in summary
    assert project.comments() == []


def test_without_selection_every_test_runs_and_the_guard_alone_is_not_no_network(project: Project) -> None:
    result = project.run(network="guard", comment="false", **{"check-run": "false"})

    assert result.returncode == 1, result.log
    assert sorted(t["file"] for t in project.report()["tests"]) == [
        "tests/test_alpha.py",
        "tests/test_beta.py",
    ]
    assert result.outputs["replayed"] == "2"
    assert project.report()["summary"]["egress"]["mode"] == "guard"
    assert result.outputs["verdict"] == "blocked"
    assert project.comments() == []


def test_a_fork_leaves_the_artifact_and_the_publish_workflow_comments(project: Project) -> None:
    result = project.run(head_repo="someone/refund-agent", select="true")

    assert result.returncode == 0, result.log
    assert project.comments() == []
    [(_, _action, given)] = [u for u in result.uses if u[0].startswith("Upload the pull-request artifact")]
    assert given["name"] == "attest-pr"
    artifact = Path(given["path"])
    assert json.loads((artifact / "attest-pr.json").read_text())["pr_number"] == project.number

    published = run_publish_workflow(project, artifact)

    assert published.returncode == 0, published.stdout + published.stderr
    [comment] = project.comments()
    assert "1 replayed · 0 live model calls · $0.00" in comment["body"]


def run_publish_workflow(project: Project, artifact: Path) -> subprocess.CompletedProcess[str]:
    """workflows/publish.yml's publishing step, after download-artifact put the artifact in place."""
    workflow = yaml.safe_load((REPO / "workflows" / "publish.yml").read_text(encoding="utf-8"))
    [job] = workflow["jobs"].values()
    download = next(s for s in job["steps"] if s.get("uses", "").startswith("actions/download-artifact@"))
    [step] = [s for s in job["steps"] if "attest github publish" in s.get("run", "")]
    workspace, runner = project.tmp / "publish-workspace", project.tmp / "publish-runner"
    workspace.mkdir()
    contexts: dict[str, Any] = {"github": {"token": TOKEN, "repository": OWNER_REPO}, "secrets": {}}
    contexts["runner"] = {"temp": str(runner)}
    target = workspace / interpolate(download["with"]["path"], contexts)
    target.mkdir(parents=True)
    for item in artifact.iterdir():
        target.joinpath(item.name).write_bytes(item.read_bytes())
    event = {
        "action": "completed",
        "workflow_run": {
            "id": 99,
            "head_sha": project.head(),
            "conclusion": "success",
            "head_repository": {"full_name": "someone/x"},
        },
        "repository": {"full_name": OWNER_REPO},
    }
    event_path = project.tmp / "workflow-run-event.json"
    event_path.write_text(json.dumps(event), encoding="utf-8")
    contexts["github"]["event"] = event
    env = project.env(event_path, project.tmp)
    env.update(GITHUB_EVENT_NAME="workflow_run", GITHUB_WORKSPACE=str(workspace), RUNNER_TEMP=str(runner))
    env.update({k: interpolate(v, contexts) for k, v in (step.get("env") or {}).items()})
    return subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
        cwd=step_directory(step, contexts, workspace),
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


FAKE_ENGINE = """\
#!{python}
# A container engine stand-in: records its argv, refuses `run` without --network none, and runs the
# image's entrypoint (attest) here in the working directory the run names.
import json, os, sys
args = sys.argv[1:]
with open({log!r}, "a") as log:
    log.write(json.dumps(args) + "\\n")
if args[0] in ("info", "build"):
    sys.exit(0)
assert args[0] == "run" and args[args.index("--network") + 1] == "none", args
rest, env, cwd = args[1:], dict(os.environ), os.getcwd()
while rest[0].startswith("-"):
    option = rest.pop(0)
    if option in ("--rm",):
        continue
    value = rest.pop(0)
    if option == "-w":
        cwd = value
image, rest = rest[0], rest[1:]
os.chdir(cwd)
os.execvp("attest", ["attest", *rest])
"""


def test_container_isolation_runs_the_image_with_the_network_off(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir, log = project.tmp / "bin", project.tmp / "engine.log"
    bin_dir.mkdir()
    engine = bin_dir / "docker"
    engine.write_text(FAKE_ENGINE.format(python=sys.executable, log=str(log)), encoding="utf-8")
    engine.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")

    result = project.run(isolation="container", setup="true", **{"container-options": "--ulimit nofile=1024"})

    assert result.returncode == 0, result.log
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    builds = [c for c in calls if c[0] == "build"]
    assert builds[0][-1] == str(REPO)  # the action's own Dockerfile
    assert "ATTEST_SETUP=true" in builds[1]
    [run] = [c for c in calls if c[0] == "run"]
    assert run[run.index("-v") + 1] == f"{project.repo}:{project.repo}"
    assert "--ulimit" in run
    assert run[run.index("attest-action:setup") + 1 :][:3] == ["sandbox", "--network", "none"]
    assert project.report()["summary"]["egress"]["isolation_verified"] is True


def test_pinned_fixtures_are_pulled_from_the_store_before_the_network_goes_off(
    project: Project, s3: S3, bucket: str
) -> None:
    repo = project.repo
    (repo / ".gitignore").write_text("tests/attest/fixtures/\nseen-*env.txt\n", encoding="utf-8")
    git(repo, "rm", "-q", "-r", "--cached", FIXTURES)
    pushed = run_cli(["fixture", "push", "alpha", "beta"], env=s3.env(bucket), cwd=repo)
    assert pushed.returncode == 0, pushed.stderr
    commit(repo, "pin the fixtures in the object store")
    shutil.rmtree(repo / FIXTURES)  # a fresh checkout holds only the lock

    store = s3.variables(bucket)
    keys = {
        "object-store-access-key": store.pop("OBJECT_STORE_ACCESS_KEY"),
        "object-store-secret-key": store.pop("OBJECT_STORE_SECRET_KEY"),
    }
    result = project.run(
        extra_env=store,
        setup="env > seen-setup-env.txt",
        command="env > seen-env.txt; pytest -q -p no:cacheprovider",
        comment="false",
        **{"fixtures-store": "s3", "check-run": "false", **keys},
    )

    assert result.returncode == 0, result.log
    names = [step.name for step in result.steps]
    assert names.index("Pull the pinned fixtures (network on)") < names.index("Run the tests (network off)")
    assert "attest fixture pull: 2 fetched, 0 up to date" in result.step("fixtures").stdout
    report = project.report()
    assert sorted((t["file"], t["outcome"]) for t in report["tests"]) == [
        ("tests/test_alpha.py", "passed"),
        ("tests/test_beta.py", "passed"),
    ]
    assert report["summary"]["egress"]["isolation_verified"] is True
    for seen in ("seen-setup-env.txt", "seen-env.txt"):
        text = (repo / seen).read_text(encoding="utf-8")
        assert s3.secret_key not in text and "OBJECT_STORE_SECRET_KEY" not in text


def test_a_fork_without_the_store_secrets_is_not_evaluated_and_says_why(project: Project) -> None:
    result = project.run(head_repo="someone/refund-agent", **{"fixtures-store": "s3"})

    assert result.returncode == 2, result.log
    assert result.outputs["verdict"] == "not_evaluated"
    assert result.outputs["summary"].startswith("attest: not evaluated: fixtures not available to forks")
    assert "Run the tests (network off)" in result.skipped
    summary = (project.tmp / "runner-1" / "step-summary.md").read_text(encoding="utf-8")
    assert "fixtures not available to forks" in summary
    assert project.comments() == []

    # The repository's own pull request without the secrets is a configuration error, not a verdict.
    result = project.run(**{"fixtures-store": "s3"})
    assert result.returncode == 3
    assert "needs OBJECT_STORE_ADDR" in result.step("fixtures").stdout


@pytest.mark.parametrize(
    ("inputs", "problem"),
    [
        ({"fixtures-store": "gcs"}, "fixtures-store must be s3 or empty"),
        ({"mode": "sometimes"}, "mode must be strict, auto or off"),
        ({"network": "host"}, "network must be none or guard"),
        ({"comment": "yes"}, "true, false or on-change"),
        ({"shard": "1/2"}, "shard needs select: true"),
        ({"isolation": "image"}, "isolation image needs the inputs image and fixture"),
        (
            {"isolation": "image", "image": "a", "fixture": "b", "mode": "auto"},
            "mode strict and network none",
        ),
    ],
)
def test_bad_inputs_stop_the_action_with_one_error_line(
    project: Project, inputs: dict[str, str], problem: str
) -> None:
    result = project.run(**inputs)

    assert result.returncode == 3
    [check] = result.steps
    [line] = check.stdout.splitlines()
    assert line.startswith("::error") and problem in line


def test_store_keys_in_the_steps_env_are_refused_before_anything_runs(project: Project) -> None:
    # In the env of the action's step, the keys would reach the setup, the tests and the steps that
    # run after the setup (policy, publish): they are accepted as inputs only, for the pull step alone.
    keys = {"OBJECT_STORE_ACCESS_KEY": "AKIAEXAMPLEKEY", "OBJECT_STORE_SECRET_KEY": "s3cr3t-" + "k" * 33}
    result = project.run(extra_env=keys, **{"fixtures-store": "s3"})

    assert result.returncode == 3
    [check] = result.steps
    [line] = check.stdout.splitlines()
    assert line.startswith("::error title=attest::give the object store's keys as the inputs")


def test_only_the_pull_step_is_given_the_store_keys() -> None:
    steps = yaml.safe_load((REPO / "action.yml").read_text(encoding="utf-8"))["runs"]["steps"]
    holding = [s["name"] for s in steps if "inputs.object-store-" in json.dumps(s)]
    assert holding == ["Pull the pinned fixtures (network on)"]


def test_an_input_cannot_start_a_workflow_command_of_its_own(project: Project) -> None:
    # The error line quotes the input: escaped, its line breaks cannot begin a second command.
    result = project.run(mode="x%0A\n::warning title=attest::0 live model calls\r\n::add-mask::y")

    assert result.returncode == 3
    [line] = result.step("check").stdout.splitlines()
    assert line.startswith("::error title=attest::mode must be strict, auto or off")
    assert "x%250A%0A::warning" in line and "%0D%0A::add-mask" in line


def test_a_base_commit_missing_from_the_checkout_says_to_fetch_it(project: Project) -> None:
    # (forty zeros is a push that created its branch: no base, not a missing one)
    result = project.run(select="true", base="1" * 40)

    assert result.returncode == 3
    assert "fetch-depth: 0" in result.step("select").stdout
    assert "Run the tests (network off)" not in [s.name for s in result.steps]


def test_a_command_that_writes_no_report_fails_closed(project: Project) -> None:
    result = project.run(command="true")

    assert result.returncode == 3
    assert "no report was written" in result.step("test").stdout
    assert project.comments() == []


def test_no_run_script_holds_an_expression() -> None:
    """Inputs reach scripts through env only: `${{ }}` inside a script is shell injection."""
    action = yaml.safe_load((REPO / "action.yml").read_text(encoding="utf-8"))
    scripts = [s["run"] for s in action["runs"]["steps"] if "run" in s]
    assert scripts and not any("${{" in script for script in scripts)


@pytest.mark.parametrize(
    ("event", "base"),
    [
        ({"pull_request": {"base": {"sha": "a" * 40}}}, "a" * 40),
        ({"merge_group": {"base_sha": "b" * 40, "head_sha": "c" * 40}}, "b" * 40),
        ({"before": "d" * 40, "after": "e" * 40}, "d" * 40),
    ],
    ids=["pull_request", "merge_group", "push"],
)
def test_the_base_of_a_pull_request_a_merge_queue_and_a_push(event: dict[str, Any], base: str) -> None:
    # What GitHub puts in each event (its webhook payloads): pull_request.base.sha,
    # merge_group.base_sha, and a push's `before`.
    action = yaml.safe_load((REPO / "action.yml").read_text(encoding="utf-8"))
    assert interpolate(action["inputs"]["base"]["default"], {"github": {"event": event}}) == base


def test_on_change_posts_nothing_for_a_clean_run_and_the_html_report_is_uploaded(project: Project) -> None:
    result = project.run(base=project.head(), comment="on-change", **{"check-run": "false"})

    assert result.returncode == 0, result.log
    assert project.comments() == []
    assert "comment not posted: nothing to tell a reviewer" in result.step("publish").stdout
    [(_, action, given)] = [u for u in result.uses if u[0] == "Upload the HTML report"]
    assert action.startswith("actions/upload-artifact@") and given["name"] == "attest-report-html"
    page = Path(given["path"]).read_text(encoding="utf-8")
    assert "2 replayed · 0 live model calls · $0.00" in page and "tests/test_alpha.py" in page


@NEEDS_PODMAN
def test_image_isolation_replays_the_agent_image_and_gates_on_it(
    project: Project, agent_image: str, recorded: Path, podman_env: dict[str, str]
) -> None:
    shutil.copy(recorded / "refund.attest.json", project.repo / FIXTURES / "refund.attest.json")
    commit(project.repo, "the agent image's fixture")
    inputs = {"isolation": "image", "image": agent_image, "fixture": "refund", "check-run": "false"}
    conf = {"CONTAINERS_CONF": podman_env["CONTAINERS_CONF"]}  # this machine's podman settings

    result = project.run(extra_env=conf, command="", comment="false", **inputs)

    assert result.returncode == 0, result.log
    assert result.outputs["verdict"] == "pass"
    assert "network none (its own namespace), isolation verified" in result.step("test").stderr
    report = project.report()
    assert [(t["id"], t["outcome"]) for t in report["tests"]] == [(f"image:{agent_image}", "passed")]
    assert report["summary"]["egress"]["isolation_verified"] is True

    changed = 'python3 /agent/agent.py --prompt "Can order 18 be refunded?"'
    result = project.run(extra_env=conf, command=changed, comment="false", **inputs)

    assert result.returncode == 1, result.log
    assert result.outputs["verdict"] == "blocked"
    [row] = project.report()["tests"]
    assert row["outcome"] == "failed" and row["replay"]["miss"]["component"] == "messages"


# What a pull request's setup (or its tests) can try against the steps that judge it. GitHub's runner
# applies a step's GITHUB_ENV and GITHUB_PATH to every later step (tests/action_runner.py does the
# same), and the steps share one user and one filesystem. The pull request ships the files (`evil/`).
EVIL_FILES = {
    "attest": "#!/bin/sh\nexit 0\n",
    "python": "#!/bin/sh\nexit 0\n",
    # only for the policy, so the tests themselves still run and report their miss
    "sitecustomize.py": 'import os, sys\nif "policy" in sys.argv:\n    os._exit(0)\n',
    # a script every later bash runs first: it ends the steps that judge (they have POLICY in their env)
    "bash_env.sh": '[ -z "${POLICY+set}" ] || exit 0\n',
}
ATTACKS = {
    "an attest and a python first on PATH": 'echo "$PWD/evil" >>"$GITHUB_PATH"',
    "a sitecustomize on PYTHONPATH": 'echo "PYTHONPATH=$PWD/evil" >>"$GITHUB_ENV"',
    "BASH_ENV for every later step": 'echo "BASH_ENV=$PWD/evil/bash_env.sh" >>"$GITHUB_ENV"',
    "the runner's own file, found by name": (
        'for f in "$RUNNER_TEMP"/github_env-*; do echo "BASH_ENV=$PWD/evil/bash_env.sh" >>"$f"; done'
    ),
}


def _a_miss_and_evil_files(project: Project) -> None:
    evil = project.repo / "evil"
    evil.mkdir()
    for name, text in EVIL_FILES.items():
        (evil / name).write_text(text, encoding="utf-8")
        (evil / name).chmod(0o755)
    fixture(project.repo, "beta", "Say goodbye", "Goodbye!", system="You are verbose.")
    commit(project.repo, "re-record beta with another system prompt (the test misses), and evil/")


@pytest.mark.parametrize("setup", ATTACKS.values(), ids=ATTACKS.keys())
def test_the_setup_cannot_change_what_judges_the_run(project: Project, setup: str) -> None:
    _a_miss_and_evil_files(project)

    result = project.run(setup=setup, comment="false", **{"check-run": "false"})

    assert result.returncode == 1, result.log
    assert (result.outputs["verdict"], result.outputs["misses"]) == ("blocked", "1"), result.log


def test_the_setup_still_gives_the_tests_their_path_and_environment(project: Project) -> None:
    # A setup that activates a tool for the tests through GITHUB_PATH and GITHUB_ENV keeps working: the
    # test command sees both (the gate's own steps do not).
    tool = '"$RUNNER_TEMP/tool"'
    setup = (
        f'mkdir -p {tool} && printf "#!/bin/sh\\necho from-setup\\n" >{tool}/setup-tool && chmod +x {tool}/setup-tool'
        f' && echo {tool} >>"$GITHUB_PATH"'
        ' && printf "GREETING<<END\\nhello\\nworld\\nEND\\nPLAIN=a=b\\n" >>"$GITHUB_ENV"'
    )
    (project.repo / "tests" / "test_env.py").write_text(
        "import os, subprocess\n\n\ndef test_env():\n"
        "    assert subprocess.run(['setup-tool'], capture_output=True, text=True).stdout == 'from-setup\\n'\n"
        "    assert os.environ['GREETING'] == 'hello\\nworld' and os.environ['PLAIN'] == 'a=b'\n",
        encoding="utf-8",
    )
    commit(project.repo, "a test of what setup gave")

    result = project.run(setup=setup, comment="false", **{"check-run": "false"})

    assert result.returncode == 0, result.log
    outcomes = {t["file"]: t["outcome"] for t in project.report()["tests"]}
    assert outcomes["tests/test_env.py"] == "passed"


def test_a_gate_whose_files_changed_after_install_refuses_to_run(project: Project) -> None:
    policy = '"$(echo "$RUNNER_TEMP"/attest-gate/lib/python*/site-packages/attest_toolkit)/policy.py"'
    setup = f'echo "raise SystemExit(0)" >>{policy}'
    _a_miss_and_evil_files(project)

    result = project.run(setup=setup, comment="false", **{"check-run": "false"})

    assert result.returncode == 3, result.log
    assert result.outputs["verdict"] != "pass"
    [line] = [line for line in result.log.splitlines() if line.startswith("::error")]
    assert line == (
        "::error title=attest::the toolkit the gate runs changed after it was installed"
        " (by setup or the tests): not running it"
    )


def test_the_tests_cannot_set_the_environment_of_the_steps_that_judge_them(project: Project) -> None:
    # The command runs in the sandbox but writes the same files: its writes to the runner's files are dropped.
    (project.repo / "tests" / "conftest.py").write_text(
        "import os, pathlib\n"
        "with open(os.environ['GITHUB_ENV'], 'a') as f:\n"
        "    f.write(f'BASH_ENV={pathlib.Path.cwd()}/evil/bash_env.sh\\n')\n",
        encoding="utf-8",
    )
    _a_miss_and_evil_files(project)

    result = project.run(comment="false", **{"check-run": "false"})

    assert result.returncode == 1, result.log
    assert result.outputs["verdict"] == "blocked"
