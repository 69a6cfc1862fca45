"""Fixture freshness: each replayed fixture's recording time and models in report-v2, the policy's
`max_fixture_age_days` rule (`stale: warn | block`), and the comment's table of replayed fixtures."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from attest_toolkit.fixtures import document as fx
from attest_toolkit.report.build import build_report, merge_reports
from attest_toolkit.report.policy import evaluate, parse_policy
from attest_toolkit.report.summary import render
from conftest import chat_request, chat_response, exchange, run_cli, write_fixture
from report_factory import ISOLATED, make_report, make_test, replay_facts

OLD = "tests/attest/fixtures/old.attest.json"
NEW = "tests/attest/fixtures/new.attest.json"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Two fixtures: one recorded on 2026-01-01 by gpt-4o (answered by a dated model), one today."""
    directory = tmp_path / "tests" / "attest" / "fixtures"
    directory.mkdir(parents=True)
    old = write_fixture(
        directory, "old", [exchange(chat_request(model="gpt-4o"), chat_response(model="gpt-4o-2024-08-06"))]
    )
    doc = json.loads(old.read_text())
    doc["source"]["recorded_at"] = "2026-01-01T00:00:00Z"
    doc["digest"] = fx.canonical_digest(doc)
    old.write_text(fx.dumps(doc))
    write_fixture(directory, "new", [exchange(chat_request(), chat_response())])
    monkeypatch.chdir(tmp_path)
    return tmp_path


def rows() -> list[dict]:
    return [
        make_test("tests/test_a.py::test_old", "passed", replay=replay_facts(1, fixtures=[OLD])),
        make_test("tests/test_b.py::test_new", "passed", replay=replay_facts(1, fixtures=[NEW])),
    ]


def test_the_report_records_when_each_replayed_fixture_was_recorded_and_which_model_answered(project: Path):
    report = build_report(rows(), egress=dict(ISOLATED))
    assert report["summary"]["fixtures"][OLD] == {
        "recorded_at": "2026-01-01T00:00:00Z",
        "models": ["gpt-4o → gpt-4o-2024-08-06"],
    }
    assert set(report["summary"]["fixtures"]) == {OLD, NEW}
    # shards keep every fixture they saw
    merged = merge_reports([report, build_report(rows()[1:], egress=dict(ISOLATED))])
    assert set(merged["summary"]["fixtures"]) == {OLD, NEW}


def test_a_fixture_path_outside_the_repository_is_not_read(project: Path):
    secret = project.parent / "elsewhere.attest.json"
    secret.write_text(json.dumps({"source": {"recorded_at": "2026-01-01T00:00:00Z"}, "channels": {}}))
    tests = [
        make_test(
            "tests/test_a.py::t",
            "passed",
            replay=replay_facts(1, fixtures=["../elsewhere.attest.json", str(secret)]),
        )
    ]
    assert "fixtures" not in build_report(tests, egress=dict(ISOLATED))["summary"]


def policy(**settings) -> object:
    return parse_policy(settings, "policy.yml")


def test_max_fixture_age_days_warns_by_default_and_names_the_tests(project: Path):
    report = build_report(rows(), egress=dict(ISOLATED))
    verdict = evaluate(report, policy(max_fixture_age_days=30))
    [rule] = [r for r in verdict.rules if r.rule == "max_fixture_age_days"]
    assert verdict.verdict == "pass"
    assert rule.status == "ok" and rule.tests == ["tests/test_a.py::test_old"]
    assert rule.actual >= 334 and rule.detail == "warning: 1 fixture(s) older than 30 days"


def test_stale_block_blocks_and_an_override_can_relax_it(project: Path):
    report = build_report(rows(), egress=dict(ISOLATED))
    assert evaluate(report, policy(max_fixture_age_days=30, stale="block")).verdict == "blocked"
    relaxed = policy(
        max_fixture_age_days=30,
        stale="block",
        overrides=[{"paths": ["tests/test_a.py"], "max_fixture_age_days": 400}],
    )
    assert evaluate(report, relaxed).verdict == "pass"


def test_the_rule_is_off_by_default_and_unknown_ages_are_said(project: Path):
    report = build_report(rows(), egress=dict(ISOLATED))
    assert "max_fixture_age_days" not in {r.rule for r in evaluate(report, policy()).rules}
    bare = make_report(rows())  # a report made elsewhere, without the fixtures' facts
    [rule] = [
        r
        for r in evaluate(bare, policy(max_fixture_age_days=1, stale="block")).rules
        if r.rule == "max_fixture_age_days"
    ]
    assert rule.status == "ok" and rule.detail == "2 fixture(s) of unknown age"


def test_a_bad_stale_value_is_one_line_and_exit_3(project: Path):
    (project / "policy.yml").write_text("max_fixture_age_days: 30\nstale: sometimes\n")
    report = project / "r.json"
    report.write_text(json.dumps(build_report(rows(), egress=dict(ISOLATED))))
    done = run_cli(
        ["policy", "evaluate", "--report", str(report), "--policy", "policy.yml"],
        cwd=project,
        env={**os.environ},
    )
    assert done.returncode == 3
    assert done.stderr.count("\n") == 1 and "policy.yml" in done.stderr and "stale" in done.stderr


def test_the_comment_lists_replayed_fixtures_oldest_first_with_their_models(project: Path):
    comment = render(build_report(rows(), egress=dict(ISOLATED)), "markdown")
    section = comment[comment.index("### Fixtures replayed (2)") :].splitlines()
    assert section[2] == "| Fixture | Recorded | Models (asked → answered) |"
    assert (
        section[4].startswith("| `old` | 2026-01-01 (")
        and "days ago) | `gpt-4o → gpt-4o-2024-08-06` |" in section[4]
    )
    assert section[5].startswith("| `new` | ")


def test_the_report_names_the_model_bedrock_calls_name_in_their_path(project: Path):
    """Converse and InvokeModel bodies do not name the model: Bedrock's path does (/model/{modelId}/...)."""
    converse = {"messages": [{"role": "user", "content": [{"text": "Hi"}]}]}
    reply = {
        "output": {"message": {"role": "assistant", "content": [{"text": "Hi!"}]}},
        "stopReason": "end_turn",
    }
    calls = [
        exchange(converse, reply, path="/model/us.amazon.nova-pro-v1:0/converse"),
        exchange(converse, reply, path="/model/anthropic.claude-3-5-haiku-20241022-v1:0/invoke"),
    ]
    write_fixture(project / "tests" / "attest" / "fixtures", "bedrock", calls, "bedrock")
    path = "tests/attest/fixtures/bedrock.attest.json"
    row = make_test("tests/test_c.py::test_bedrock", "passed", replay=replay_facts(2, fixtures=[path]))
    report = build_report([row], egress=dict(ISOLATED))
    assert report["summary"]["fixtures"][path]["models"] == [  # in the labels' alphabet (`:` as `_`)
        "us.amazon.nova-pro-v1_0",
        "anthropic.claude-3-5-haiku-20241022-v1_0",
    ]
