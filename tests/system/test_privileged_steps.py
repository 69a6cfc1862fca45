"""No step that holds a token or a secret runs anything a pull request planted where it works.

Each such step of action.yml and of the shipped workflows runs here as the runner runs it, with every
plant of tests/plants.py in the checkout (`pip/`, `venv/`, `sitecustomize.py`, `usercustomize.py`, a
`.pth`, `git`/`python3`/`python`/`gh` shims, a `pyvenv.cfg`): none of them may run. None of them
works in the checkout either: each is started outside it and given the project directory. The two
jobs of refresh-on-comment.yml, which check out the pull request itself, run end to end with the
plants in tests/system/test_refresh_on_comment.py.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import plants
import pytest
import yaml
from action_runner import load_action, run_action, step_directory
from conftest import REPO
from fake_github import FakeGitHub
from workflow_runner import run_job

# The steps of action.yml that hold the token or the store's keys, and the one that builds the gate
# every later step trusts.
ACTION_PRIVILEGED = (
    "Install attest-toolkit",
    "Pull the pinned fixtures (network on)",
    "Publish to GitHub (network on)",
)
# The step whose exit code is the gate's.
ACTION_GATE = "Gate on the verdict"
# Steps that run a repository's code with the providers' keys because that is their work: the weekly
# refresh runs the default branch's reviewed code, the refresh on comment the commit a maintainer
# named (with a read-only token). Starting them elsewhere would not change what they run.
RUN_THE_CODE = {
    ("refresh.yml", "Re-record every fixture"),
    ("refresh-on-comment.yml", "Re-record only what missed"),
}
SECRET = ("inputs.token", "inputs.object-store", "secrets.", "github.token")
OFFLINE_GIT = """#!/bin/sh
# git, offline: a clone (pip fetching the toolkit from its repository) fails at once.
if [ "$1" = clone ]; then echo "git clone: no network in this test" >&2; exit 128; fi
exec /usr/bin/git "$@"
"""


# A Python started in a script: `python`, `python3` or a path ending in one, and the word after it.
PYTHON = re.compile(r"""(?:^|[\s;(&|"'])(?:[^\s"';]*/)?python3?"?[ \t]+(?P<next>\S+)""", re.M)


def holds_secret(holder: dict[str, Any]) -> bool:
    return any(mark in str(value) for value in (holder.get("env") or {}).values() for mark in SECRET)


def runner_env(tmp: Path) -> dict[str, str]:
    tools = tmp / "tools"
    tools.mkdir()
    (tools / "git").write_text(OFFLINE_GIT, encoding="utf-8")
    (tools / "git").chmod(0o755)
    path = [tools, Path(sys.executable).parent, Path("/usr/bin"), Path("/bin")]
    return {
        "PATH": ":".join(map(str, path)),
        "HOME": str(tmp / "home"),
        "LANG": "C.UTF-8",
        "PIP_NO_INDEX": "1",
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "GITHUB_ACTIONS": "true",
        "GITHUB_REPOSITORY": "acme/agent",
    }


def planted_checkout(tmp: Path) -> tuple[Path, Path]:
    checkout, markers = tmp / "checkout", tmp / "markers"
    checkout.mkdir()
    plants.plant(checkout, markers)
    return checkout, markers


def test_every_step_of_the_action_that_holds_a_secret_is_run_here() -> None:
    steps = load_action(REPO / "action.yml")["runs"]["steps"]

    assert {s["name"] for s in steps if holds_secret(s) and "run" in s} <= set(ACTION_PRIVILEGED)


@pytest.mark.parametrize("skip_install", ["1", ""], ids=["installed-toolkit", "pip-install"])
def test_nothing_planted_runs_in_the_actions_privileged_steps(tmp_path: Path, skip_install: str) -> None:
    checkout, markers = planted_checkout(tmp_path)
    runner = tmp_path / "runner"
    runner.mkdir()
    env = {**runner_env(tmp_path), "ATTEST_ACTION_SKIP_INSTALL": skip_install}
    event = {"pull_request": {"number": 7, "head": {"sha": "a1" * 20}, "base": {"sha": "0" * 40}}}
    (runner / "event.json").write_text(json.dumps(event), encoding="utf-8")
    with FakeGitHub() as gh:
        env.update(GITHUB_API_URL=gh.url, GITHUB_EVENT_PATH=str(runner / "event.json"))
        inputs = {
            "command": "pytest",
            "fixtures-store": "s3",
            "object-store-access-key": "AKIAEXAMPLEKEY000000",
        }
        github = {"token": "ghs_" + "t" * 36, "event": event, "action_path": str(REPO)}
        result = run_action(
            REPO,
            inputs,
            github=github,
            env=env,
            workspace=checkout,
            runner_temp=runner,
            only=ACTION_PRIVILEGED,
        )

    assert [s.name for s in result.steps] == list(ACTION_PRIVILEGED)
    if skip_install:  # the gate was built, so the steps after it ran it
        assert result.steps[0].returncode == 0, result.log
    assert plants.ran(markers) == [], result.log
    assert [s.name for s in result.steps if s.cwd is None or s.cwd.is_relative_to(checkout)] == []


def privileged_jobs() -> list[tuple[str, str]]:
    """(workflow, job) of every shipped job that may write or holds a secret, but the refresh on comment's."""
    found = []
    for path in sorted((REPO / "workflows").glob("*.yml")):
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        for job_id, job in doc["jobs"].items():
            granted = job.get("permissions", doc.get("permissions")) or {}
            writes = isinstance(granted, dict) and "write" in granted.values()
            if (
                writes or any(holds_secret(s) for s in job["steps"])
            ) and path.name != "refresh-on-comment.yml":
                found.append((path.name, job_id))
    return found


@pytest.mark.parametrize(("workflow", "job"), privileged_jobs())
def test_nothing_planted_runs_in_a_workflow_job_that_may_write(
    tmp_path: Path, workflow: str, job: str
) -> None:
    checkout, markers = planted_checkout(tmp_path)
    runner = tmp_path / "runner"
    runner.mkdir()
    github = {"token": "ghs_" + "t" * 36, "event": {}, "repository": "acme/agent", "base_ref": "main"}
    secrets = {"OPENAI_API_KEY": "sk-proj-" + "k" * 40}

    result = run_job(
        REPO / "workflows" / workflow,
        job,
        github=github,
        env=runner_env(tmp_path),
        workspace=checkout,
        runner_temp=runner,
        secrets=secrets,
        needs={"shard": {"result": "success", "outputs": {}}},
        keep_going=True,
    )

    assert result.steps, f"{workflow}: {job} has no run step"
    assert plants.ran(markers) == [], result.log


def privileged_steps() -> list[tuple[str, dict[str, Any]]]:
    """(file: step, step) of every `run:` step that holds a token or a secret, and the action's install
    and gate steps, but those that run the code on purpose (RUN_THE_CODE)."""
    found = [
        (f"action.yml: {s['name']}", s)
        for s in load_action(REPO / "action.yml")["runs"]["steps"]
        if "run" in s and (holds_secret(s) or s["name"] in (*ACTION_PRIVILEGED, ACTION_GATE))
    ]
    for path in sorted((REPO / "workflows").glob("*.yml")):
        for job in yaml.safe_load(path.read_text(encoding="utf-8"))["jobs"].values():
            found += [
                (f"{path.name}: {s.get('name', '')}", s)
                for s in job["steps"]
                if "run" in s and holds_secret(s) and (path.name, s.get("name")) not in RUN_THE_CODE
            ]
    return found


@pytest.mark.parametrize("working_directory", [".", "agent"])
def test_no_privileged_step_starts_in_the_checkout(tmp_path: Path, working_directory: str) -> None:
    checkout, runner = tmp_path / "checkout", tmp_path / "runner"
    contexts = {
        "inputs": {"working-directory": working_directory},
        "github": {"workspace": str(checkout)},
        "runner": {"temp": str(runner)},
    }
    steps = privileged_steps()

    assert len(steps) >= 8
    inside = [where for where, s in steps if step_directory(s, contexts, checkout).is_relative_to(checkout)]
    assert inside == []


# A step that runs one of the action's checked scripts (`bash "$ACTION_PATH/toolkit/.../NAME.sh"`).
SCRIPT = re.compile(r"\$ACTION_PATH/(toolkit/attest_toolkit/[\w/]+\.sh)")


def with_scripts(run: str) -> str:
    """A step's run: text, and the text of each script of the action it runs."""
    return "\n".join([run, *((REPO / path).read_text(encoding="utf-8") for path in SCRIPT.findall(run))])


def run_scripts() -> list[tuple[str, str]]:
    """(file: step, script) of every `run:` step of action.yml and the workflows."""
    found = [
        (f"action.yml: {s['name']}", with_scripts(s["run"]))
        for s in load_action(REPO / "action.yml")["runs"]["steps"]
        if "run" in s
    ]
    for path in sorted((REPO / "workflows").glob("*.yml")):
        for job_id, job in yaml.safe_load(path.read_text(encoding="utf-8"))["jobs"].items():
            found += [
                (f"{path.name}: {job_id}: {s.get('name', '')}", s["run"]) for s in job["steps"] if "run" in s
            ]
    return found


def test_every_python_a_shipped_step_starts_is_isolated() -> None:
    started = [
        (where, m.group(0).strip()) for where, script in run_scripts() for m in PYTHON.finditer(script)
    ]

    assert len(started) >= 10
    assert [(where, call) for where, call in started if not call.endswith(" -I")] == []
