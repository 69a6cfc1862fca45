"""Recording from pytest (`--attest-record`, `ATTEST_RECORD`) in real pytest runs, with the official
openai SDK built at module level, against a scripted provider on loopback."""

from __future__ import annotations

import json
import os
import re
import sys
import textwrap

import pytest
from attest_toolkit.fixtures import document as fx
from capture_helpers import run_attest
from conftest import chat_response, scrub
from upstream import FakeUpstream, Reply

KEY = "sk-test-" + "r" * 40

# pytest-recording users build the client when the module is imported, before any test runs.
AGENT = """
import openai

client = openai.OpenAI(max_retries=0)

def ask(content):
    reply = client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": content}])
    return reply.choices[0].message.content
"""

TESTS = """
import agent

def test_hello(attest_replay):
    with attest_replay("hello"):
        assert agent.ask("Say hello") == "Hello!"
"""


def answer(text: str) -> Reply:
    return Reply(body=json.dumps(chat_response(text)).encode())


@pytest.fixture
def suite(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    scrub(monkeypatch)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    pytester.makepyfile(agent=AGENT, test_agent=TESTS)
    return pytester


def fixture_of(suite: pytest.Pytester, name: str = "hello") -> dict:
    return fx.read_fixture(suite.path / "tests" / "attest" / "fixtures" / f"{name}.attest.json")


def run(suite: pytest.Pytester, upstream: FakeUpstream, monkeypatch: pytest.MonkeyPatch, *args: str):
    monkeypatch.setenv("ATTEST_OPENAI_UPSTREAM", upstream.url)
    return suite.runpytest_subprocess(*args)


def test_once_records_a_missing_fixture_from_a_module_level_client_then_replays_it(suite, monkeypatch):
    with FakeUpstream([answer("Hello!")]) as upstream:
        result = run(suite, upstream, monkeypatch, "--attest-record=once")
        result.assert_outcomes(passed=1)
        assert len(upstream.requests) == 1
        assert upstream.requests[0].headers["Authorization"] == f"Bearer {KEY}"  # the user's own key
        path = suite.path / "tests" / "attest" / "fixtures" / "hello.attest.json"
        assert f"attest record: 1 call recorded; wrote {path}" in result.outlines
        doc = fixture_of(suite)
        assert doc["source"]["test"] == "test_agent.py::test_hello"
        assert doc["source"]["command"] == ["pytest", "test_agent.py::test_hello"]
        assert KEY not in path.read_text()
        assert oct(path.stat().st_mode & 0o777) == "0o600"
        before = path.read_bytes()

        again = run(suite, upstream, monkeypatch, "--attest-record=once", "--attest-replay=strict")
        again.assert_outcomes(passed=1)
        assert len(upstream.requests) == 1  # the second run replayed: nothing went upstream
        assert "attest replay: 1 replayed · 0 live model calls · $0.00" in again.outlines
        assert path.read_bytes() == before


def test_new_records_only_the_call_that_misses(suite, monkeypatch):
    with FakeUpstream([answer("Hello!"), answer("Bye!")]) as upstream:
        run(suite, upstream, monkeypatch, "--attest-record=once").assert_outcomes(passed=1)
        path = suite.path / "tests" / "attest" / "fixtures" / "hello.attest.json"
        (old,) = fx.model_interactions(fixture_of(suite))
        suite.makepyfile(
            test_agent=TESTS
            + '        assert agent.ask("Say bye") == "Bye!"\n'.replace("        ", "        ")
        )
        result = run(suite, upstream, monkeypatch, "--attest-record=new")
        result.assert_outcomes(passed=1)
        assert len(upstream.requests) == 2  # only "Say bye" went live
        assert f"attest record: 1 replayed, 1 recorded live; wrote {path}" in result.outlines
        first, second = fx.model_interactions(fixture_of(suite))
        assert first == old
        assert textwrap.indent(json.dumps(old, indent=2, sort_keys=True), " " * 6) in path.read_text()
        assert second["request"]["json"]["messages"][0]["content"] == "Say bye"


def test_all_re_records_and_a_failing_test_writes_nothing(suite, monkeypatch):
    with FakeUpstream([answer("Hello!"), answer("Hello again"), answer("Hello!")]) as upstream:
        run(suite, upstream, monkeypatch, "--attest-record=all").assert_outcomes(passed=1)
        path = suite.path / "tests" / "attest" / "fixtures" / "hello.attest.json"
        before = path.read_bytes()
        failed = run(suite, upstream, monkeypatch, "--attest-record=all")
        failed.assert_outcomes(failed=1)  # the answer changed, so the test's assertion fails
        assert f"attest record: {path}: not written, the test did not pass" in failed.outlines
        assert path.read_bytes() == before
        run(suite, upstream, monkeypatch, "--attest-record=all").assert_outcomes(passed=1)
        assert len(upstream.requests) == 3  # all: every call went live again


def test_in_ci_only_the_flag_on_the_command_line_records(suite, monkeypatch):
    monkeypatch.setenv("CI", "true")
    monkeypatch.setenv("ATTEST_RECORD", "once")
    with FakeUpstream([answer("Hello!")]) as upstream:
        refused = run(suite, upstream, monkeypatch)
        refused.assert_outcomes(failed=1)  # no fixture, and nothing recorded
        assert upstream.requests == []
        assert (
            "attest record: not recording: CI is set and the record mode came from ATTEST_RECORD=once; "
            "pass --attest-record=once on the pytest command line to record in CI (replaying instead)"
        ) in refused.outlines
        run(suite, upstream, monkeypatch, "--attest-record=once").assert_outcomes(passed=1)
        assert len(upstream.requests) == 1
    assert fixture_of(suite)["source"]["test"] == "test_agent.py::test_hello"


def test_a_call_outside_any_block_is_refused_not_sent(suite, monkeypatch):
    suite.makepyfile(
        test_outside="""
import openai
import pytest
import agent

def test_outside():
    with pytest.raises(openai.BadRequestError, match="outside any attest_replay block"):
        agent.ask("Say hello")
"""
    )
    with FakeUpstream([]) as upstream:
        run(suite, upstream, monkeypatch, "--attest-record=all", "test_outside.py").assert_outcomes(passed=1)
        assert upstream.requests == []


def test_two_xdist_workers_each_record_their_own_fixture(suite, monkeypatch):
    tests = "import agent\n" + "".join(
        f"""
def test_{i}(attest_replay):
    with attest_replay("hello-{i}"):
        assert agent.ask("Say hello") == "Hello!"
"""
        for i in range(4)
    )
    suite.makepyfile(test_agent=tests)
    with FakeUpstream([answer("Hello!") for _ in range(4)]) as upstream:
        run(suite, upstream, monkeypatch, "-n", "2", "--attest-record=once").assert_outcomes(passed=4)
        assert len(upstream.requests) == 4
    for i in range(4):
        assert fixture_of(suite, f"hello-{i}")["source"]["test"] == f"test_agent.py::test_{i}"


def test_refresh_of_a_fixture_a_test_recorded_re_runs_that_test(suite, monkeypatch):
    with FakeUpstream([answer("Hello!"), answer("Hello!")]) as upstream:
        run(suite, upstream, monkeypatch, "--attest-record=once").assert_outcomes(passed=1)
        env = {
            **os.environ,
            "CI": "true",
        }  # a refresh gives the flag on pytest's command line, so CI does not stop it
        proc = run_attest("capture", "--refresh", "hello", "--yes", env=env, cwd=suite.path)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert len(upstream.requests) == 2
        lines = proc.stderr.splitlines()
        assert lines[0] == "attest capture: recorded test: test_agent.py::test_hello"
        assert lines[1] == (
            f"attest capture: runs: {sys.executable} -m pytest -q --attest-record=all -- test_agent.py::test_hello"
        )
        before = (suite.path / "tests" / "attest" / "fixtures" / "hello.attest.json").read_bytes()
        partial = run_attest(
            "capture", "--refresh", "hello", "--only-misses", "--yes", env=env, cwd=suite.path
        )
        assert partial.returncode == 0, partial.stdout + partial.stderr
        assert "--attest-record=new -- test_agent.py::test_hello" in partial.stderr.splitlines()[1]
        assert len(upstream.requests) == 2  # the test's one call still matched: replayed, not paid for
        assert "1 replayed, 0 recorded live;" in partial.stdout
        assert (suite.path / "tests" / "attest" / "fixtures" / "hello.attest.json").read_bytes() == before


SHARED = """
import agent

def test_hello(attest_replay):
    with attest_replay("shared"):
        assert agent.ask("Say hello") == "Hello!"

def test_bye(attest_replay):
    with attest_replay("shared"):
        assert agent.ask("Say bye") == "Bye!"
"""


def placeholders(interaction: dict) -> set[str]:
    return set(re.findall(r"\{\{id_[0-9]+\}\}", json.dumps(interaction)))


def test_new_keeps_another_tests_recordings_and_continues_the_numbering(suite, monkeypatch):
    suite.makepyfile(test_agent=SHARED)
    path = suite.path / "tests" / "attest" / "fixtures" / "shared.attest.json"
    bye = Reply(body=json.dumps(chat_response("Bye!", ident="chatcmpl-" + "Zz9" * 10)).encode())
    with FakeUpstream([answer("Hello!"), bye]) as upstream:
        run(suite, upstream, monkeypatch, "--attest-record=once", "-k", "hello").assert_outcomes(passed=1)
        (hello,) = fx.model_interactions(fixture_of(suite, "shared"))
        result = run(suite, upstream, monkeypatch, "--attest-record=new", "-k", "bye")
        result.assert_outcomes(passed=1, deselected=1)
        assert f"attest record: 0 replayed, 1 recorded live; wrote {path}" in result.outlines
        assert len(upstream.requests) == 2
    first, second = fx.model_interactions(fixture_of(suite, "shared"))
    assert first == hello  # test_hello's recording is kept, where it was, byte for byte
    assert textwrap.indent(json.dumps(hello, indent=2, sort_keys=True), " " * 6) in path.read_text()
    assert second["request"]["json"]["messages"][0]["content"] == "Say bye"
    assert placeholders(first) == {"{{id_1}}"} and placeholders(second) == {"{{id_2}}"}

    before = path.read_bytes()
    with FakeUpstream([]) as upstream:  # nothing misses: nothing goes live and the file is left alone
        again = run(suite, upstream, monkeypatch, "--attest-record=new")
        again.assert_outcomes(passed=2)
        assert upstream.requests == []
    assert f"attest record: 1 replayed, 0 recorded live; {path} unchanged" in again.outlines
    assert path.read_bytes() == before


def test_in_ci_a_refused_record_mode_is_in_the_failure_and_the_hint_re_runs_the_test(suite, monkeypatch):
    with FakeUpstream([answer("Hello!")]) as upstream:
        run(suite, upstream, monkeypatch, "--attest-record=once").assert_outcomes(passed=1)
    suite.makepyfile(test_agent=TESTS.replace("Say hello", "Say hello again"))
    monkeypatch.setenv("CI", "true")
    monkeypatch.setenv("ATTEST_RECORD", "new")
    with FakeUpstream([]) as upstream:
        refused = run(suite, upstream, monkeypatch, "-q")
        refused.assert_outcomes(failed=1)
        assert upstream.requests == []
    summary = [line for line in refused.outlines if line.startswith("FAILED ")]
    assert summary == [
        "FAILED test_agent.py::test_hello - replay miss: messages changed: messages[0].content (hash "
        + summary[0].split("(hash ", 1)[1].split(")", 1)[0]
        + "); re-record with `pytest --attest-record=all test_agent.py::test_hello`"
    ]
    refusal = (
        "attest record: not recording: CI is set and the record mode came from ATTEST_RECORD=new; "
        "pass --attest-record=new on the pytest command line to record in CI (replaying instead)"
    )
    failures = next(i for i, line in enumerate(refused.outlines) if "FAILURES" in line)
    assert refusal in refused.outlines[failures:]  # in the test's failure, not only in the header


@pytest.mark.parametrize(
    ("variable", "value", "origin"),
    [
        ("ATTEST_RECORD", "once", "ATTEST_RECORD=once"),
        ("PYTEST_ADDOPTS", "--attest-record=once", "--attest-record in addopts"),
    ],
)
def test_in_ci_a_missing_fixture_fails_saying_recording_was_refused(
    suite, monkeypatch, variable, value, origin
):
    monkeypatch.setenv("CI", "true")
    monkeypatch.setenv(variable, value)
    with FakeUpstream([]) as upstream:
        refused = run(suite, upstream, monkeypatch, "-q")
    refused.assert_outcomes(failed=1)
    path = suite.path / "tests" / "attest" / "fixtures" / "hello.attest.json"
    failures = next(i for i, line in enumerate(refused.outlines) if "FAILURES" in line)
    shown = refused.outlines[failures:]
    assert (
        f"{path}: no such fixture; record it with `pytest --attest-record=once test_agent.py::test_hello`"
    ) in shown
    assert (
        f"attest record: not recording: CI is set and the record mode came from {origin}; "
        "pass --attest-record=once on the pytest command line to record in CI (replaying instead)"
    ) in shown


def test_the_hint_after_a_prompt_change_followed_as_printed_leaves_a_clean_fixture(suite, monkeypatch):
    with FakeUpstream([answer("Hello!"), answer("Hello!")]) as upstream:
        run(suite, upstream, monkeypatch, "--attest-record=once").assert_outcomes(passed=1)
        suite.makepyfile(test_agent=TESTS.replace("Say hello", "Say hello, please"))
        missed = run(suite, upstream, monkeypatch, "--attest-record=none", "--attest-replay=strict")
        missed.assert_outcomes(failed=1)
        hint = re.search(r"re-record with `pytest ([^`]*)`", missed.stdout.str())
        assert hint is not None, missed.stdout.str()
        run(suite, upstream, monkeypatch, *hint.group(1).split()).assert_outcomes(passed=1)
        assert len(upstream.requests) == 2
    with FakeUpstream([]) as upstream:
        replayed = run(suite, upstream, monkeypatch, "--attest-record=none", "--attest-replay=strict")
    replayed.assert_outcomes(passed=1)
    assert "attest replay: 1 replayed · 0 live model calls · $0.00" in replayed.outlines  # nothing unused
    (only,) = fx.model_interactions(fixture_of(suite))
    assert only["request"]["json"]["messages"][0]["content"] == "Say hello, please"


CAUGHT = """
import os

import openai

def test_hello(attest_replay):
    with attest_replay("hello"):
        try:
            openai.OpenAI(max_retries=0).chat.completions.create(
                model="gpt-4o-mini", messages=[{"role": "user", "content": "Say goodbye"}]
            )
        except openai.BadRequestError as exc:
            with open(os.environ["CAUGHT"], "w", encoding="utf-8") as out:
                out.write(str(exc))  # what the agent's own error handling sees
            raise
"""

TEST_HINT = "re-record with `pytest --attest-record=all test_agent.py::test_hello`"
SOURCES = {  # how the fixture was made -> the re-record command its miss names
    "recorded by the test": ({}, TEST_HINT),
    "imported": ({"command": [], "imported_from": "tests/cassettes/hello.yaml"}, TEST_HINT),
    "captured from a command": (
        {"command": ["python", "agent.py"]},
        "re-record with `attest capture --refresh hello`",
    ),
}


def test_the_sdks_exception_names_the_re_record_command_that_fits_the_fixture(suite, monkeypatch, tmp_path):
    with FakeUpstream([answer("Hello!")]) as upstream:
        run(suite, upstream, monkeypatch, "--attest-record=once").assert_outcomes(passed=1)
    path = suite.path / "tests" / "attest" / "fixtures" / "hello.attest.json"
    recorded = fx.read_fixture(path)
    suite.makepyfile(test_agent=CAUGHT)  # the agent now asks something else: a miss
    monkeypatch.setenv("CI", "true")
    for how, (source, hint) in SOURCES.items():
        changed = {
            k: v for k, v in recorded["source"].items() if k != "test" or how == "recorded by the test"
        }
        fx.write_fixture(path, {**recorded, "source": {**changed, **source}})
        caught = tmp_path / "caught.txt"
        monkeypatch.setenv("CAUGHT", str(caught))
        suite.runpytest_subprocess().assert_outcomes(failed=1)
        message = caught.read_text(encoding="utf-8")
        assert "replay miss: messages changed" in message, how
        assert hint in message and message.count("re-record with") == 1, (how, message)


def test_a_module_level_client_without_a_key_fails_collection_with_an_attest_line(suite, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY")
    failed = suite.runpytest_subprocess("-q")
    failed.assert_outcomes(errors=1)
    assert (
        "attest: OPENAI_API_KEY is not set and a model client built when the module is imported needs it; "
        "attest gives clients a placeholder key only while an attest_replay block runs: build the client "
        "inside the block, or run with --attest-record=none (ATTEST_RECORD=none), which sets the "
        "placeholder and points the clients at attest from start-up (test_agent.py)"
    ) in failed.outlines
    followed = suite.runpytest_subprocess("-q", "--attest-record=none")
    followed.assert_outcomes(failed=1)  # collected: it fails only because no fixture was recorded yet
    assert not any(line.startswith("attest: OPENAI_API_KEY") for line in followed.outlines)
