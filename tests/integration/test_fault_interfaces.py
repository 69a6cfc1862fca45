"""The ways to ask for faults: `attest replay --fault SPEC -- CMD` (with `--report` for any command),
`attest_replay("name", faults=[...])` and `pytest --attest-fault SPEC`; a fault is not a miss."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from attest_toolkit.pytest_plugin import lane
from conftest import chat_request, chat_response, exchange, run_cli, scrub, write_fixture

AGENT = """
import openai
client = openai.OpenAI(max_retries=2)
reply = client.chat.completions.with_raw_response.create(**{request!r})
print("retries", reply.retries_taken, reply.parse().choices[0].message.content)
"""


def command(tmp_path: Path, max_retries: int = 2) -> list[str]:
    script = tmp_path / "agent.py"
    script.write_text(
        AGENT.format(request=chat_request()).replace("max_retries=2", f"max_retries={max_retries}")
    )
    return [sys.executable, str(script)]


def test_the_cli_injects_a_429_the_agent_recovers_and_strict_replay_passes(
    tmp_path: Path, fixtures_dir: Path
) -> None:
    path = write_fixture(fixtures_dir, "chat", [exchange(chat_request(), chat_response("served"))])
    report = tmp_path / "report.json"
    done = run_cli(
        ["replay", "--mode", "strict", "--fixture", str(path), "--fault", "status=429,retry-after=0",
         "--report", str(report), "--", *command(tmp_path)]
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "retries 1 served" in done.stdout
    assert "attest replay: 1 replayed · 0 live model calls · $0.00 · 1 fault injected" in done.stdout
    written = json.loads(report.read_text())
    (row,) = written["tests"]
    assert row["outcome"] == "passed" and row["replay"]["faults"] == 1
    assert row["replay"]["fault_list"] == [{"call": 1, "fault": "status=429,retry-after=0", "kind": "status"}]
    assert written["summary"]["replay"]["faults"] == 1


def test_an_agent_that_does_not_recover_fails_as_the_command_not_as_a_miss(
    tmp_path: Path, fixtures_dir: Path
) -> None:
    path = write_fixture(fixtures_dir, "chat", [exchange(chat_request(), chat_response("served"))])
    report = tmp_path / "report.json"
    done = run_cli(
        ["replay", "--mode", "strict", "--fixture", str(path), "--fault", "every:status=503,retry-after=0",
         "--report", str(report), "--", *command(tmp_path, max_retries=1)]
    )  # fmt: skip
    assert done.returncode == 1, done.stderr  # the command failed; nothing diverged
    assert (
        "0 replayed · 0 live model calls · $0.00 · 1 failed · 1 recording unused · 2 faults injected"
        in done.stdout
    )
    (row,) = json.loads(report.read_text())["tests"]
    assert row["outcome"] == "failed" and row["replay"]["misses"] == 0 and row["replay"]["faults"] == 2


def test_a_bad_spec_is_one_line_and_exit_3_before_the_command_starts(
    tmp_path: Path, fixtures_dir: Path
) -> None:
    path = write_fixture(fixtures_dir, "chat", [exchange(chat_request(), chat_response("served"))])
    marker = tmp_path / "started"
    done = run_cli(
        ["replay", "--fixture", str(path), "--fault", "call=2:status=418", "--",
         sys.executable, "-c", f"open({str(marker)!r}, 'w')"]
    )  # fmt: skip
    assert done.returncode == 3
    assert done.stderr == (
        "attest: --fault 'call=2:status=418': status must be one of 429, 500, 502, 503, 504, 529, not 418\n"
    )
    assert not marker.exists()


PYTEST_AGENT = """
import httpx
import openai
import pytest

def test_recovers(attest_replay):
    with attest_replay("hello", faults=["status=529,retry-after=0"]):
        reply = openai.OpenAI(max_retries=1).chat.completions.with_raw_response.create(**{request!r})
    assert reply.retries_taken == 1 and reply.parse().choices[0].message.content == "Hello!"

def test_disconnect(attest_replay):
    with attest_replay("hello", faults=["disconnect"]):
        with pytest.raises(openai.APIConnectionError):
            openai.OpenAI(max_retries=0).chat.completions.create(**{request!r})
"""


def test_the_pytest_helper_injects_a_tests_faults_on_its_own_clients_call(pytester, monkeypatch) -> None:
    scrub(monkeypatch)
    monkeypatch.setenv(lane.OFF_VAR, "on")  # the test's own client would take the lane: faults still reach it
    write_fixture(
        pytester.path / "tests" / "attest" / "fixtures",
        "hello",
        [exchange(chat_request(), chat_response("Hello!"))],
    )
    pytester.makepyfile(test_agent=PYTEST_AGENT.format(request=chat_request()))
    result = pytester.runpytest_subprocess(
        "--attest-replay=strict", "-p", "no:randomly", "--attest-report=r.json"
    )
    result.assert_outcomes(passed=2)
    assert (
        "attest replay: 1 replayed · 0 live model calls · $0.00 · 1 recording unused · 2 faults injected"
        in result.outlines
    )
    report = json.loads((pytester.path / "r.json").read_text())
    assert [t["replay"]["fault_list"][0]["fault"] for t in report["tests"]] == [
        "status=529,retry-after=0",
        "disconnect",
    ]


def test_attest_fault_applies_to_every_replayed_test_and_a_bad_one_stops_the_run(
    pytester, monkeypatch
) -> None:
    scrub(monkeypatch)
    write_fixture(
        pytester.path / "tests" / "attest" / "fixtures",
        "hello",
        [exchange(chat_request(), chat_response("Hello!"))],
    )
    pytester.makepyfile(
        test_agent=f"""
import openai

def test_hello(attest_replay):
    with attest_replay("hello"):
        reply = openai.OpenAI(max_retries=1).chat.completions.with_raw_response.create(**{chat_request()!r})
    assert reply.retries_taken == 1
"""
    )
    result = pytester.runpytest_subprocess(
        "--attest-replay=strict", "-p", "no:randomly", "--attest-fault", "status=500,retry-after=0"
    )
    result.assert_outcomes(passed=1)
    assert "attest replay: 1 replayed · 0 live model calls · $0.00 · 1 fault injected" in result.outlines
    bad = pytester.runpytest_subprocess("--attest-replay=strict", "--attest-fault", "every:explode")
    assert bad.ret == 4  # pytest's usage error
    assert "--fault 'every:explode': the kind must be" in bad.stderr.str()
