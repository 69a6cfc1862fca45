"""Run one job of a workflow's `run:` steps as GitHub's runner does, for tests of the shipped workflows.

The rules are action_runner's (expressions, GITHUB_OUTPUT/ENV/PATH, the first failing step ends the
job), with what a workflow adds: a step without `shell:` runs as `bash -e FILE` (GitHub's default on
Linux); the workflow's and the job's `env`; the contexts `secrets` and `needs`; the job's `outputs`.
`uses:` steps are recorded with their `with`, not run: the test does what they would (a checkout, an
artifact carried from one job to the next).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from action_runner import ActionRun, condition, interpolate, run_step

DEFAULT_SHELL = ["bash", "-e"]


@dataclass
class JobRun(ActionRun):
    """A workflow job's run: an action's run, plus the artifacts its upload steps took."""

    def upload(self, name: str) -> Path:
        """Where the job's upload-artifact step named `name` took its files from."""
        return next(
            Path(given["path"])
            for _, action, given in self.uses
            if action.startswith("actions/upload-artifact@") and given.get("name") == name
        )


def load_workflow(path: Path) -> dict[str, Any]:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def run_job(
    workflow: Path,
    job_id: str,
    *,
    github: Mapping[str, Any],
    env: Mapping[str, str],
    workspace: Path,
    runner_temp: Path,
    secrets: Mapping[str, str] | None = None,
    needs: Mapping[str, Any] | None = None,
    substitute: Mapping[str, str] | None = None,
    keep_going: bool = False,
) -> JobRun:
    """Run `job_id`'s steps; `substitute`: values that replace the workflow's own `env` (a test's
    stand-in for what would be downloaded, such as the package to install); `keep_going`: every step
    runs whatever those before it did, `if:` and failures notwithstanding."""
    doc = load_workflow(workflow)
    job = doc["jobs"][job_id]
    contexts: dict[str, Any] = {
        "github": dict(github),
        "runner": {"temp": str(runner_temp)},
        "secrets": dict(secrets or {}),
        "needs": dict(needs or {}),
        "steps": {},
    }
    declared = {k: interpolate(v, contexts) for k, v in {**doc.get("env", {}), **job.get("env", {})}.items()}
    runner = {**env, "RUNNER_TEMP": str(runner_temp), "GITHUB_WORKSPACE": str(workspace)}
    job_env: dict[str, str] = {}  # what steps wrote to GITHUB_ENV and GITHUB_PATH
    result = JobRun(returncode=0, outputs={})
    for index, step in enumerate(job["steps"]):
        name = step.get("name") or step.get("uses") or f"step {index}"
        if not keep_going and not condition(step.get("if"), contexts):
            result.skipped.append(name)
            continue
        if "uses" in step:
            given = {k: interpolate(v, contexts) for k, v in (step.get("with") or {}).items()}
            result.uses.append((name, step["uses"], given))
            continue
        step_base = {**runner, **job_env, **declared, **(substitute or {})}
        run = run_step(step, name, index, contexts, step_base, workspace, runner_temp, DEFAULT_SHELL)
        job_env.update(run.env_written)
        for directory in run.path_written:
            job_env["PATH"] = f"{directory}:{job_env.get('PATH', runner.get('PATH', ''))}"
        result.steps.append(run)
        if run.id:
            contexts["steps"][run.id] = {"outputs": run.outputs}
        if run.returncode != 0:
            result.returncode = run.returncode
            if not keep_going:
                break
    result.outputs = {k: interpolate(v, contexts) for k, v in (job.get("outputs") or {}).items()}
    return result
