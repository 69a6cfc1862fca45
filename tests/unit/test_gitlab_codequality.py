"""`attest report codequality`: a report's misses and live calls as GitLab's Code Quality report."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from attest_toolkit.gitlab.codequality import issues
from attest_toolkit.report.build import write_report
from conftest import git, run_cli
from jsonschema import Draft7Validator
from report_factory import make_miss, make_report, make_test, replay_facts

# GitLab's documented subset of the CodeClimate format, as
# https://docs.gitlab.com/ci/testing/code_quality/#code-quality-report-format lists it: an array of
# issues, each with these required fields; severity one of info, minor, major, critical, blocker.
CODE_QUALITY_SCHEMA: dict[str, Any] = {
    "type": "array",
    "items": {
        "type": "object",
        "required": ["description", "check_name", "fingerprint", "severity", "location"],
        "properties": {
            "description": {"type": "string", "minLength": 1},
            "check_name": {"type": "string", "minLength": 1},
            "fingerprint": {"type": "string", "minLength": 1},
            "severity": {"enum": ["info", "minor", "major", "critical", "blocker"]},
            "location": {
                "type": "object",
                "required": ["path", "lines"],
                "properties": {
                    "path": {"type": "string", "minLength": 1, "not": {"pattern": "^/"}},
                    "lines": {
                        "type": "object",
                        "required": ["begin"],
                        "properties": {"begin": {"type": "integer", "minimum": 1}},
                    },
                },
            },
        },
    },
}


def miss_row(n: int, *, component: str = "messages", line: int = 41, live: int = 0) -> dict[str, Any]:
    facts = replay_facts(
        2, live=live, misses=1, miss=make_miss(f"miss {n}", component, "agent/core.py", line)
    )
    return make_test(f"tests/test_agent.py::test_{n}", "failed", line=10 + n, replay=facts)


def live_row(n: int) -> dict[str, Any]:
    return make_test(
        f"tests/test_agent.py::test_live_{n}", "passed", replay=replay_facts(1, live=2, cost=0.01)
    )


def test_one_issue_per_miss_and_per_test_with_live_calls_valid_against_gitlabs_format() -> None:
    found = issues(make_report([miss_row(1), live_row(2), make_test("tests/test_agent.py::test_ok")]))
    assert not list(Draft7Validator(CODE_QUALITY_SCHEMA).iter_errors(found))
    assert [
        (i["check_name"], i["severity"], i["location"]["path"], i["location"]["lines"]["begin"])
        for i in found
    ] == [
        ("attest-replay-miss", "major", "agent/core.py", 41),
        ("attest-live-call", "minor", "tests/test_agent.py", 10),
    ]
    assert found[0]["description"].startswith(
        "attest replay miss (messages) in tests/test_agent.py::test_1: miss 1"
    )


def test_a_fingerprint_survives_a_moved_line_another_duration_and_another_commit() -> None:
    before = make_report([miss_row(1, line=41), live_row(2)])
    after = copy.deepcopy(before)
    for test in after["tests"]:
        test["duration"] = 9.5
        test["line"] = (test["line"] or 0) + 30
        if test["replay"].get("miss"):
            test["replay"]["miss"]["location"]["line"] = 99
    after["summary"]["environment"]["commit"] = "f" * 40
    assert [i["fingerprint"] for i in issues(before)] == [i["fingerprint"] for i in issues(after)]


def test_a_fingerprint_changes_with_what_the_finding_is() -> None:
    base = issues(make_report([miss_row(1)]))[0]["fingerprint"]
    other_component = issues(make_report([miss_row(1, component="tools")]))[0]["fingerprint"]
    other_test = issues(make_report([miss_row(2)]))[0]["fingerprint"]
    assert len({base, other_component, other_test}) == 3


def test_paths_are_from_the_repository_root(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q", "-b", "main")
    project = tmp_path / "agent"
    project.mkdir()
    report = write_report(make_report([miss_row(1), live_row(2)]), project / "r.json")
    done = run_cli(["report", "codequality", "--report", str(report), "--output", "gl.json"], cwd=project)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "attest: 2 Code Quality issue(s) written to gl.json\n"
    found = json.loads((project / "gl.json").read_text(encoding="utf-8"))
    assert [i["location"]["path"] for i in found] == ["agent/agent/core.py", "agent/tests/test_agent.py"]


def test_a_credential_in_a_miss_never_reaches_the_report() -> None:
    key = "sk-proj-" + "C0de_Qual1ty_K3y_" * 2
    row = miss_row(1)
    row["replay"]["miss"]["message"] = f"header Authorization: Bearer {key}"
    assert key not in json.dumps(issues(make_report([row])))


def test_a_malformed_report_is_one_line_and_exit_3(tmp_path: Path) -> None:
    (tmp_path / "r.json").write_text("{", encoding="utf-8")
    done = run_cli(["report", "codequality", "--report", "r.json", "--output", "gl.json"], cwd=tmp_path)
    assert done.returncode == 3
    [line] = done.stderr.splitlines()
    assert line.startswith("attest: ") and "r.json" in line
    assert not (tmp_path / "gl.json").exists()
