"""Misses, live calls and calls around the replay are said where the user looks: the end of the run.

Real pytest sessions (pytester, in a subprocess) with the official OpenAI SDK. A call "to the
provider" reaches a local fake: the test module resolves api.openai.com to loopback, so the SDK's
request names the provider host, as a module-level client's does, and nothing leaves the machine.
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys

import pytest
from conftest import chat_request, chat_response, exchange, write_fixture
from test_pytest_plugin import suite as plugin_suite
from upstream import FakeUpstream, Reply

KEY = "sk-test-" + "p" * 40
CLEAN_LINE = "attest replay: 1 replayed · 0 live model calls · $0.00"

AGENT = """
import openai

def ask(content, client=None):
    client = client or openai.OpenAI(max_retries=0)  # built after the replay starts
    reply = client.chat.completions.create(model="gpt-4o-mini", messages=[
        {"role": "system", "content": "You are terse."}, {"role": "user", "content": content}])
    return reply.choices[0].message.content
"""

# A client built when the module is imported, before any replay: it keeps the provider's URL. The
# provider's name resolves to the local fake (its port in FAKE_PORT), so nothing leaves the machine.
MODULE_LEVEL = """
import os
import socket

import openai
import agent

_resolve = socket.getaddrinfo
def _to_fake(host, port, *args, **kwargs):
    return _resolve("127.0.0.1" if host == "api.openai.com" else host, port, *args, **kwargs)
socket.getaddrinfo = _to_fake

CLIENT = openai.OpenAI(base_url=f"http://api.openai.com:{os.environ['FAKE_PORT']}/v1", max_retries=0)

def test_module_level_client(attest_replay):
    with attest_replay("hello"):
        assert agent.ask("Say hello", CLIENT) == "live"
"""

MISS_TEST = """
import agent

def test_auto(attest_replay):
    with attest_replay("hello"):
        assert agent.ask("Say goodbye")
