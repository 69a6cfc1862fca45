"""`attest capture --max-cost-usd X`: a refresh whose estimate is over the ceiling does not start, and a
capture lets no call go live once the calls out may have reached it. The provider is tests/upstream.py's
scripted server; the agent is tests/agents/calls.py with the official openai SDK."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from attest_toolkit.capture.spend import call_estimate, estimate
from attest_toolkit.fixtures import document as fx
from capture_helpers import GatedUpstream, attest_argv, capture_env, run_attest
from conftest import AGENTS, chat_request, chat_response, exchange, write_fixture
from scripted import chat_text_stream
from upstream import FakeUpstream, Reply

# chat_response's usage: 12 prompt and 5 completion tokens of gpt-4o-mini, $0.0000048 a call.
ONE_CALL_USD = (12 * 0.15 + 5 * 0.6) / 1_000_000
# A call of $0.60: gpt-5 answers 60,000 tokens at $10 a million (its 20 prompt tokens add $0.000025);
# the request caps its answer there, so in flight it counts at about that too.
DEAR = {"prompt_tokens": 20, "completion_tokens": 60_000, "total_tokens": 60_020}
DEAR_USD = (20 * 1.25 + 60_000 * 10.0) / 1_000_000


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


def test_a_call_counts_at_its_request_and_output_cap_or_else_its_models_ceiling():
    raw = b"x" * 1000  # a prompt of 1,000 bytes is at most 1,000 tokens

    def usd(model: str, body: dict) -> float | None:
        return call_estimate(model, body, raw)

    gpt_4o = (1000 * 2.5 + 100 * 10.0) / 1_000_000  # $2.50 and $10 a million
    assert usd("gpt-4o", {"max_tokens": 100}) == gpt_4o
    assert usd("gpt-4o", {"max_completion_tokens": 100}) == gpt_4o
    assert usd("gpt-4o", {"max_output_tokens": 100}) == gpt_4o  # the Responses API
    assert usd("gpt-4o", {"max_tokens": 10, "max_completion_tokens": 100}) == gpt_4o  # the larger cap
    assert (
        usd("gpt-4o-2024-08-06", {}) == (1000 * 2.5 + 16_384 * 10.0) / 1_000_000
    )  # gpt-4o answers 16,384 at most
    assert (
        usd("gemini-2.5-flash", {"generationConfig": {"maxOutputTokens": 100}})
        == (1000 * 0.3 + 100 * 2.5) / 1_000_000
    )
    assert usd("nova-pro", {}) == (1000 * 0.8 + 128_000 * 3.2) / 1_000_000  # no max_output: the default
    assert usd("my-local-model", {"max_tokens": 100}) is None


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


# --- calls in flight: counted at the most they can cost until their answers price them -------------


def dear_call(n: int, **params: object) -> dict:
    """An item of calls.py: a gpt-5 chat call capped at 60,000 output tokens."""
    return {"body": chat_request(f"question {n}", model="gpt-5", max_completion_tokens=60_000, **params)}


def dear_stream() -> Reply:
    return chat_text_stream("Hi.", usage=DEAR)


def held_streams(count: int) -> GatedUpstream:
    """Streams of $0.60 whose end (after `data: [DONE]`, which the openai SDK returns at) waits for the
    test: until then no call is priced from its answer, so each decision is taken with calls in flight."""
    return GatedUpstream([dear_stream() for _ in range(count)], first_events=len(dear_stream().events or []))


def capture_holding(
    tmp_path: Path, upstream: GatedUpstream, calls: list[dict], ceiling: str, *agent_args: str
) -> tuple[subprocess.CompletedProcess[str], list[dict]]:
    """`attest capture --max-cost-usd CEILING -- calls.py` with the upstream holding its answers' ends
    until the agent printed one line for each call (it has every answer or error it will get)."""
    path = tmp_path / "calls.json"
    path.write_text(json.dumps(calls), encoding="utf-8")
    argv = attest_argv(
        "capture", "--name", "spend", "--fixtures-dir", "fixtures", "--max-cost-usd", ceiling,
        "--", sys.executable, str(AGENTS / "calls.py"), str(path), *agent_args,
    )  # fmt: skip
    with subprocess.Popen(
        argv, env=capture_env(upstream.url), cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        encoding="utf-8",
    ) as run:  # fmt: skip
        assert run.stdout is not None
        lines = [run.stdout.readline() for _ in calls]
        upstream.gate.set()
        rest, err = run.communicate(timeout=120)
    outcomes = [json.loads(line) for line in [*lines, *rest.splitlines()] if line.strip()]
    return subprocess.CompletedProcess(argv, run.returncode, "".join(lines) + rest, err), outcomes


def refused(outcomes: list[dict]) -> list[str]:
    return [o["message"] for o in outcomes if "error" in o]


def test_eight_calls_at_once_spend_no_more_than_one_at_a_time_would(tmp_path: Path):
    with held_streams(8) as upstream:
        done, outcomes = capture_holding(
            tmp_path, upstream, [dear_call(n, stream=True) for n in range(8)], "1.00", "--at-once"
        )
    # One at a time, the second call leaves with $0.60 spent and the third finds $1.20: two calls.
    assert len(upstream.requests) == 2
    errors = refused(outcomes)
    assert len(errors) == 6
    assert all("Error code: 402" in e and "--max-cost-usd 1;" in e for e in errors), errors
    assert done.returncode == 1
    assert "nothing written" in done.stderr
    assert not (tmp_path / "fixtures" / "spend.attest.json").exists()


def test_one_call_at_a_time_a_call_counts_from_when_it_leaves_not_when_its_answer_ends(tmp_path: Path):
    with held_streams(3) as upstream:
        done, outcomes = capture_holding(
            tmp_path, upstream, [dear_call(n, stream=True) for n in range(3)], "1.00"
        )
    assert len(upstream.requests) == 2
    [error] = refused(outcomes)
    assert "Error code: 402" in error and "reaching --max-cost-usd 1; stopped" in error
    assert done.returncode == 1 and not (tmp_path / "fixtures" / "spend.attest.json").exists()


def test_a_call_whose_client_hung_up_after_reading_the_answer_is_priced(tmp_path: Path):
    answer = json.dumps({**chat_response(model="gpt-5"), "usage": DEAR}).encode()
    # The JSON arrives whole; the body's end waits until the agent has closed the connection.
    with GatedUpstream([Reply(events=[answer])], first_events=1) as upstream:
        done, outcomes = capture_holding(tmp_path, upstream, [{**dear_call(0), "hang_up": True}], "5")
    assert len(upstream.requests) == 1 and "ok" in outcomes[0]
    assert f"live calls: 1 live model call · ${DEAR_USD:.6f} under --max-cost-usd 5," in done.stderr
