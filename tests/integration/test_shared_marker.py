"""Tests that read other projects' cassettes from ../shared skip with one reason where it is absent, and
fail instead when ATTEST_REQUIRE_SHARED=1 (CI), so no such test can silently stop running there."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from conftest import REPO, clean_env

# A plain test and a test parametrized over the cassettes (an empty parameter set without them).
SELECTED = [
    "tests/unit/test_normalize_sse.py::test_the_real_cassettes_have_streamed_bodies",
    "tests/unit/test_normalize_sse.py::test_split_sse_round_trips_every_recorded_stream",
]


def pytest_without_shared(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    absent = tmp_path / "shared" / "real-cassettes"
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", "-p", "no:xdist", *SELECTED],
        cwd=REPO,
        env=clean_env(ATTEST_REAL_CASSETTES=str(absent), **env),
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_without_shared_they_skip_with_one_reason(tmp_path: Path) -> None:
    done = pytest_without_shared(tmp_path)
    assert done.returncode == 0, done.stdout
    reasons = [line for line in done.stdout.splitlines() if line.startswith("SKIPPED")]
    expected = (
        f"needs other projects' real cassettes from ../shared, not found at {tmp_path}/shared/real-cassettes"
    )
    assert len(reasons) == 1 and reasons[0].startswith("SKIPPED [2]") and reasons[0].endswith(expected)
    assert "2 skipped" in done.stdout


def test_with_attest_require_shared_they_fail_instead(tmp_path: Path) -> None:
    done = pytest_without_shared(tmp_path, ATTEST_REQUIRE_SHARED="1")
    assert done.returncode == 1, done.stdout
    assert "2 errors" in done.stdout and "ATTEST_REQUIRE_SHARED=1" in done.stdout


def test_ci_requires_them() -> None:
    assert "export ATTEST_REQUIRE_SHARED=1" in (REPO / ".ci" / "run").read_text(encoding="utf-8")
