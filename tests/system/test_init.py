"""`attest init` in a fresh project, as a new user runs it: the files, the first test passing under
pytest, a second run that changes nothing, and a user's file never overwritten."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from attest_toolkit import __version__
from attest_toolkit.report.policy import DEFAULTS, load_policy
from conftest import clean_env, run_cli

WROTE = [
    "tests/attest/fixtures/attest-hello.attest.json",
    "tests/test_attest_hello.py",
    ".attest/policy.yml",
    ".github/workflows/attest-pr-gate.yml",
    ".github/workflows/attest-publish.yml",
]


def test_init_scaffolds_a_project_whose_first_test_passes(tmp_path: Path) -> None:
    proc = run_cli(["init"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        *(f"wrote: {p}" for p in WROTE),
        "next: pytest tests/test_attest_hello.py",
    ]
    env = {k: v for k, v in clean_env().items() if k != "CI"}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:randomly",
            "-p",
            "no:cacheprovider",
            "tests/test_attest_hello.py",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "attest replay: 1 replayed · 0 live model calls · $0.00" in done.stdout.splitlines()


def test_the_policy_holds_every_default_and_the_workflows_are_pinned_to_this_version(tmp_path: Path) -> None:
    run_cli(["init"], cwd=tmp_path)
    policy = load_policy(tmp_path / ".attest" / "policy.yml")
    assert policy.settings == DEFAULTS
    text = (tmp_path / ".attest" / "policy.yml").read_text()
    assert all(f"\n{key}: " in text for key in DEFAULTS)  # written out, not left implicit
    gate = (tmp_path / ".github" / "workflows" / "attest-pr-gate.yml").read_text()
    assert f"uses: attest-toolkit/attest-toolkit@v{__version__}" in gate and "@v0 " not in gate


def test_init_again_changes_nothing_and_never_overwrites(tmp_path: Path) -> None:
    (tmp_path / ".attest").mkdir()
    (tmp_path / ".attest" / "policy.yml").write_text("max_live_calls: 3\n")
    first = run_cli(["init"], cwd=tmp_path)
    assert "exists, left as it is: .attest/policy.yml" in first.stdout.splitlines()
    assert (tmp_path / ".attest" / "policy.yml").read_text() == "max_live_calls: 3\n"
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    second = run_cli(["init"], cwd=tmp_path)
    assert [line.split(": ")[0] for line in second.stdout.splitlines()[:-1]] == ["exists, left as it is"] * 5
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == before


def test_init_refuses_to_write_through_a_symlink_that_leaves_the_project(tmp_path: Path) -> None:
    project, elsewhere = tmp_path / "project", tmp_path / "shared-workflows"
    (project / ".github").mkdir(parents=True)
    elsewhere.mkdir()
    (project / ".github" / "workflows").symlink_to(elsewhere)

    proc = run_cli(["init"], cwd=project)

    assert proc.returncode == 3
    assert proc.stderr.splitlines() == [
        "attest: .github/workflows/attest-pr-gate.yml: .github/workflows leads out of the project;"
        " not writing through a symlink"
    ]
    assert list(elsewhere.iterdir()) == []
    assert not (project / "tests").exists()  # nothing is written when one file cannot be
