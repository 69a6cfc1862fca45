"""Live forwarding goes to the user's own upstream, never round attest's own listeners, and never waits
forever: a loop is refused in one line, and a forwarded call that outlives its deadline fails the test."""

from __future__ import annotations

import json
import sys
import textwrap

import pytest
from capture_helpers import GatedUpstream, run_attest
from conftest import chat_request, chat_response, clean_env, exchange, scrub, write_fixture
from test_pytest_record import AGENT
from upstream import FakeUpstream, Reply

KEY = "sk-test-" + "l" * 40


TESTS = """
import agent

def test_hello(attest_replay):
    with attest_replay("hello"):
        assert agent.ask("Say hello") == "Hello!"
        assert agent.ask("not recorded") == "From your gateway"
"""


@pytest.fixture
def suite(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A suite whose fixture holds the first call only; the user's key and auto mode are set."""
    scrub(monkeypatch)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("ATTEST_REPLAY", "auto")
    pytester.makepyfile(agent=AGENT, test_agent=TESTS)
    request = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Say hello"}]}
    write_fixture(
        pytester.path / "tests" / "attest" / "fixtures", "hello", [exchange(request, chat_response())]
    )
    return pytester


def gateway_reply() -> Reply:
    return Reply(body=json.dumps(chat_response("From your gateway")).encode())


@pytest.mark.parametrize("mode", ["none", "once"])
def test_a_miss_under_attest_record_goes_to_the_users_gateway_not_round_the_front(suite, monkeypatch, mode):
    with FakeUpstream([gateway_reply()]) as gateway:
        monkeypatch.setenv("OPENAI_BASE_URL", gateway.url + "/v1")
        result = suite.runpytest_subprocess(f"--attest-record={mode}", "-p", "no:randomly", timeout=120)
        [seen] = gateway.requests
    result.assert_outcomes(passed=1)
    assert seen.path == "/v1/chat/completions"
    assert seen.headers["Authorization"] == f"Bearer {KEY}"
    assert "attest replay: 1 replayed · 1 live model calls" in result.stdout.str()


def replay_env(**extra: str) -> dict[str, str]:
    return clean_env(OPENAI_API_KEY=KEY, PYTHONIOENCODING="utf-8", **extra)


# One call the fixture has no recording for; the agent prints what became of it.
MISSING_CALL = textwrap.dedent(
    """
    import openai
    try:
        openai.OpenAI(max_retries=0).chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "not recorded"}]
        )
    except openai.APIError as exc:
        print("model call failed:", type(exc).__name__)
    """
)


def replay_argv(fixture: str, *command: str) -> list[str]:
    return ["replay", "--fixture", fixture, "--mode", "auto", "--", *command]


def test_a_live_call_to_one_of_attests_own_listeners_is_refused_in_one_line(tmp_path):
    """The inner replay's base URL is the outer replay's engine: forwarding there is refused, not made."""
    path = write_fixture(tmp_path / "fixtures", "hello", [exchange(chat_request(), chat_response())])
    inner = [sys.executable, "-c", _attest_cli(), *replay_argv(str(path), sys.executable, "-c", MISSING_CALL)]
    with FakeUpstream([]) as gateway:
        done = run_attest(
            *replay_argv(str(path), *inner), env=replay_env(OPENAI_BASE_URL=gateway.url + "/v1"), cwd=tmp_path
        )
        assert gateway.requests == []
    refusal = [line for line in done.stderr.splitlines() if "own listener" in line]
    assert len(refusal) == 1
    assert refusal[0].startswith("attest replay: live call POST /v1/chat/completions: http://127.0.0.1:")
    assert refusal[0].endswith(
        " is attest's own listener, so forwarding there would loop; set your real upstream "
        "(ATTEST_OPENAI_UPSTREAM, ATTEST_ANTHROPIC_UPSTREAM or the tool's variable)"
    )
    assert "/r/" not in refusal[0]  # the session's path (its secret) is not printed
    assert done.returncode == 1  # the inner replay, the outer one's command, diverged


def _attest_cli() -> str:
    from capture_helpers import attest_argv

    return attest_argv()[2]


def test_a_forwarded_call_that_outlives_its_deadline_fails_in_one_line(tmp_path):
    path = write_fixture(tmp_path / "fixtures", "hello", [exchange(chat_request(), chat_response())])
    with GatedUpstream([gateway_reply()]) as gateway:
        env = replay_env(ATTEST_OPENAI_UPSTREAM=gateway.url, ATTEST_LIVE_TIMEOUT="1")
        done = run_attest(*replay_argv(str(path), sys.executable, "-c", MISSING_CALL), env=env, cwd=tmp_path)
        assert gateway.arrived.is_set()
    assert done.returncode == 2, done.stderr
    assert done.stdout.splitlines()[0] == "model call failed: BadRequestError"
    assert done.stderr.splitlines() == [
        f"attest replay: live call POST /v1/chat/completions: {gateway.url}: no whole answer within 1 s "
        "(ATTEST_LIVE_TIMEOUT)"
    ]


def test_under_pytest_the_deadline_fails_the_test_with_that_line(suite, monkeypatch):
    with GatedUpstream([gateway_reply()]) as gateway:
        monkeypatch.setenv("OPENAI_BASE_URL", gateway.url + "/v1")
        monkeypatch.setenv("ATTEST_LIVE_TIMEOUT", "1")
        result = suite.runpytest_subprocess("--attest-record=none", "-p", "no:randomly", timeout=120)
    result.assert_outcomes(failed=1)
    line = (
        f"attest replay: live call POST /v1/chat/completions: {gateway.url}: no whole answer within 1 s "
        "(ATTEST_LIVE_TIMEOUT)"
    )
    assert line in result.stdout.lines


@pytest.mark.parametrize("var", ["ATTEST_LIVE_TIMEOUT", "ATTEST_LIVE_CONNECT_TIMEOUT"])
def test_a_deadline_that_is_not_a_number_of_seconds_is_a_usage_error(tmp_path, var):
    path = write_fixture(tmp_path / "fixtures", "hello", [exchange(chat_request(), chat_response())])
    done = run_attest(*replay_argv(str(path), "true"), env=replay_env(**{var: "soon"}), cwd=tmp_path)
    assert done.returncode == 3
    assert done.stderr.splitlines() == [f"attest: {var} must be a number of seconds above 0, not 'soon'"]


@pytest.mark.parametrize("command", ["replay", "capture"])
def test_an_upstream_without_a_scheme_is_a_usage_error_before_the_agent_runs(tmp_path, command):
    path = write_fixture(tmp_path / "fixtures", "hello", [exchange(chat_request(), chat_response())])
    ran = tmp_path / "the-agent-ran"
    agent = [sys.executable, "-c", f"open({str(ran)!r}, 'w').close()"]
    if command == "replay":
        argv = replay_argv(str(path), *agent)
    else:
        argv = ["capture", "--name", "new", "--fixtures-dir", str(path.parent), "--", *agent]
    done = run_attest(*argv, env=replay_env(ATTEST_OPENAI_UPSTREAM="127.0.0.1:8765"), cwd=tmp_path)
    assert done.returncode == 3
    assert done.stderr.splitlines() == [
        "attest: ATTEST_OPENAI_UPSTREAM must be a URL starting with http:// or https://, not "
        "'127.0.0.1:8765': write http://127.0.0.1:8765 or https://127.0.0.1:8765"
    ]
    assert not ran.exists()


@pytest.mark.parametrize("record", [None, "--attest-record=once"])
def test_under_pytest_an_upstream_without_a_scheme_is_one_line_before_any_test(suite, monkeypatch, record):
    monkeypatch.setenv("ATTEST_OPENAI_UPSTREAM", "127.0.0.1:8765")
    result = suite.runpytest_subprocess(*([record] if record else []), "-p", "no:randomly", timeout=120)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert [line for line in result.errlines if line] == [
        "ERROR: ATTEST_OPENAI_UPSTREAM must be a URL starting with http:// or https://, not "
        "'127.0.0.1:8765': write http://127.0.0.1:8765 or https://127.0.0.1:8765"
    ]
    assert "test_hello" not in result.stdout.str()
