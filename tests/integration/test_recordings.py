"""The project's own recordings (`tests/recordings/`): they replay to the official SDKs with no key and
no provider, and re-recording them with `python tests/record.py` reproduces them."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest
import scripted
from capture_helpers import run_attest
from conftest import REPO, clean_env
from record import AGENT, RECORDED, RECORDINGS, record

FLOW_OUTPUT = [
    'chat tool multiply({"a":1231,"b":2331}) = 2869461',
    f"chat answer: {scripted.ANSWER}",
    'responses tool multiply({"a":1231,"b":2331}) = 2869461',
    f"responses answer: {scripted.ANSWER}",
    "messages tool pelican_name_generator = Charles",
    "messages tool pelican_name_generator = Sammy",
    f"messages answer: {scripted.PELICAN_ANSWER}",
    "otlp export: 200",
]


def python_first_on_path() -> str:
    return os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])


def test_every_recording_is_made_by_the_record_script() -> None:
    assert sorted(p.name for p in RECORDINGS.glob("*.attest.json")) == sorted(
        f"{name}.attest.json" for name in RECORDED
    )


def test_the_flow_recording_replays_strict_with_no_key_and_no_provider() -> None:
    replayed = run_attest(
        "replay", "--mode", "strict", "--name", "flow", "--fixtures-dir", str(RECORDINGS), "--",
        "python", AGENT, "flow",
        env=clean_env(PATH=python_first_on_path(), PYTHONIOENCODING="utf-8"), cwd=REPO,
    )  # fmt: skip
    assert replayed.returncode == 0, replayed.stderr
    assert replayed.stdout.splitlines() == [
        *FLOW_OUTPUT,
        "attest replay: 6 replayed · 0 live model calls · $0.00",
    ]


@pytest.mark.parametrize("name", sorted(RECORDED))
def test_re_recording_leaves_the_committed_recording_byte_for_byte(name: str, tmp_path: Path) -> None:
    copy = tmp_path / "recordings"
    shutil.copytree(RECORDINGS, copy)
    done = record(name, copy)
    assert done.returncode == 0, done.stderr
    path = f"{name}.attest.json"
    assert done.stderr.splitlines()[-1].endswith(f"{copy / path} unchanged")
    assert (copy / path).read_bytes() == (RECORDINGS / path).read_bytes(), "re-record: python tests/record.py"
