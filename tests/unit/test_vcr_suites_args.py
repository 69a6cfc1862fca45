"""bench/vcr_suites.py runs pytest inside the project's checkout: the paths typed on its command line
mean what they meant where they were typed, and the table names the project even when the checkout is
given as `.`."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from bench_tables import bench_module


def test_a_relative_python_is_the_one_next_to_where_it_was_typed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    args = bench_module("vcr_suites").arguments(
        ["project", "tests", "--python", "project/.venv/bin/python", "--cassettes", "tests"]
    )
    assert args.python == os.path.join(tmp_path, "project", ".venv", "bin", "python")
    assert args.checkout == tmp_path.resolve() / "project"


def test_the_virtualenv_link_is_kept_not_followed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "python").symlink_to("/usr/bin/python3")
    monkeypatch.chdir(tmp_path)
    args = bench_module("vcr_suites").arguments(
        [".", "tests", "--python", "bin/python", "--cassettes", "tests"]
    )
    assert args.python == os.path.join(tmp_path, "bin", "python")


def test_a_checkout_given_as_dot_is_named_by_its_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "llm-bedrock"
    project.mkdir()
    monkeypatch.chdir(project)
    args = bench_module("vcr_suites").arguments([".", "tests", "--python", "python", "--cassettes", "tests"])
    assert args.label == "llm-bedrock"
