"""A hand-edited fixture: every replay refuses it (CLI, attest-engine, the --serve protocol the Vitest
helper speaks, the pytest helper) until `attest fixture seal` accepts the edit."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import (
    agent_cmd,
    calls_file,
    chat_request,
    chat_response,
    clean_env,
    exchange,
    run_cli,
    scrub,
    write_fixture,
)

SUMMARY_OK = "attest replay: 1 replayed · 0 live model calls · $0.00"
MISMATCH = "digest does not match the content (changed since it was written)"


def edit_request(path: Path, content: str, answer: str) -> None:
    """What an attacker (or a hurried maintainer) does: change the recorded prompt and reply in place,
    leaving the stored hashes and the digest as they were."""
    doc = json.loads(path.read_text())
    item = doc["channels"]["model"][0]
    item["request"]["json"]["messages"][-1]["content"] = content
    item["response"]["body"]["json"]["choices"][0]["message"]["content"] = answer
    path.write_text(json.dumps(doc, indent=2))


@pytest.fixture
def edited(fixtures_dir: Path) -> Path:
    path = write_fixture(fixtures_dir, "t", [exchange(chat_request("Say hello"), chat_response("Hello!"))])
    edit_request(path, "Say goodbye", "Goodbye!")
    return path


def replay_args(fixtures_dir: Path, calls: Path) -> list[str]:
    args = ["replay", "--name", "t", "--fixtures-dir", str(fixtures_dir), "--mode", "strict", "--"]
    return [*args, *agent_cmd(calls)]


@pytest.mark.parametrize("program", ["attest", "attest-engine"])
def test_replay_refuses_a_hand_edited_fixture_on_one_line(tmp_path, fixtures_dir, edited, program):
    # The old prompt still matches the stale stored hashes: without the digest check it is served.
    calls = calls_file(tmp_path, [{"body": chat_request("Say hello")}])
    proc = run_cli(replay_args(fixtures_dir, calls), program=program, cwd=tmp_path)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert f"{edited}: {MISMATCH}" in proc.stderr and "attest fixture seal t" in proc.stderr
    assert "Traceback" not in proc.stderr and "Hello!" not in proc.stdout


def test_the_serve_protocol_refuses_a_hand_edited_fixture(fixtures_dir, edited):
    code = "import sys; from attest_toolkit.cli.engine import main; sys.argv[0]='attest-engine'; main()"
    args = ["replay", "--serve", "--fixture", str(edited), "--mode", "strict"]
    proc = subprocess.run(
        [sys.executable, "-c", code, *args],
        input="stop\n",
        capture_output=True,
        text=True,
        env=clean_env(),
        timeout=60,
    )
    assert proc.returncode == 3 and "env" not in proc.stdout
    assert proc.stderr.strip().splitlines() == [
        f"attest-engine: {edited}: {MISMATCH}; if the edit is deliberate, seal it: attest fixture seal t"
    ]


def test_the_pytest_helper_fails_the_test_on_one_line(pytester, monkeypatch):
    scrub(monkeypatch)
    fixtures = pytester.path / "tests" / "attest" / "fixtures"
    path = write_fixture(fixtures, "t", [exchange(chat_request("Say hello"), chat_response("Hello!"))])
    edit_request(path, "Say goodbye", "Goodbye!")
    pytester.makepyfile(
        test_edited="""
import openai

def test_edited(attest_replay):
    with attest_replay("t"):
        client = openai.OpenAI(max_retries=0)
        client.chat.completions.create(model="gpt-4o-mini", messages=[
            {"role": "system", "content": "You are terse."}, {"role": "user", "content": "Say hello"}])
"""
    )
    result = pytester.runpytest_subprocess("--attest-replay=strict")
    result.assert_outcomes(failed=1)
    header = next(i for i, line in enumerate(result.outlines) if " test_edited " in line)
    assert result.outlines[header + 1].startswith(f"{path}: {MISMATCH}")
    assert "Traceback" not in result.stdout.str()


def test_seal_accepts_the_edit_and_says_what_changed(tmp_path, fixtures_dir, edited):
    before = json.loads(edited.read_text())["digest"]
    proc = run_cli(["fixture", "seal", "t", "--fixtures-dir", str(fixtures_dir)])
    assert proc.returncode == 0, proc.stderr
    after = json.loads(edited.read_text())["digest"]
    assert proc.stdout.splitlines() == [
        "  interaction 1: hashes recomputed (messages)",
        f"  digest {before} -> {after}",
        f"attest fixture seal: {edited}: sealed",
    ]
    assert run_cli(["fixture", "verify", str(edited)]).returncode == 0
    # The sealed edit is what replay serves now; the old prompt no longer matches.
    calls = calls_file(tmp_path, [{"body": chat_request("Say goodbye")}])
    proc = run_cli(replay_args(fixtures_dir, calls), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "Goodbye!" in proc.stdout and proc.stdout.splitlines()[-1] == SUMMARY_OK
    again = run_cli(["fixture", "seal", str(edited)])
    assert again.stdout.splitlines() == [f"attest fixture seal: {edited}: already sealed, nothing changed"]


def test_seal_refuses_an_edit_that_adds_a_credential(fixtures_dir, edited):
    secret = "sk-proj-" + "S3aL" * 10
    edit_request(edited, "Say goodbye", secret)
    proc = run_cli(["fixture", "seal", "t", "--fixtures-dir", str(fixtures_dir)])
    assert proc.returncode == 3 and "credential found at" in proc.stderr
    assert secret not in proc.stdout + proc.stderr
