"""A miss (and drift) names every changed component and the paths that changed in it, never a value:
in the failing test's line, in report-v2's `miss.paths` and in the pull-request summary."""

from __future__ import annotations

import json

import jsonschema
import pytest
from attest_toolkit.fixtures.validation import load_schema
from attest_toolkit.normalize.paths import changed_paths
from conftest import chat_response, clean_env, exchange, run_cli, scrub, write_fixture

RECORDED = {
    "model": "gpt-4o-mini",
    "max_tokens": 100,
    "messages": [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Describe the picture."},
        {"role": "assistant", "content": "A cat."},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "secret-looking text stays out"},
                {"type": "image_url", "image_url": {"url": "https://example.test/cat.png"}},
            ],
        },
    ],
}

# The code now: a raised max_tokens, a new reasoning setting, the content blocks swapped, one more message.
AGENT = """
import openai

def ask():
    client = openai.OpenAI(max_retries=0)
    return client.chat.completions.create(
        model="gpt-4o-mini",
        max_tokens=4096,
        reasoning_effort="low",
        messages=[
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": "Describe the picture."},
            {"role": "assistant", "content": "A cat."},
            {"role": "user", "content": [
                {"type": "image_url", "image_url": {"url": "https://example.test/cat.png"}},
                {"type": "text", "text": "secret-looking text stays out"},
            ]},
            {"role": "user", "content": "And the colour?"},
        ],
    )
"""

TEST = """
import agent

def test_picture(attest_replay):
    with attest_replay("picture"):
        agent.ask()
"""


@pytest.fixture
def suite(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    scrub(monkeypatch)
    monkeypatch.delenv("CI", raising=False)
    pytester.makepyfile(agent=AGENT, test_agent=TEST)
    write_fixture(
        pytester.path / "tests" / "attest" / "fixtures",
        "picture",
        [exchange(RECORDED, chat_response("A cat."))],
    )
    return pytester


def test_the_miss_line_names_each_changed_component_and_its_paths(suite: pytest.Pytester) -> None:
    result = suite.runpytest_subprocess("--attest-replay=strict", "--attest-report=report.json")
    result.assert_outcomes(failed=1)
    line = next(
        x for x in result.outlines if x.startswith("E   replay miss:") or x.startswith("replay miss:")
    )
    line = line.removeprefix("E   ")
    assert line.startswith(
        "replay miss: messages changed: messages[2].content[0..1] reordered; messages[3] added (hash "
    )
    assert "; params changed: max_tokens; reasoning_effort added (hash " in line
    assert line.endswith("; re-record with `attest capture --refresh picture`")
    assert "secret-looking" not in result.stdout.str() and "4096" not in line and "colour" not in line

    report = json.loads((suite.path / "report.json").read_text())
    jsonschema.validate(report, load_schema("report-v2.schema.json"))
    miss = report["tests"][0]["replay"]["miss"]
    assert miss["component"] == "messages"
    assert miss["paths"] == [
        "messages[2].content[0..1] reordered",
        "messages[3] added",
        "params.max_tokens",
        "params.reasoning_effort added",
    ]

    summary = run_cli(["report", "summary", "--report", "report.json", "--format", "json"], cwd=suite.path)
    shown = json.loads(summary.stdout)["misses"][0]
    assert shown["paths"] == miss["paths"] and shown["message"] == line


def test_lenient_drift_names_the_paths_too(suite: pytest.Pytester) -> None:
    result = suite.runpytest_subprocess(
        "--attest-replay=strict", "--attest-match=lenient", "--attest-report=report.json"
    )
    result.assert_outcomes(passed=1)
    drift = json.loads((suite.path / "report.json").read_text())["tests"][0]["replay"]["drift_message"]
    assert drift.startswith(
        "replay drift: model call 1: messages changed: messages[2].content[0..1] reordered"
    )
    assert drift.endswith(
        "params changed: max_tokens; reasoning_effort added (hash " + drift.split("(hash ")[-1]
    )


@pytest.mark.parametrize(
    ("before", "after", "paths"),
    [
        ({"a": 1, "b": {"c": 1}}, {"a": 2, "b": {"c": 1, "d": 0}}, ["params.a", "params.b.d added"]),
        ([1, 2, 3], [1, 3], ["params[1] removed"]),
        ([1, 2], [1, 2, 3, 4], ["params[2..3] added"]),
        ({"odd key": 1}, {"odd key": 1.0}, ['params["odd key"]']),
        ({"x": True}, {"x": 1}, ["params.x"]),
        ({"x": [{"k": 1}, {"k": 2}]}, {"x": [{"k": 1}, {"k": 3}]}, ["params.x[1].k"]),
    ],
)
def test_paths_name_where_values_differ(before: object, after: object, paths: list[str]) -> None:
    assert changed_paths("params", before, after) == paths


def test_attest_diff_shows_both_requests_side_by_side_locally_redacted(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = "sk-proj-" + "k" * 48
    monkeypatch.setenv("OPENAI_API_KEY", key)  # auto mode would go live with it: strict never does
    suite.makepyfile(
        agent=AGENT.replace('"And the colour?"', f'"And the colour? {key}"'),
    )
    result = suite.runpytest_subprocess("--attest-replay=strict", "--attest-diff")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "attest diff: recorded | sent" in out
    result.stdout.fnmatch_lines(["*recorded*sent", '*"max_tokens": 100,*|*"max_tokens": 4096,*'])
    assert key not in out and "And the colour?" in out

    kept = suite.path / "tests" / "attest" / "fixtures" / ".last-miss"
    assert (kept / ".gitignore").read_text().splitlines()[-1] == "*"
    shown = run_cli(["fixture", "diff", "picture", "--last-miss"], cwd=suite.path)
    assert shown.returncode == 0, shown.stderr
    assert "picture.attest.json, model call 1: replay miss: messages changed" in shown.stdout
    assert key not in shown.stdout and key not in (kept / "picture.json").read_text()

    in_ci = run_cli(["fixture", "diff", "picture", "--last-miss"], cwd=suite.path, env=clean_env(CI="true"))
    assert in_ci.returncode == 3 and in_ci.stdout == ""
    assert in_ci.stderr.strip().endswith("not shown with CI set (a CI log is shared); run it locally")


def test_with_ci_set_nothing_is_kept_and_no_diff_is_shown(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CI", "true")
    result = suite.runpytest_subprocess("--attest-replay=strict", "--attest-diff")
    result.assert_outcomes(failed=1)
    assert "attest diff" not in result.stdout.str() and '"max_tokens"' not in result.stdout.str()
    assert not (suite.path / "tests" / "attest" / "fixtures" / ".last-miss").exists()
    shown = run_cli(["fixture", "diff", "picture", "--last-miss"], cwd=suite.path)
    assert shown.returncode == 3 and "no miss kept for this fixture" in shown.stderr