"""


def priced_reply() -> Reply:
    live = chat_response("live", model="gpt-4o-mini")
    live["usage"] = {"prompt_tokens": 1_000_000, "completion_tokens": 1_000_000, "total_tokens": 2_000_000}
    return Reply(body=json.dumps(live).encode(), headers={"content-type": "application/json"})


@pytest.fixture
def suite(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """The pytest helper's suite (one fixture, `hello`), with a key set and an agent that can be
    handed a client."""
    pytester = plugin_suite.__wrapped__(pytester, monkeypatch)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    pytester.makepyfile(agent=AGENT)
    return pytester


def test_a_clean_run_keeps_the_exact_summary_line(suite):
    suite.makepyfile(
        test_agent="import agent\n\ndef test_hello(attest_replay):\n"
        "    with attest_replay('hello'):\n        assert agent.ask('Say hello') == 'Hello!'\n"
    )
    result = suite.runpytest_subprocess("--attest-replay=strict")
    result.assert_outcomes(passed=1)
    assert CLEAN_LINE in result.outlines


def test_a_strict_miss_shows_in_the_summary_line(suite):
    suite.makepyfile(test_agent=MISS_TEST)
    result = suite.runpytest_subprocess("--attest-replay=strict")
    result.assert_outcomes(failed=1)
    assert "attest replay: 0 replayed · 0 live model calls · $0.00 · 1 missed · 1 failed" in result.outlines


def test_a_not_evaluated_test_says_why_without_dash_rs(suite, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY")
    suite.makepyfile(test_agent=MISS_TEST)
    result = suite.runpytest_subprocess("--attest-replay=auto")
    result.assert_outcomes(skipped=1)
    reason = [
        line for line in result.outlines if line.startswith("not evaluated: test_agent.py::test_auto: ")
    ]
    assert len(reason) == 1 and "replay miss: messages changed" in reason[0]
    assert "attest replay: 0 replayed · 0 live model calls · $0.00 · 1 missed" in result.outlines
    # With -rs pytest prints the reason itself; it is not said twice.
    shown = suite.runpytest_subprocess("--attest-replay=auto", "-rs")
    assert not any(line.startswith("not evaluated: ") for line in shown.outlines)


def test_each_auto_live_call_is_listed_with_its_model_and_cost(suite, monkeypatch):
    suite.makepyfile(test_agent=MISS_TEST)
    with FakeUpstream([priced_reply()]) as upstream:
        monkeypatch.setenv("ATTEST_OPENAI_UPSTREAM", upstream.url)
        result = suite.runpytest_subprocess("--attest-replay=auto")
    result.assert_outcomes(passed=1)
    # gpt-4o-mini: $0.15 per 1M input + $0.60 per 1M output
    assert "went live: test_agent.py::test_auto → gpt-4o-mini, $0.75" in result.outlines
    assert "attest replay: 0 replayed · 1 live model calls · $0.75 · 1 recording unused" in result.outlines


def test_a_module_level_client_is_blocked_in_strict_mode_and_fails_naming_the_host(suite, monkeypatch):
    suite.makepyfile(test_bypass=MODULE_LEVEL)
    with FakeUpstream([priced_reply()]) as upstream:
        monkeypatch.setenv("FAKE_PORT", upstream.url.rsplit(":", 1)[1])
        result = suite.runpytest_subprocess("--attest-replay=strict")
    result.assert_outcomes(failed=1)
    assert upstream.requests == []  # blocked before anything was sent
    line = (
        "attest replay: a call to api.openai.com went around the replay; the likely cause is a client built "
        "before attest_replay (a module-level OpenAI() keeps the provider's URL): build it inside the block"
    )
    assert line in result.outlines
    assert "attest replay: 0 replayed · 0 live model calls · $0.00 · 1 missed · 1 failed" in result.outlines


def test_a_module_level_client_in_auto_mode_is_counted_live_and_priced(suite, monkeypatch):
    suite.makepyfile(test_bypass=MODULE_LEVEL)
    with FakeUpstream([priced_reply()]) as upstream:
        monkeypatch.setenv("FAKE_PORT", upstream.url.rsplit(":", 1)[1])
        result = suite.runpytest_subprocess("--attest-replay=auto", "--attest-report=report.json")
    result.assert_outcomes(passed=1)
    assert len(upstream.requests) == 1
    assert "went live: test_bypass.py::test_module_level_client → gpt-4o-mini, $0.75" in result.outlines
    assert any(
        line.startswith("attest replay: 0 replayed · 1 live model calls · $0.75") for line in result.outlines
    )
    replay = json.loads((suite.path / "report.json").read_text())["summary"]["replay"]
    assert replay["live"] == 1 and replay["live_cost_usd"] == 0.75


def test_the_vitest_reporter_gets_the_same_end_of_run_lines(tmp_path):
    """The Vitest reporter prints what `attest-engine report` prints: the same lines as pytest."""
    replay = {
        "fixtures": ["f.attest.json"],
        "mode": "auto",
        "replayed": 0,
        "live": 1,
        "misses": 0,
        "live_cost_usd": 0.0012,
        "unpriced": 0,
        "live_calls": [{"model": "gpt-4o", "cost_usd": 0.0012}],
    }
    missed = {
        "fixtures": ["f.attest.json"],
        "mode": "auto",
        "replayed": 0,
        "live": 0,
        "misses": 1,
        "miss": {"message": "replay miss: tools changed (hash 1234567→89abcde)", "component": "tools"},
    }
    rows = [
        {
            "id": "a.test.ts::goes live",
            "file": "a.test.ts",
            "line": 3,
            "outcome": "passed",
            "duration": 0.1,
            "message": None,
            "replay": replay,
        },
        {
            "id": "a.test.ts::misses",
            "file": "a.test.ts",
            "line": 9,
            "outcome": "not_evaluated",
            "reason": "replay_miss",
            "duration": 0.1,
            "message": "not_evaluated: replay_miss",
            "replay": missed,
        },
    ]
    engine = [sys.executable, "-m", "attest_toolkit.cli.engine"]
    done = subprocess.run(
        [*engine, "report", "--output", str(tmp_path / "r.json")],
        input=json.dumps({"runner": "vitest", "tests": rows}),
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "not evaluated: a.test.ts::misses: replay miss: tools changed (hash 1234567→89abcde)"
    assert lines[1] == "went live: a.test.ts::goes live → gpt-4o, $0.0012"
    assert lines[-1] == "attest replay: 0 replayed · 1 live model calls · $0.00 · 1 missed"


def test_the_engine_counts_what_another_runner_saw_go_around_a_session(tmp_path):
    """The Vitest helper's side of the control protocol: a refusal in the engine's words, and at a
    session's close the hosts it blocked and the answers of the calls it let out, counted and priced."""
    path = write_fixture(tmp_path, "t", [exchange(chat_request(), chat_response("served"))])
    code = "import sys; from attest_toolkit.cli.engine import main; sys.argv[0]='attest-engine'; main()"
    proc = subprocess.Popen(
        [sys.executable, "-c", code, "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )

    def ask(request: dict) -> dict:
        proc.stdin.write(json.dumps(request) + "\n")
        proc.stdin.flush()
        return json.loads(proc.stdout.readline())

    assert "ready" in json.loads(proc.stdout.readline())
    line = (
        "attest replay: a call to api.anthropic.com went around the replay; the likely cause is a client built "
        "before useReplay (a module-level new Anthropic() keeps the provider's URL): build it after useReplay"
    )
    refusal = ask({"refusal": {"host": "api.anthropic.com", "runner": "vitest"}})
    assert refusal["status"] == 400 and ["x-should-retry", "false"] in refusal["headers"]
    assert json.loads(refusal["body"])["error"]["message"] == line

    opened = ask({"open": {"fixtures": [str(path)], "mode": "auto"}})
    answer = base64.b64encode(priced_reply().body).decode()
    live = {
        "model": "gpt-4o-mini",
        "content_type": "application/json",
        "content_encoding": None,
        "body": answer,
    }
    bypass = {"runner": "vitest", "fixture": "t", "blocked": ["api.anthropic.com"], "live": [live]}
    assert (
        "not a control request"
        in ask({"close": opened["id"], "bypass": {**bypass, "runner": "jest"}})["error"]
    )
    summary = ask({"close": opened["id"], "bypass": bypass})["summary"]
    assert summary["miss_list"] == [
        {"message": line, "component": "bypass", "fixture": "t", "not_evaluated": False}
    ]
    assert summary["live_list"] == [{"model": "gpt-4o-mini", "cost_usd": 0.75}]
    assert (summary["misses"], summary["live"], summary["live_cost_usd"]) == (1, 1, 0.75)
    proc.stdin.close()
    assert proc.wait(timeout=30) == 0
