"""Rebasing fixtures (`pytest --attest-record=rebase`, `attest fixture rebase NAME -- CMD`): requests
that drifted are rewritten to what the code sends now, every response kept, no provider called; a
structural change is refused and the file left as it was. Real pytest runs with the official openai
and anthropic SDKs, fixtures recorded from a scripted provider on loopback."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest
from attest_toolkit.credentials.scan import REDACTED
from attest_toolkit.fixtures import document as fx
from conftest import chat_response, clean_env, message_response, run_cli, scrub
from upstream import FakeUpstream, Reply

KEY = "sk-test-" + "b" * 40
ANTHROPIC_KEY = "sk-ant-test-" + "e" * 40

OPENAI_AGENT = """
import os
import openai

client = openai.OpenAI(max_retries=0)
MAX_TOKENS = {max_tokens}
EXTRA = {extra!r}

def ask(content):
    reply = client.chat.completions.create(
        model="gpt-4o-mini",
        max_tokens=MAX_TOKENS,
        messages=[{{"role": "user", "content": content + EXTRA.format(**os.environ)}}],
    )
    return reply.choices[0].message.content
"""

OPENAI_TESTS = """
import agent

def test_hello(attest_replay):
    with attest_replay("hello"):
        assert agent.ask("Say hello") == "Hello!"
"""

# An agent loop: the model asks for a tool, the agent runs it and answers with its result.
ANTHROPIC_AGENT = """
import anthropic

client = anthropic.Anthropic(max_retries=0)
BLOCKS = {blocks!r}
USE_TOOL = {use_tool!r}
ANSWER_AS_TEXT = {answer_as_text!r}
TOOLS = [{{"name": "weather", "description": "Weather", "input_schema": {{"type": "object"}}}}]

