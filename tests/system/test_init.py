"""`attest init` in a fresh project, as a new user runs it: the files, the first test passing under
pytest, a second run that changes nothing, and a user's file never overwritten."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

from attest_toolkit import __version__, starter
from attest_toolkit.report.policy import DEFAULTS, load_policy
from conftest import clean_env, run_cli

WROTE = [
    "tests/attest/fixtures/attest-hello.attest.json",
    "tests/test_attest_hello.py",
    ".attest/policy.yml",
    ".github/workflows/attest-pr-gate.yml",
    ".github/workflows/attest-publish.yml",
]


PIN = (
    f"pin: the workflows name attest-toolkit/attest-toolkit@v{__version__}, a tag that can be moved; "
    "replace it with the release's full commit SHA (attest-toolkit was not installed from git, so it "
    "cannot tell)"
)


def test_init_scaffolds_a_project_whose_first_test_passes_with_the_step_it_prints(tmp_path: Path) -> None:
    # No pytest on PATH, as in a fresh virtualenv that is not activated: the next step must still work.
    env = {k: v for k, v in clean_env(PATH="/usr/bin:/bin").items() if k != "CI"}
    proc = run_cli(["init"], cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        *(f"wrote: {p}" for p in WROTE),
        PIN,
        f"next: {shlex.quote(sys.executable)} -m pytest tests/test_attest_hello.py",
    ]
    step = shlex.split(proc.stdout.splitlines()[-1].removeprefix("next: "))
    done = subprocess.run(
        [*step, "-q", "-p", "no:randomly", "-p", "no:cacheprovider"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "attest replay: 1 replayed · 0 live model calls · $0.00" in done.stdout.splitlines()


def test_without_pytest_the_next_step_installs_it_into_the_same_interpreter(monkeypatch) -> None:
    monkeypatch.setattr(starter.importlib.util, "find_spec", lambda name: None)
    python = "/home/me/venv/bin/python"
    assert starter.next_step(python) == (
        f"{python} -m pip install pytest && {python} -m pytest tests/test_attest_hello.py"
    )


class Installed:
    """A distribution pip installed from the project's git repository at a tag."""

    def read_text(self, name: str) -> str | None:
        vcs = {"vcs": "git", "commit_id": COMMIT, "requested_revision": f"v{__version__}"}
        return json.dumps({"url": "https://github.com/attest-toolkit/attest-toolkit", "vcs_info": vcs})


COMMIT = "0123456789abcdef0123456789abcdef01234567"


def test_installed_from_git_the_workflows_pin_the_commit_and_name_each_other(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(starter.metadata, "distribution", lambda name: Installed())
    written = starter.init(tmp_path)
    assert not any(line.startswith("pin:") for line in starter.report_lines(written))
    gate = (tmp_path / ".github" / "workflows" / "attest-pr-gate.yml").read_text()
    publish = (tmp_path / ".github" / "workflows" / "attest-publish.yml").read_text()
    assert f"uses: attest-toolkit/attest-toolkit@{COMMIT}" in gate
    assert f'"attest-toolkit @ git+https://github.com/attest-toolkit/attest-toolkit@{COMMIT}"' in publish
    for text in (gate, publish):
        header = "".join(line for line in text.splitlines(keepends=True) if line.startswith("#"))
        assert "attest-pr-gate.yml" in header and "attest-publish.yml" in header
        assert "workflows/publish.yml" not in header and ".github/workflows/attest.yml" not in header


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
    assert not any(line.startswith("pin:") for line in second.stdout.splitlines())  # nothing was written
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
