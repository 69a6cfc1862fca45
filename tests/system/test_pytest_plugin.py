"""The pytest helper in real pytest sessions (pytester, in a subprocess), with the official SDKs."""

from __future__ import annotations

import json

import jsonschema
import pytest
from attest_toolkit.fixtures.validation import load_schema
from attest_toolkit.pricing.cost import table_date
from conftest import chat_request, chat_response, exchange, scrub, write_fixture
from upstream import FakeUpstream, Reply

KEY = "sk-test-" + "p" * 40

AGENT = """
import openai

def ask(content):
    client = openai.OpenAI(max_retries=0)  # built after the replay starts
    reply = client.chat.completions.create(model="gpt-4o-mini", messages=[
        {"role": "system", "content": "You are terse."}, {"role": "user", "content": content}])
    return reply.choices[0].message.content
"""


@pytest.fixture
def suite(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    scrub(monkeypatch)
    pytester.makepyfile(agent=AGENT)
    write_fixture(
        pytester.path / "tests" / "attest" / "fixtures",
        "hello",
        [exchange(chat_request("Say hello"), chat_response("Hello!"))],
    )
    return pytester


def report_of(pytester: pytest.Pytester) -> dict:
    report = json.loads((pytester.path / "report.json").read_text())
    jsonschema.validate(report, load_schema("report-v2.schema.json"))
    return report


def test_a_replayed_test_passes_and_the_run_ends_with_the_summary_line(suite):
    suite.makepyfile(
        test_agent="""
import agent

def test_hello(attest_replay):
    with attest_replay("hello"):
        assert agent.ask("Say hello") == "Hello!"
"""
    )
    result = suite.runpytest_subprocess("--attest-replay=strict", "--attest-report=report.json")
    result.assert_outcomes(passed=1)
    assert (
        result.outlines[-2] == "attest replay: 1 replayed · 0 live model calls · $0.00"
        or "attest replay: 1 replayed · 0 live model calls · $0.00" in result.outlines
    )
    row = report_of(suite)["tests"][0]
    assert row["outcome"] == "passed"
    assert row["replay"] == {
        "fixtures": ["tests/attest/fixtures/hello.attest.json"],
        "mode": "strict",
        "replayed": 1,
        "live": 0,
        "live_cost_usd": 0.0,
        "unpriced": 0,
        "unused": 0,
        "misses": 0,
    }


def test_a_strict_miss_fails_even_under_xfail_strict(suite):
    suite.makepyfile(
        test_agent="""
import pytest, agent

@pytest.mark.xfail(strict=True)
def test_changed(attest_replay):
    with attest_replay("hello"):
        agent.ask("Say goodbye")
"""
    )
    result = suite.runpytest_subprocess("--attest-replay=strict", "--attest-report=report.json")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*replay miss: messages changed: messages[[]0[]].content (hash *→*); "
            "re-record with `attest capture --refresh hello`*"
        ]
    )
    row = report_of(suite)["tests"][0]
    assert row["outcome"] == "failed"
    assert row["message"].startswith("replay miss: messages changed: messages[0].content (hash ")
    assert row["replay"]["misses"] == 1 and row["replay"]["miss"]["component"] == "messages"
    assert row["replay"]["miss"]["paths"] == ["messages[0].content"]
    assert row["replay"]["miss"]["location"]["file"] == "agent.py"


def test_a_plain_failure_is_reported_by_its_own_line(suite):
    suite.makepyfile(
        test_agent="""
import agent

def test_wrong(attest_replay):
    with attest_replay("hello"):
        assert agent.ask("Say hello") == "Goodbye!"
"""
    )
    suite.runpytest_subprocess("--attest-replay=strict", "--attest-report=report.json").assert_outcomes(
        failed=1
    )
    message = report_of(suite)["tests"][0]["message"]
    assert message.startswith("AssertionError: assert 'Hello!' == 'Goodbye!'")


def test_a_miss_fails_a_test_that_swallowed_the_error(suite):
    suite.makepyfile(
        test_agent="""
import agent

def test_swallow(attest_replay):
    with attest_replay("hello"):
        try:
            agent.ask("Say goodbye")
        except Exception:
            pass
"""
    )
    result = suite.runpytest_subprocess("--attest-replay=strict")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*replay miss: messages changed*"])


TEST_AUTO = """
import agent

def test_auto(attest_replay):
    attest_replay("hello")
    assert agent.ask("Say goodbye")
"""


def test_an_auto_miss_without_a_key_is_not_evaluated(suite):
    suite.makepyfile(test_agent=TEST_AUTO)
    result = suite.runpytest_subprocess("--attest-replay=auto", "--attest-report=report.json", "-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*not_evaluated: replay_miss: replay miss: messages changed*"])
    row = report_of(suite)["tests"][0]
    assert row["outcome"] == "not_evaluated" and row["reason"] == "replay_miss"


