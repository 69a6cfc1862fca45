"""Recorders take only their own calls: while `attest capture`, `pytest --attest-record` or an auto-mode
replay runs, another local process that found the port, or a web page that reached loopback by DNS
rebinding, gets 403 and adds nothing to the fixture, and has nothing forwarded live."""

from __future__ import annotations

import json
import sys
import textwrap

from attest_toolkit.fixtures import document as fx
from capture_helpers import KEY, run_attest
from conftest import AGENTS, chat_response, clean_env, scrub
from test_fixture_trust import fixture_with_tools
from test_pytest_record import AGENT as AGENT_MODULE
from upstream import FakeUpstream, Reply

INTRUDER = str(AGENTS / "intruder.py")
CHAT = "/openai/v1/chat/completions"


def attempts(suffixes: list[str]) -> list[str]:
    return [
        f"{attempt} {suffix} 403"
        for suffix in suffixes
        for attempt in ("no-secret", "wrong-secret", "foreign-host")
    ]


# The command under capture: its own model call, then an intruder given only what a port scan finds
# (plus the right URL, for the rebinding attempt), in a process of its own with none of our variables.
AGENT = textwrap.dedent(
    """
    import os, subprocess, sys
    import openai
    reply = openai.OpenAI(max_retries=0).chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "Say hello"}]
    )
    print(reply.choices[0].message.content)
    base = os.environ["OPENAI_BASE_URL"].removesuffix("/openai/v1")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI", "ANTHROPIC", "ATTEST", "OTEL"))}
    subprocess.run([sys.executable, INTRUDER, base, *SUFFIXES], env=env, check=True)
    """
)


def agent(suffixes: list[str]) -> str:
    return f"INTRUDER = {INTRUDER!r}\nSUFFIXES = {suffixes!r}\n" + AGENT


def answer() -> Reply:
    return Reply(body=json.dumps(chat_response()).encode())


def test_capture_records_only_the_command_it_started(tmp_path):
    suffixes = [CHAT, "/stdio/weather", "/tool/orders/orders/1", "/otlp/v1/traces"]
    with FakeUpstream([answer() for _ in range(8)]) as upstream, FakeUpstream([]) as orders:
        env = clean_env(ATTEST_OPENAI_UPSTREAM=upstream.url, OPENAI_API_KEY=KEY, PYTHONIOENCODING="utf-8")
        done = run_attest(
            "capture", "--name", "hello", "--fixtures-dir", "fixtures", "--tool", f"ORDERS_API_URL={orders.url}",
            "--", sys.executable, "-c", agent(suffixes), env=env, cwd=tmp_path,
        )  # fmt: skip
        assert len(upstream.requests) == 1
        assert orders.requests == []
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["Hello!", *attempts(suffixes)]
    doc = fx.read_fixture(tmp_path / "fixtures" / "hello.attest.json")
    assert len(doc["channels"]["model"]) == 1
    assert doc["channels"]["tool"] == []
    assert "intruder" not in json.dumps(doc["channels"])


TESTS = f"""
import os, subprocess, sys
import agent

def test_hello(attest_replay):
    with attest_replay("hello"):
        assert agent.ask("Say hello") == "Hello!"
        base = os.environ["OPENAI_BASE_URL"].removesuffix("/openai/v1")
        env = {{k: v for k, v in os.environ.items() if not k.startswith(("OPENAI", "ANTHROPIC", "ATTEST", "OTEL"))}}
        done = subprocess.run([sys.executable, {INTRUDER!r}, base, {CHAT!r}], env=env, capture_output=True, text=True)
        print(done.stdout)
        assert done.stdout.splitlines() == {attempts([CHAT])!r}
"""


def test_the_pytest_recording_front_records_only_its_own_tests(pytester, monkeypatch):
    scrub(monkeypatch)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    pytester.makepyfile(agent=AGENT_MODULE, test_agent=TESTS)
    with FakeUpstream([answer() for _ in range(4)]) as upstream:
        monkeypatch.setenv("ATTEST_OPENAI_UPSTREAM", upstream.url)
        result = pytester.runpytest_subprocess("--attest-record=once", "-p", "no:randomly")
        assert len(upstream.requests) == 1
    result.assert_outcomes(passed=1)
    doc = fx.read_fixture(pytester.path / "tests" / "attest" / "fixtures" / "hello.attest.json")
    assert len(doc["channels"]["model"]) == 1


def test_an_auto_mode_replay_forwards_only_its_own_calls(tmp_path):
    """The engine's session URL carries its secret (the session id); a foreign Host is refused there
    too, so a rebinding page cannot have a tool call forwarded to the user's server."""
    suffixes = [CHAT, "/tool/orders/orders/1"]
    with FakeUpstream([answer()]) as users_orders, FakeUpstream([answer()]) as provider:
        path = fixture_with_tools(
            tmp_path / "fixtures",
            {"orders": {"transport": "http", "env": "ORDERS_API_URL", "upstream": users_orders.url}},
        )
        env = clean_env(
            OPENAI_API_KEY=KEY,
            ATTEST_OPENAI_UPSTREAM=provider.url,
            ORDERS_API_URL=users_orders.url,
            PYTHONIOENCODING="utf-8",
        )
        done = run_attest(
            "replay", "--fixture", str(path), "--mode", "auto", "--", sys.executable, "-c", agent(suffixes),
            env=env, cwd=tmp_path,
        )  # fmt: skip
        assert users_orders.requests == []
        assert len(provider.requests) == 1  # the run's own call, which missed and went live
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[1:-1] == attempts(suffixes)
