"""The action's first step, its inputs checked by the runner's own python3 before anything is installed.

`tests/system/test_action.py` runs the step through the action; these run the file as that step does, on an
interpreter that has nothing but the standard library (`-I -S`: no site-packages, no working directory
on the path), so a check that needed the toolkit or a third-party package would fail here.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO

INPUTS = REPO / "toolkit" / "attest_toolkit" / "github" / "inputs.py"
# The action's defaults, as its step passes them.
DEFAULTS = {
    "MODE": "strict",
    "NETWORK": "none",
    "ISOLATION": "host",
    "SELECT": "false",
    "SHARD": "",
    "STORE": "",
    "IMAGE": "",
    "FIXTURE": "",
    "COMMENT": "true",
    "SWITCHES": "true true true true",
}


def check(**inputs: str | bytes) -> subprocess.CompletedProcess[bytes]:
    env: dict[str | bytes, str | bytes] = {"PATH": "/usr/bin:/bin", **DEFAULTS, **inputs}
    return subprocess.run(
        [sys.executable, "-I", "-S", str(INPUTS)], env=env, capture_output=True, check=False, timeout=60
    )


def test_the_defaults_pass_silently_on_a_python_with_only_its_standard_library() -> None:
    result = check()

    assert (result.returncode, result.stdout, result.stderr) == (0, b"", b"")


def test_it_imports_only_the_standard_library() -> None:
    tree = ast.parse(INPUTS.read_text(encoding="utf-8"))
    imported = {
        alias.name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    }
    imported |= {
        (node.module or "").split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
    }
    relative = [node for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.level]

    assert relative == []
    assert imported <= set(sys.stdlib_module_names) | {"__future__"}


@pytest.mark.parametrize(
    ("switches", "said"),
    [
        ("true  false\ttrue", None),  # split on blanks as the shell split them
        ("", None),  # every switch left empty
        ("true maybe", "summary, annotations, check-run and html-report take true or false, not 'maybe'"),
    ],
)
def test_the_switches_are_read_word_by_word(switches: str, said: str | None) -> None:
    result = check(SWITCHES=switches)

    if said is None:
        assert (result.returncode, result.stdout) == (0, b"")
    else:
        assert result.returncode == 3
        assert result.stdout.decode().endswith(said + "\n")


def test_an_input_that_is_not_utf_8_is_quoted_as_given_without_a_traceback() -> None:
    result = check(MODE=b"fast\xff")

    assert result.returncode == 3
    assert result.stdout == b"::error title=attest::mode must be strict, auto or off, not 'fast\xff'\n"
    assert result.stderr == b""


@pytest.mark.parametrize(
    ("working_directory", "project"),
    [(".", "/w/repo"), ("agent", "/w/repo/agent"), ("/w/other", "/w/other")],
)
def test_the_project_directory_is_working_directory_as_the_runner_takes_it(
    tmp_path: Path, working_directory: str, project: str
) -> None:
    output = tmp_path / "output"
    output.write_text("", encoding="utf-8")

    result = check(GITHUB_WORKSPACE="/w/repo", WORKING_DIRECTORY=working_directory, GITHUB_OUTPUT=str(output))

    assert (result.returncode, result.stdout) == (0, b"")
    assert output.read_text(encoding="utf-8") == f"project-dir={project}\n"