def test_an_auto_miss_without_a_key_fails_under_attest_strict(suite, monkeypatch):
    suite.makepyfile(test_agent=TEST_AUTO)
    suite.runpytest_subprocess("--attest-replay=auto", "--attest-strict").assert_outcomes(failed=1)
    monkeypatch.setenv("ATTEST_STRICT", "1")
    suite.runpytest_subprocess("--attest-replay=auto").assert_outcomes(failed=1)


def test_an_auto_miss_with_the_key_goes_live_and_is_counted(suite, monkeypatch):
    suite.makepyfile(test_agent=TEST_AUTO)
    with FakeUpstream([Reply(body=json.dumps(chat_response("live")).encode())]) as upstream:
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        monkeypatch.setenv("ATTEST_OPENAI_UPSTREAM", upstream.url)
        result = suite.runpytest_subprocess("--attest-replay=auto", "--attest-report=report.json")
    result.assert_outcomes(passed=1)
    assert len(upstream.requests) == 1
    assert report_of(suite)["summary"]["replay"]["live"] == 1
    assert "attest replay: 0 replayed · 1 live model calls · $0.00 · 1 recording unused" in result.outlines
    priced = [line for line in result.outlines if "priced from the built-in table of" in line]
    assert priced == [
        f"attest replay: live calls priced from the built-in table of {table_date()}"
    ]  # no URLs


def test_the_default_mode_is_strict_when_ci_is_set(suite, monkeypatch):
    suite.makepyfile(test_agent=TEST_AUTO)
    monkeypatch.setenv("CI", "true")
    suite.runpytest_subprocess().assert_outcomes(failed=1)
    monkeypatch.setenv("ATTEST_REPLAY", "auto")
    suite.runpytest_subprocess().assert_outcomes(skipped=1)


