"""Drift you can accept: ignore rules in the fixture, a marker and the policy serve a request that
changed only where they allow, and report the change as drift (component and path), never silently."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from attest_toolkit.fixtures import document as fx
from attest_toolkit.fixtures.validation import load_schema
from attest_toolkit.normalize.rules import parse_ignore
from conftest import chat_request, chat_response, exchange, run_cli, scrub, write_fixture

# The code now sends a raised max_tokens and a new reasoning setting; optionally a blank text block
# or another question.
AGENT = """
import os, openai

def ask(question="Say hello", blank=False):
    client = openai.OpenAI(max_retries=0)
    content = [{"type": "text", "text": question}] + ([{"type": "text", "text": " "}] if blank else [])
    reply = client.chat.completions.create(
        model="gpt-4o-mini", max_tokens=4096, reasoning_effort="low",
        messages=[{"role": "system", "content": "You are terse."}, {"role": "user", "content": content}])
    return reply.choices[0].message.content
"""
RECORDED = chat_request(max_tokens=100)
RECORDED["messages"][1]["content"] = [{"type": "text", "text": "Say hello"}]
DRIFT = "replay drift: model call 1: params changed: max_tokens; reasoning_effort added (hash "


def fixture_with(directory: Path, ignore: list[str] | None) -> Path:
    path = write_fixture(directory, "hello", [exchange(RECORDED, chat_response("Hello!"))])
    if ignore is not None:
        doc = fx.read_fixture(path)
        fx.write_fixture(path, {**doc, "match": {"ignore": ignore}})
    return path


@pytest.fixture
def suite(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    scrub(monkeypatch)
    monkeypatch.delenv("CI", raising=False)
    pytester.makepyfile(agent=AGENT)
    return pytester


def fixtures(suite: pytest.Pytester) -> Path:
    return suite.path / "tests" / "attest" / "fixtures"


def run(suite: pytest.Pytester, test: str) -> tuple[pytest.RunResult, dict]:
    suite.makepyfile(test_agent=test)
    result = suite.runpytest_subprocess("--attest-replay=strict", "--attest-report=report.json")
    report = json.loads((suite.path / "report.json").read_text())
    jsonschema.validate(report, load_schema("report-v2.schema.json"))
    return result, report["tests"][0]


PLAIN = """
import agent

def test_hello(attest_replay):
    with attest_replay("hello"):
        assert agent.ask() == "Hello!"
"""


def test_fixture_rules_serve_the_changed_request_and_report_the_drift(suite: pytest.Pytester) -> None:
    fixture_with(fixtures(suite), ["params.max_tokens", "params.reasoning_effort"])
    result, row = run(suite, PLAIN)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([f"attest drift: test_agent.py::test_hello: {DRIFT}*; served the recording"])
    assert row["replay"]["replayed"] == 1 and row["replay"]["drift"] == 1 and row["replay"]["misses"] == 0
    assert row["replay"]["drift_paths"] == ["params.max_tokens", "params.reasoning_effort added"]


def test_without_a_rule_for_every_change_it_is_still_a_miss(suite: pytest.Pytester) -> None:
    fixture_with(fixtures(suite), ["params.max_tokens"])
    result, row = run(suite, PLAIN)
    result.assert_outcomes(failed=1)
    assert row["replay"]["miss"]["paths"] == ["params.max_tokens", "params.reasoning_effort added"]


def test_a_marker_and_the_policy_add_rules(suite: pytest.Pytester) -> None:
    fixture_with(fixtures(suite), None)
    (suite.path / ".attest").mkdir()
    (suite.path / ".attest" / "policy.yml").write_text("match:\n  ignore: [params.reasoning_effort]\n")
    marked = """
import pytest, agent

@pytest.mark.attest_match(ignore=["params.max_tokens", "messages[*].content[?type=text&text= ]"])
def test_hello(attest_replay):
    with attest_replay("hello"):
        assert agent.ask(blank=True) == "Hello!"
"""
    result, row = run(suite, marked)
    result.assert_outcomes(passed=1)
    assert row["replay"]["drift_paths"] == [
        "messages[0].content[1] added",
        "params.max_tokens",
        "params.reasoning_effort added",
    ]
    # A change no rule names still misses.
    result, row = run(suite, marked.replace("ask(blank=True)", 'ask("Say goodbye")'))
    result.assert_outcomes(failed=1)
    assert row["replay"]["miss"]["paths"][0] == "messages[0].content[0].text"


def test_a_bad_rule_is_one_line_naming_where_it_is(suite: pytest.Pytester) -> None:
    path = fixture_with(fixtures(suite), ["max_tokens"])
    result, row = run(suite, PLAIN)
    result.assert_outcomes(failed=1)
    assert row["message"] == (
        f"Failed: {path}: ignore rule 'max_tokens': a path starts with system, messages, tools, params, model"
    )
    assert "Traceback" not in result.stdout.str()

    fixture_with(fixtures(suite), None)
    result, row = run(
        suite,
        PLAIN.replace(
            "def test_hello", "@pytest.mark.attest_match(ignore=['params..x'])\ndef test_hello"
        ).replace("import agent", "import pytest, agent"),
    )
    result.assert_outcomes(failed=1)
    assert row["message"] == (
        "Failed: test_agent.py::test_hello: attest_match marker: ignore rule 'params..x': cannot read it from '..x'"
    )


def test_the_digest_covers_the_rules(tmp_path: Path) -> None:
    path = fixture_with(tmp_path, ["params.max_tokens"])
    assert run_cli(["fixture", "verify", str(path)]).returncode == 0
    doc = json.loads(path.read_text())
    doc["match"]["ignore"].append("messages")  # accept any conversation, behind the reviewer's back
    path.write_text(json.dumps(doc, indent=2))
    tampered = run_cli(["fixture", "verify", str(path)])
    assert tampered.returncode == 3 and "digest does not match the content" in tampered.stderr


@pytest.mark.parametrize(
    "path",
    [
        "params.max_tokens",
        "params.reasoning.summary",
        "messages[*].content[?type=text&text= ]",
        'params["a b"]',
    ],
)
def test_the_issue_s_paths_parse(path: str) -> None:
    assert parse_ignore([path], "here")[0].text == path
