"""`attest capture --max-cost-usd X`: a refresh whose estimate is over the ceiling does not start, and a
capture stops going live once its live calls reached it. The provider is tests/upstream.py's scripted
server; the agent is tests/agents/calls.py with the official openai SDK."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from attest_toolkit.capture.spend import estimate
from attest_toolkit.fixtures import document as fx
from capture_helpers import capture_env, run_attest
from conftest import AGENTS, chat_request, chat_response, exchange, write_fixture
from upstream import FakeUpstream, Reply

# chat_response's usage: 12 prompt and 5 completion tokens of gpt-4o-mini, $0.0000048 a call.
ONE_CALL_USD = (12 * 0.15 + 5 * 0.6) / 1_000_000


def answer() -> Reply:
    return Reply(body=json.dumps(chat_response()).encode())


def agent_calls(tmp_path: Path, count: int) -> list[str]:
    calls = [{"body": chat_request(f"question {n}")} for n in range(count)]
    path = tmp_path / "calls.json"
    path.write_text(json.dumps(calls), encoding="utf-8")
    return [sys.executable, str(AGENTS / "calls.py"), str(path)]


def test_the_estimate_prices_each_recorded_call_from_its_usage(tmp_path: Path):
    path = write_fixture(tmp_path, "two", [exchange(chat_request("a"), chat_response())] * 2)
    found = estimate(fx.read_fixture(path))
    assert (found.calls, found.unpriced) == (2, 0)
    assert abs(found.usd - 2 * ONE_CALL_USD) < 1e-12


def test_a_refresh_over_the_ceiling_does_not_start(tmp_path: Path):
    fixtures = tmp_path / "fixtures"
    fixtures.mkdir()
    write_fixture(fixtures, "two", [exchange(chat_request("a"), chat_response())] * 2)
    with FakeUpstream([answer()]) as upstream:
        done = run_attest(
            "capture", "--refresh", "two", "--yes", "--fixtures-dir", "fixtures", "--max-cost-usd", "0.000005",
            env=capture_env(upstream.url), cwd=tmp_path,
        )  # fmt: skip
    assert done.returncode == 3
    [line] = done.stderr.strip().splitlines()
    assert "two.attest.json" in line and "estimated at $0.000010" in line and "nothing ran" in line
    assert upstream.requests == []


def test_a_refresh_with_an_unpriced_call_does_not_start_under_a_ceiling(tmp_path: Path):
    fixtures = tmp_path / "fixtures"
    fixtures.mkdir()
    write_fixture(fixtures, "odd", [exchange(chat_request("a", model="my-local-model"), chat_response())])
    done = run_attest(
        "capture", "--refresh", "odd", "--yes", "--fixtures-dir", "fixtures", "--max-cost-usd", "5",
        env=capture_env("http://127.0.0.1:9"), cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 3 and "1 of 1 recorded calls cannot be priced" in done.stderr


def test_a_capture_stops_going_live_once_the_ceiling_is_reached_and_writes_nothing(tmp_path: Path):
    with FakeUpstream([answer(), answer(), answer()]) as upstream:
        done = run_attest(
            "capture", "--name", "spend", "--fixtures-dir", "fixtures", "--max-cost-usd", "0.000004",
            "--", *agent_calls(tmp_path, 3),
            env=capture_env(upstream.url), cwd=tmp_path,
        )  # fmt: skip
    assert done.returncode == 1
    assert len(upstream.requests) == 1  # the second call was refused before it went out
    assert "reaching --max-cost-usd 4e-06; stopped" in done.stderr
    assert not (tmp_path / "fixtures" / "spend.attest.json").exists()


def test_under_the_ceiling_a_capture_records_as_usual(tmp_path: Path):
    with FakeUpstream([answer(), answer()]) as upstream:
        done = run_attest(
            "capture", "--name", "spend", "--fixtures-dir", "fixtures", "--max-cost-usd", "0.01",
            "--", *agent_calls(tmp_path, 2),
            env=capture_env(upstream.url), cwd=tmp_path,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert len(fx.model_interactions(fx.read_fixture(tmp_path / "fixtures" / "spend.attest.json"))) == 2


def test_a_bad_ceiling_is_one_line_and_exit_3(tmp_path: Path):
    done = run_attest(
        "capture",
        "--name",
        "x",
        "--max-cost-usd",
        "-1",
        "--",
        "true",
        env=capture_env("http://127.0.0.1:9"),
        cwd=tmp_path,
    )
    assert done.returncode == 3 and done.stderr.count("\n") == 1 and "--max-cost-usd" in done.stderr