def test_environment_is_restored_and_mode_off_starts_nothing(suite, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", "http://example.invalid/v1")
    suite.makepyfile(
        test_agent="""
import os

def test_env(attest_replay):
    with attest_replay("hello"):
        assert os.environ["OPENAI_BASE_URL"].startswith("http://127.0.0.1:")
    assert os.environ["OPENAI_BASE_URL"] == "http://example.invalid/v1"
    with attest_replay("hello", mode="off"):
        assert os.environ["OPENAI_BASE_URL"] == "http://example.invalid/v1"
"""
    )
    suite.runpytest_subprocess().assert_outcomes(passed=1)


def test_only_one_replay_at_a_time(suite):
    suite.makepyfile(
        test_agent="""
import pytest
from attest_toolkit.errors import AttestError

def test_two(attest_replay):
    with attest_replay("hello"):
        with pytest.raises(AttestError, match="only one replay runs at a time"):
            attest_replay("hello")
"""
    )
    suite.runpytest_subprocess("--attest-replay=strict").assert_outcomes(passed=1)


def test_xdist_two_workers_merge_into_one_valid_report(suite):
    tests = "\n".join(
        f"""
def test_hello_{i}(attest_replay):
    with attest_replay("hello"):
        assert agent.ask("Say hello") == "Hello!"
"""
        for i in range(6)
    )
    suite.makepyfile(test_agent="import agent\n" + tests)
    result = suite.runpytest_subprocess("-n", "2", "--attest-replay=strict", "--attest-report=report.json")
    result.assert_outcomes(passed=6)
    report = report_of(suite)
    assert len(report["tests"]) == 6
    assert report["summary"]["replay"]["replayed"] == 6


def test_the_guard_fails_a_client_built_before_the_replay(suite, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    suite.makepyfile(
        test_agent="""
import openai

def test_early_client(attest_replay):
    client = openai.OpenAI(max_retries=0)  # built before the replay: it points at api.openai.com
    with attest_replay("hello"):
        client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "Say hello"}])
"""
    )
    result = suite.runpytest_subprocess(
        "--attest-replay=auto", "--attest-egress=block", "--attest-report=report.json"
    )
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*attest egress guard: connection to api.openai.com*blocked*"])
    assert report_of(suite)["summary"]["egress"]["mode"] == "guard"


HELLO_TEST = """
def test_after(attest_replay):
    with attest_replay("hello"):
        assert agent.ask("Say hello") == "Hello!"
"""


def test_a_bad_fixture_fails_its_own_test_only_on_one_line(suite):
    fixtures = suite.path / "tests" / "attest" / "fixtures"
    (fixtures / "deep.attest.json").write_text("[" * 200_000 + "]" * 200_000)
    (fixtures / "loop.attest.json").symlink_to("loop.attest.json")
    long_name = "a" * 300
    suite.makepyfile(
        test_bad=f"""
import agent

def test_long_name(attest_replay):
    attest_replay({long_name!r})

def test_deep(attest_replay):
    attest_replay("deep")

def test_loop(attest_replay):
    attest_replay("loop")

def test_missing(attest_replay):
    attest_replay("missing")
{HELLO_TEST}"""
    )
    result = suite.runpytest_subprocess("--attest-replay=strict")
    result.assert_outcomes(failed=4, passed=1)
    # Each failure is its one line, under the test's own header.
    for test, name, problem in [
        ("test_long_name", long_name, "cannot read: file name too long for the file system"),
        ("test_deep", "deep", "nested too deeply to be a fixture"),
        ("test_loop", "loop", "cannot read: too many levels of symbolic links (a symlink loop)"),
        (
            "test_missing",
            "missing",
            "no such fixture; record it with `pytest --attest-record=once test_bad.py::test_missing`",
        ),
    ]:
        header = next(
            i for i, line in enumerate(result.outlines) if f" {test} " in line and line.startswith("_")
        )
        assert result.outlines[header + 1] == f"{fixtures / name}.attest.json: {problem}"
    assert "Traceback" not in result.stdout.str() and "client.py" not in result.stdout.str()


def test_a_crashed_engine_is_restarted_and_the_summary_still_reaches_stdout(suite):
    suite.makepyfile(
        test_crash=f"""
import agent

def test_engine_dies(attest_replay, request):
    with attest_replay("hello"):
        engine = request.config.pluginmanager.get_plugin("attest-plugin").engines[None]
        engine.proc.kill()
        engine.proc.wait()
{HELLO_TEST}"""
    )
    result = suite.runpytest_subprocess("--attest-replay=strict")  # stdout goes to a file
    result.assert_outcomes(failed=1, passed=1)
    assert (
        "the replay engine exited while serving this replay; the next test gets a new engine"
        in result.outlines
    )
    assert "attest replay: 1 replayed · 0 live model calls · $0.00 · 1 failed" in result.outlines


def test_an_engine_gone_after_a_hit_answered_in_process_fails_the_test_on_one_line(suite):
    """The test's own client is answered in its process; the engine dies before the test closes, so
    the hit could not be counted: the test fails on one line, and the next test gets a new engine."""
    suite.makepyfile(
        test_gone=f"""
import agent

def test_hit_then_engine_gone(attest_replay, request):
    with attest_replay("hello"):
        assert agent.ask("Say hello") == "Hello!"
        engine = request.config.pluginmanager.get_plugin("attest-plugin").engines[None]
        assert engine.lane.held  # answered in this process
        engine.proc.kill()
        engine.proc.wait()
{HELLO_TEST}"""
    )
    result = suite.runpytest_subprocess("--attest-replay=strict")
    result.assert_outcomes(failed=1, passed=1)
    assert (
        "the replay engine exited while serving this replay; the next test gets a new engine"
        in result.outlines
    )
    assert "Traceback" not in result.stdout.str()


def test_the_report_holds_no_credential_from_ids_messages_or_skip_reasons(suite):
    key = "sk-proj-" + "Pl4g1nK3y" * 3
    suite.makepyfile(
        test_agent=f"""
import pytest

@pytest.mark.parametrize("key", ["{key}"])
def test_call(key):
    assert key == "X-Custom-Auth: hdr-0b8f2c9e7d"

@pytest.mark.skip(reason="needs postgres://app:pw-0b8f2c9e@db/prod")
def test_skipped():
    pass
"""
    )
    suite.runpytest_subprocess("--attest-report=report.json").assert_outcomes(failed=1, skipped=1)
    text = (suite.path / "report.json").read_text()
    for leak in (key, "hdr-0b8f2c9e7d", "pw-0b8f2c9e"):
        assert leak not in text
    assert "test_call[{{redacted}}]" in text


def test_a_mistyped_fixture_name_says_how_pytest_records_and_the_near_name(suite):
    suite.makepyfile(
        test_typo="""
def test_weather(attest_replay):
    with attest_replay("helo"):
        pass
"""
    )
    result = suite.runpytest_subprocess("--attest-replay=strict")
    result.assert_outcomes(failed=1)
    fixture = suite.path / "tests" / "attest" / "fixtures" / "helo.attest.json"
    assert (
        f"{fixture}: no such fixture (did you mean 'hello'?); record it with "
        "`pytest --attest-record=once test_typo.py::test_weather`"
    ) in result.outlines
    # The only test never replayed, and the run still ends with the summary line.
    assert "attest replay: 0 replayed · 0 live model calls · $0.00 · 1 failed" in result.outlines
