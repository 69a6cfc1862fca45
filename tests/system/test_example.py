"""The README's promise: the bundled example replays with no key and no network, and can be re-recorded."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

from conftest import REPO, clean_env, run_cli

EXAMPLE = REPO / "examples" / "fixtures" / "example.attest.json"


def test_the_example_replays_offline_with_no_key():
    args = [
        "replay",
        "--name",
        "example",
        "--fixtures-dir",
        str(EXAMPLE.parent),
        "--",
        sys.executable,
        str(REPO / "examples" / "agent.py"),
    ]
    proc = run_cli(args, env=clean_env(CI="true"))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "Yes: order O-1042 was refunded twice, $42.00 each time.",
        "attest replay: 2 replayed · 0 live model calls · $0.00 · 3 tool calls replayed · 0 live tool calls",
    ]


def test_the_bundled_fixture_is_what_the_recording_script_records(tmp_path):
    work = tmp_path / "repo"
    shutil.copytree(REPO / "examples", work / "examples", ignore=shutil.ignore_patterns("fixtures"))
    shutil.copytree(REPO / "tests", work / "tests", ignore=shutil.ignore_patterns("__pycache__"))
    bindir = os.path.dirname(sys.executable)
    env = clean_env(PATH=f"{bindir}{os.pathsep}{os.environ['PATH']}")
    proc = subprocess.run(
        [sys.executable, "examples/record_example.py"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    recorded = json.loads((work / "examples" / "fixtures" / "example.attest.json").read_text())
    bundled = json.loads(EXAMPLE.read_text())
    # The bundled fixture was written before a fixture kept every response header: it has the
    # content type alone, and still replays (above); a recording now keeps the rest too.
    for item in recorded["channels"]["model"]:
        headers = item["response"]["headers"]
        assert {"date", "server"} <= set(headers)
        item["response"]["headers"] = {"content-type": headers["content-type"]}
    assert recorded["channels"] == bundled["channels"]
    assert recorded["source"]["command"] == bundled["source"]["command"] == ["python", "examples/agent.py"]
