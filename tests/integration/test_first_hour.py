"""Small things a new user meets in their first hour: `attest replay` reads ATTEST_REPLAY, the default
policy file is shown as typed, counts read as English, costs are shown one way."""

from __future__ import annotations

import json
from pathlib import Path

from attest_toolkit.capture.run import live_cost_line
from attest_toolkit.capture.spend import LiveCost
from conftest import (
    agent_cmd,
    calls_file,
    chat_request,
    chat_response,
    clean_env,
    exchange,
    run_cli,
    write_fixture,
)
from report_factory import make_report
from upstream import FakeUpstream, Reply

KEY = "sk-test-" + "k" * 40


def replay_with_env(tmp_path: Path, **env: str):
    fixtures = tmp_path / "fixtures"
    write_fixture(fixtures, "t", [exchange(chat_request(), chat_response())])
    calls = calls_file(tmp_path, [{"body": chat_request("changed")}])
    argv = ["replay", "--name", "t", "--fixtures-dir", str(fixtures), "--", *agent_cmd(calls)]
    return run_cli(argv, env=clean_env(**env), cwd=tmp_path)


def test_attest_replay_refuses_a_misspelt_attest_replay_variable(tmp_path):
    proc = replay_with_env(tmp_path, ATTEST_REPLAY="stirct")
    assert proc.returncode == 3
    assert proc.stderr.strip() == "attest: ATTEST_REPLAY must be strict, auto or off, not 'stirct'"


def test_attest_replay_follows_the_attest_replay_variable_over_the_ci_default(tmp_path):
    with FakeUpstream([Reply(body=json.dumps(chat_response("live")).encode())]) as upstream:
        proc = replay_with_env(
            tmp_path, CI="1", ATTEST_REPLAY="auto", OPENAI_API_KEY=KEY, ATTEST_OPENAI_UPSTREAM=upstream.url
        )
    assert len(upstream.requests) == 1  # auto, as asked, though CI alone would mean strict
    assert proc.returncode == 0, proc.stderr


def test_the_default_policy_file_is_named_as_the_user_would_type_it(tmp_path):
    (tmp_path / ".attest").mkdir()
    (tmp_path / ".attest" / "policy.yml").write_text("max_live_calls: 0\n", encoding="utf-8")
    (tmp_path / "report.json").write_text(json.dumps(make_report()), encoding="utf-8")
    proc = run_cli(["policy", "evaluate", "--report", "report.json"], cwd=tmp_path)
    assert ".attest/policy.yml" in proc.stdout
    assert str(tmp_path) not in proc.stdout


def test_a_capture_cost_is_shown_as_the_run_shows_a_live_call():
    line = live_cost_line(LiveCost(calls=1, usd=0.0012, unpriced=0))
    assert line.startswith("1 live model call · $0.0012, priced from the built-in table of ")
    assert live_cost_line(LiveCost(calls=1, usd=0.0, unpriced=1)).startswith(
        "1 live model call · $0.00 (+1 unpriced)"
    )


def test_the_version_names_the_date_of_the_price_table():
    from attest_toolkit import __version__
    from attest_toolkit.pricing.cost import table

    proc = run_cli(["--version"])
    assert proc.stdout.strip() == f"attest-toolkit {__version__} (model prices of {table()['date']})"