def run():
    content = [{{"type": "text", "text": t}} for t in BLOCKS]
    messages = [{{"role": "user", "content": content}}]
    first = client.messages.create(model="claude-haiku-4-5", max_tokens=200, tools=TOOLS, messages=messages)
    if not USE_TOOL:
        return "no tool"
    call = next(b for b in first.content if b.type == "tool_use")
    result = {{"type": "tool_result", "tool_use_id": call.id, "content": "sunny"}}
    if ANSWER_AS_TEXT:  # the tool's output pasted as text: the tool call itself goes unanswered
        messages += [{{"role": "user", "content": [{{"type": "text", "text": "It is sunny there."}}]}}]
    else:
        messages += [
            {{"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]}},
            {{"role": "user", "content": [result]}},
        ]
    second = client.messages.create(model="claude-haiku-4-5", max_tokens=200, tools=TOOLS, messages=messages)
    return second.content[0].text
"""

ANTHROPIC_TESTS = """
import agent

def test_weather(attest_replay):
    with attest_replay("weather"):
        assert agent.run() in ("It is sunny.", "no tool")
"""


def tool_use_response() -> dict:
    return {
        "id": "msg_01AbCdEfGhIjKlMnOpQrStUv",
        "type": "message",
        "role": "assistant",
        "model": "claude-haiku-4-5",
        "content": [
            {"type": "tool_use", "id": "toolu_01A09q90qw90lq917835lq9", "name": "weather", "input": {}}
        ],
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": {"input_tokens": 20, "output_tokens": 10},
    }


def reply(body: dict) -> Reply:
    return Reply(body=json.dumps(body).encode())


def fixture_file(project: Path, name: str) -> Path:
    return project / "tests" / "attest" / "fixtures" / f"{name}.attest.json"


def responses(path: Path) -> list[dict]:
    return [item["response"] for item in fx.model_interactions(fx.read_fixture(path))]


def shown(path: Path) -> Path:
    """A fixture's path as a line names it: relative to where pytest ran (the suite's directory)."""
    return path.relative_to(path.parents[3])


def response_texts(path: Path) -> list[str]:
    """Each response as the file's text holds it (checked to be in the file)."""
    text = path.read_text(encoding="utf-8")
    blocks = [
        '"response": '
        + textwrap.indent(json.dumps(r, indent=2, sort_keys=True, ensure_ascii=False), " " * 8).lstrip()
        for r in responses(path)
    ]
    assert all(block in text for block in blocks)
    return blocks


def write_openai_agent(suite: pytest.Pytester, max_tokens: int, extra: str = "") -> None:
    suite.makepyfile(agent=OPENAI_AGENT.format(max_tokens=max_tokens, extra=extra))


def write_anthropic_agent(
    suite: pytest.Pytester, blocks: list[str], use_tool: bool = True, answer_as_text: bool = False
) -> None:
    suite.makepyfile(
        agent=ANTHROPIC_AGENT.format(blocks=blocks, use_tool=use_tool, answer_as_text=answer_as_text)
    )


@pytest.fixture
def openai_suite(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A project whose fixture was recorded with max_tokens=100, its key then gone."""
    scrub(monkeypatch)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    write_openai_agent(pytester, 100)
    pytester.makepyfile(test_agent=OPENAI_TESTS)
    with FakeUpstream([reply(chat_response("Hello!"))]) as upstream:
        monkeypatch.setenv("ATTEST_OPENAI_UPSTREAM", upstream.url)
        pytester.runpytest_subprocess("--attest-record=once").assert_outcomes(passed=1)
    monkeypatch.delenv("OPENAI_API_KEY")
    return pytester


@pytest.fixture
def anthropic_suite(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A project whose two-call tool loop was recorded, its key then gone."""
    scrub(monkeypatch)
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
    write_anthropic_agent(pytester, ["Weather in Paris?", "Be brief."])
    pytester.makepyfile(test_agent=ANTHROPIC_TESTS)
    replies = [reply(tool_use_response()), reply(message_response("It is sunny."))]
    with FakeUpstream(replies) as upstream:
        monkeypatch.setenv("ATTEST_ANTHROPIC_UPSTREAM", upstream.url)
        pytester.runpytest_subprocess("--attest-record=once").assert_outcomes(passed=1)
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    return pytester


def rebase(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, *args: str
) -> tuple[pytest.RunResult, int]:
    """`pytest --attest-record=rebase` with the providers pointed at a scripted one that answers
    nothing: the run and how many calls reached it."""
    with FakeUpstream([]) as upstream:
        monkeypatch.setenv("ATTEST_OPENAI_UPSTREAM", upstream.url)
        monkeypatch.setenv("ATTEST_ANTHROPIC_UPSTREAM", upstream.url)
        result = suite.runpytest_subprocess("--attest-record=rebase", *args)
        return result, len(upstream.requests)


def strict(suite: pytest.Pytester) -> pytest.RunResult:
    return suite.runpytest_subprocess("--attest-record=none", "--attest-replay=strict")


def test_a_raised_max_tokens_is_rebased_without_a_key_and_then_replays_in_strict(openai_suite, monkeypatch):
    path = fixture_file(openai_suite.path, "hello")
    before = response_texts(path)
    write_openai_agent(openai_suite, 4096)
    missed = strict(openai_suite)
    missed.assert_outcomes(failed=1)
    assert "params changed: max_tokens" in missed.stdout.str()

    result, upstream_calls = rebase(openai_suite, monkeypatch)
    result.assert_outcomes(passed=1)
    assert upstream_calls == 0
    lines = result.outlines
    assert (
        f"attest rebase: hello: 1 of 1 call drifted; rewrote {shown(path)} (requests only, every response kept)"
        in lines
    )
    assert "  call  component  changed" in lines
    assert "  1     params     max_tokens" in lines
    assert "4096" not in result.stdout.str()  # paths, never values
    (item,) = fx.model_interactions(fx.read_fixture(path))
    assert item["request"]["json"]["max_tokens"] == 4096
    assert response_texts(path) == before  # byte for byte
    assert oct(path.stat().st_mode & 0o777) == "0o600"

    verified = run_cli(["fixture", "verify", str(path)], cwd=openai_suite.path, env=clean_env())
    assert verified.returncode == 0, verified.stderr
    again = strict(openai_suite)
    again.assert_outcomes(passed=1)
    assert "attest replay: 1 replayed · 0 live model calls · $0.00" in again.outlines


def test_a_fixture_without_drift_is_left_byte_for_byte_under_the_egress_guard(openai_suite, monkeypatch):
    path = fixture_file(openai_suite.path, "hello")
    before, stat = path.read_bytes(), path.stat()
    result, upstream_calls = rebase(
        openai_suite, monkeypatch, "--attest-egress=block"
    )  # it calls no provider
    result.assert_outcomes(passed=1)
    assert upstream_calls == 0
    assert f"attest rebase: hello: no drift in 1 call; {shown(path)} unchanged" in result.outlines
    assert path.read_bytes() == before
    assert path.stat().st_mtime_ns == stat.st_mtime_ns


def test_a_secret_the_code_now_sends_is_redacted_in_the_rewritten_fixture(openai_suite, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    write_openai_agent(openai_suite, 100, extra=" (key {OPENAI_API_KEY})")
    result, upstream_calls = rebase(openai_suite, monkeypatch)
    result.assert_outcomes(passed=1)
    assert upstream_calls == 0
    assert "  1     messages   messages[0].content" in result.outlines
    path = fixture_file(openai_suite.path, "hello")
    assert KEY not in path.read_text()
    (item,) = fx.model_interactions(fx.read_fixture(path))
    assert item["request"]["json"]["messages"][0]["content"] == f"Say hello (key {REDACTED})"
    strict(openai_suite).assert_outcomes(passed=1)


def test_reordered_content_in_a_tool_loop_is_rebased_and_the_tool_ids_kept(anthropic_suite, monkeypatch):
    path = fixture_file(anthropic_suite.path, "weather")
    before = response_texts(path)
    recorded = fx.model_interactions(fx.read_fixture(path))
    answered = recorded[1]["request"]["json"]["messages"][2]["content"][0]["tool_use_id"]
    write_anthropic_agent(anthropic_suite, ["Be brief.", "Weather in Paris?"])
    strict(anthropic_suite).assert_outcomes(failed=1)

    result, upstream_calls = rebase(anthropic_suite, monkeypatch)
    result.assert_outcomes(passed=1)
    assert upstream_calls == 0
    assert "attest rebase: weather: 2 of 2 calls drifted" in result.stdout.str()
    assert "  1     messages   messages[0].content[0..1] reordered" in result.outlines
    assert "  2     messages   messages[0].content[0..1] reordered" in result.outlines
    assert response_texts(path) == before
    second = fx.model_interactions(fx.read_fixture(path))[1]
    assert (
        second["request"]["json"]["messages"][2]["content"][0]["tool_use_id"] == answered
    )  # the placeholder
    assert answered.startswith("toolu_{{id_")

    again = strict(anthropic_suite)
    again.assert_outcomes(passed=1)
    assert "attest replay: 2 replayed · 0 live model calls · $0.00" in again.outlines


def test_a_structural_change_is_refused_and_the_fixture_left_as_it_was(anthropic_suite, monkeypatch):
    path = fixture_file(anthropic_suite.path, "weather")
    before = path.read_bytes()
    write_anthropic_agent(anthropic_suite, ["Weather in Paris?", "Be brief."], use_tool=False)
    result, upstream_calls = rebase(anthropic_suite, monkeypatch)
    assert upstream_calls == 0
    assert (
        "attest rebase: weather: refused: the code made 1 model call, the fixture records 2; "
        f"{shown(path)} unchanged" in result.outlines
    )
    assert path.read_bytes() == before


def test_a_test_that_failed_before_its_last_call_says_so_with_its_error(anthropic_suite, monkeypatch):
    path = fixture_file(anthropic_suite.path, "weather")
    before = path.read_bytes()
    write_anthropic_agent(anthropic_suite, ["Weather in Paris?", "Be brief."])
    anthropic_suite.makepyfile(
        test_agent="""
import agent

def test_weather(attest_replay):
    made = []
    real = agent.client.messages.create

    def create(**kwargs):  # the code breaks between its two calls
        if made:
            raise RuntimeError("the tool broke")
        made.append(kwargs)
        return real(**kwargs)

    agent.client.messages.create = create
    with attest_replay("weather"):
        agent.run()
"""
    )
    result, upstream_calls = rebase(anthropic_suite, monkeypatch)
    result.assert_outcomes(failed=1)
    assert upstream_calls == 0
    assert (
        "attest rebase: weather: not rewritten: the test failed first (RuntimeError: the tool broke), after 1 "
        "of 2 recorded calls; tests/attest/fixtures/weather.attest.json unchanged"
    ) in result.outlines
    assert "refused" not in result.stdout.str()
    assert path.read_bytes() == before


def test_a_request_that_no_longer_answers_the_recorded_tool_call_is_refused(anthropic_suite, monkeypatch):
    path = fixture_file(anthropic_suite.path, "weather")
    before = path.read_bytes()
    write_anthropic_agent(anthropic_suite, ["Weather in Paris?", "Be brief."], answer_as_text=True)
    result, upstream_calls = rebase(anthropic_suite, monkeypatch)
    result.assert_outcomes(passed=1)  # served by position, the test itself still passes
    assert upstream_calls == 0
    assert (
        "attest rebase: weather: refused: call 2: answers other tool calls than its recording did; "
        f"{shown(path)} unchanged"
    ) in result.outlines
    assert path.read_bytes() == before


def test_another_endpoint_is_refused_with_the_endpoints_named(openai_suite, monkeypatch):
    openai_suite.makepyfile(
        agent="""
import openai

client = openai.OpenAI(max_retries=0)

def ask(content):
    return client.responses.create(model="gpt-4o-mini", input=content).output_text
"""
    )
    path = fixture_file(openai_suite.path, "hello")
    before = path.read_bytes()
    result, upstream_calls = rebase(openai_suite, monkeypatch)
    result.assert_outcomes(failed=1)  # the call missed: the test cannot pass
    assert upstream_calls == 0
    refused = [line for line in result.outlines if line.startswith("attest rebase: hello: refused:")]
    assert refused == [
        'attest rebase: hello: refused: call 1: endpoint changed ("POST /v1/chat/completions"→"POST '
        f'/v1/responses"); {shown(path)} unchanged'
    ]
    assert path.read_bytes() == before


def test_in_ci_a_rebase_from_the_environment_is_refused_and_the_run_replays(openai_suite, monkeypatch):
    path = fixture_file(openai_suite.path, "hello")
    before = path.read_bytes()
    write_openai_agent(openai_suite, 4096)
    monkeypatch.setenv("CI", "true")
    monkeypatch.setenv("ATTEST_RECORD", "rebase")
    with FakeUpstream([]) as upstream:
        monkeypatch.setenv("ATTEST_OPENAI_UPSTREAM", upstream.url)
        result = openai_suite.runpytest_subprocess("-q")
    result.assert_outcomes(failed=1)  # replayed in strict: the drift is a miss
    refusal = (
        "attest record: not recording: CI is set and the record mode came from ATTEST_RECORD=rebase; "
        "pass --attest-record=rebase on the pytest command line to record in CI (replaying instead)"
    )
    assert refusal in result.stdout.str()
    assert "params changed: max_tokens" in result.stdout.str()
    assert len(upstream.requests) == 0
    assert path.read_bytes() == before


AGENT_SCRIPT = """
import sys
import openai

client = openai.OpenAI(max_retries=0)
reply = client.chat.completions.create(
    model="gpt-4o-mini", max_tokens=int(sys.argv[1]), messages=[{"role": "user", "content": "Say hello"}]
)
print(reply.choices[0].message.content)
"""


def test_the_cli_rebases_a_captured_fixture_then_refuses_a_structural_change(tmp_path):
    script = tmp_path / "agent.py"
    script.write_text(AGENT_SCRIPT, encoding="utf-8")
    path = fixture_file(tmp_path, "hello")
    with FakeUpstream([reply(chat_response("Hello!"))]) as upstream:
        env = clean_env(OPENAI_API_KEY=KEY, ATTEST_OPENAI_UPSTREAM=upstream.url)
        captured = run_cli(
            ["capture", "--name", "hello", "--", sys.executable, "agent.py", "100"], cwd=tmp_path, env=env
        )
        assert captured.returncode == 0, captured.stderr
        before = response_texts(path)
        no_key = clean_env(ATTEST_OPENAI_UPSTREAM=upstream.url)

        rebased = run_cli(
            ["fixture", "rebase", "hello", "--", sys.executable, "agent.py", "512"], cwd=tmp_path, env=no_key
        )
        assert rebased.returncode == 0, rebased.stderr
        assert "Hello!" in rebased.stdout  # the command got the recorded answer
        assert "  1     params     max_tokens" in rebased.stdout.splitlines()
        assert response_texts(path) == before
        replayed = run_cli(
            ["replay", "--name", "hello", "--mode", "strict", "--", sys.executable, "agent.py", "512"],
            cwd=tmp_path,
            env=no_key,
        )
        assert replayed.returncode == 0, replayed.stderr

        script.write_text(AGENT_SCRIPT + AGENT_SCRIPT.split("\n", 4)[4], encoding="utf-8")  # a second call
        kept = path.read_bytes()
        refused = run_cli(
            ["fixture", "rebase", "hello", "--", sys.executable, "agent.py", "512"], cwd=tmp_path, env=no_key
        )
        assert refused.returncode == 2
        assert refused.stderr.strip().splitlines()[-1] == (
            "attest rebase: hello: refused: call 2: the agent made more model calls than the 1 recorded; "
            f"{Path('tests/attest/fixtures/hello.attest.json')} unchanged"
        )
        assert path.read_bytes() == kept

        failing = [sys.executable, "-c", "import sys; sys.exit(1)"]
        failed = run_cli(["fixture", "rebase", "hello", "--", *failing], cwd=tmp_path, env=no_key)
        assert failed.returncode == 1
        assert failed.stderr.strip() == (
            f"attest: {Path('tests/attest/fixtures/hello.attest.json')}: the command exited 1; nothing rewritten, "
            "the fixture is unchanged"
        )
        assert path.read_bytes() == kept
        assert upstream.requests and len(upstream.requests) == 1  # only the capture went upstream
