"""Flaky agents: `attest replay --repeat N` and `pytest --attest-repeat N` replay the same run several
times and name what sent a different sequence of requests, with the official openai SDK."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import jsonschema
import pytest
from attest_toolkit.fixtures.validation import load_schema
from attest_toolkit.replay.repeat import base_id, divergence
from attest_toolkit.report.summary import render
from conftest import chat_request, chat_response, clean_env, exchange, run_cli, scrub, write_fixture

# Asks two questions; with FLIP_FILE set, in the other order on every second run (a flaky agent:
# think parallel tool calls whose answers arrive in any order).
AGENT = """
import os, sys
from pathlib import Path
import openai

questions = ["question A", "question B"]
state = os.environ.get("FLIP_FILE")
if state:
    runs = int(Path(state).read_text() or 0) if Path(state).exists() else 0
    Path(state).write_text(str(runs + 1))
    if runs % 2:
        questions.reverse()
client = openai.OpenAI(max_retries=0)
for q in questions:
    client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": q}])
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    write_fixture(
        tmp_path / "fixtures",
        "two",
        [
            exchange(chat_request(q, system=None), chat_response(f"answer {q}"))
            for q in ("question A", "question B")
        ],
    )
    (tmp_path / "agent.py").write_text(AGENT, encoding="utf-8")
    return tmp_path


def replay(project: Path, repeat: str, **env: str):
    argv = ["replay", "--name", "two", "--fixtures-dir", "fixtures", "--mode", "strict", "--repeat", repeat]
    return run_cli([*argv, "--", sys.executable, "agent.py"], cwd=project, env=clean_env(**env))


def test_a_deterministic_agent_repeats_the_same_requests(project: Path):
    done = replay(project, "3")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines.count("attest replay: 2 replayed · 0 live model calls · $0.00") == 3
    assert lines[-1] == "attest replay: repeated 3 times: the same requests in every run"


def test_an_agent_whose_requests_change_order_is_named_flaky_and_exits_2(project: Path):
    done = replay(project, "2", FLIP_FILE=str(project / "runs"))
    # every run hits its recordings (identical requests are found by key, in any order)...
    assert done.stdout.splitlines().count("attest replay: 2 replayed · 0 live model calls · $0.00") == 2
    # ...but the sequence differed, which CI would meet as a miss by chance
    assert done.returncode == 2
    assert (
        "attest replay: flaky: the request keys differ between run 1 and run 2 at model call 1" in done.stderr
    )


def test_divergence_names_the_first_differing_call_or_the_counts():
    assert divergence([["a", "b"], ["a", "b"], ["a", "b"]]) is None
    assert (
        divergence([["a", "b"], ["a", "c"]])
        == "the request keys differ between run 1 and run 2 at model call 2"
    )
    assert divergence([["a"], ["a"], ["a", "b"]]) == "run 1 made 1 model calls and run 3 made 2"
    assert base_id("tests/t.py::test_x[attest-run2]") == ("tests/t.py::test_x", 2)
    assert base_id("tests/t.py::test_x[p1-attest-run3]") == ("tests/t.py::test_x[p1]", 3)
    assert base_id("tests/t.py::test_x[attest-run1-p1]") == ("tests/t.py::test_x[p1]", 1)
    assert base_id("tests/t.py::test_x[p1-attest-run2-p2]") == ("tests/t.py::test_x[p1-p2]", 2)
    assert base_id("tests/t.py::test_x[p1]") == ("tests/t.py::test_x[p1]", None)


PYTEST_AGENT = """
import itertools, openai
RUNS = itertools.count()

def ask(flip):
    questions = ["question A", "question B"]
    if flip and next(RUNS) % 2:
        questions.reverse()
    client = openai.OpenAI(max_retries=0)
    for q in questions:
        client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": q}])
"""

PYTEST_TESTS = """
import agent

def test_steady(attest_replay):
    with attest_replay("two"):
        agent.ask(flip=False)

def test_flaky(attest_replay):
    with attest_replay("two"):
        agent.ask(flip=True)
"""


def test_pytest_attest_repeat_names_the_flaky_test_in_the_terminal_the_report_and_the_comment(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
):
    scrub(monkeypatch)
    write_fixture(
        pytester.path / "tests" / "attest" / "fixtures",
        "two",
        [
            exchange(chat_request(q, system=None), chat_response(f"answer {q}"))
            for q in ("question A", "question B")
        ],
    )
    pytester.makepyfile(agent=PYTEST_AGENT, test_agent=PYTEST_TESTS)
    result = pytester.runpytest_subprocess(
        "--attest-replay=strict", "--attest-repeat=3", "--attest-report=report.json", "-p", "no:randomly"
    )
    result.assert_outcomes(passed=6)
    flaky = "the request keys differ between run 1 and run 2 at model call 1"
    result.stdout.fnmatch_lines([f"attest repeat: flaky: test_agent.py::test_flaky: {flaky}"])
    assert "test_steady" not in "".join(line for line in result.outlines if line.startswith("attest repeat"))
    report = json.loads((pytester.path / "report.json").read_text())
    jsonschema.validate(report, load_schema("report-v2.schema.json"))
    rows = {row["id"]: row for row in report["tests"]}
    assert sorted(rows) == sorted(
        f"test_agent.py::test_{t}[attest-run{n}]" for t in ("steady", "flaky") for n in (1, 2, 3)
    )
    assert all("flaky" in rows[f"test_agent.py::test_flaky[attest-run{n}]"]["replay"] for n in (1, 2, 3))
    assert not any("flaky" in rows[f"test_agent.py::test_steady[attest-run{n}]"]["replay"] for n in (1, 2, 3))
    comment = render(report, "markdown")
    section = comment[comment.index("### Flaky agents (1)") :].splitlines()
    assert section[6] == f"| `test_agent.py::test_flaky` | `{flaky}` |"


# Each run asks something new: every run misses, each with a request of its own (on two workers).
MISSING_TESTS = """
import openai

def test_drifting(attest_replay, attest_run):
    with attest_replay("two"):
        client = openai.OpenAI(max_retries=0)
        client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": f"question {attest_run}"}]
        )
"""


def test_a_repeated_test_that_misses_differently_each_run_is_flaky_in_the_report_as_on_the_terminal(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
):
    scrub(monkeypatch)
    write_fixture(
        pytester.path / "tests" / "attest" / "fixtures",
        "two",
        [exchange(chat_request("question A", system=None), chat_response("answer A"))],
    )
    pytester.makepyfile(test_agent=MISSING_TESTS)
    result = pytester.runpytest_subprocess(
        "--attest-replay=strict", "--attest-repeat=3", "--attest-report=report.json", "-n", "2"
    )
    result.assert_outcomes(failed=3)
    flaky = "the request keys differ between run 1 and run 2 at model call 1"
    result.stdout.fnmatch_lines([f"attest repeat: flaky: test_agent.py::test_drifting: {flaky}"])
    report = json.loads((pytester.path / "report.json").read_text())
    jsonschema.validate(report, load_schema("report-v2.schema.json"))
    rows = [row for row in report["tests"] if row["id"].startswith("test_agent.py::test_drifting")]
    assert len(rows) == 3
    assert [row["replay"].get("flaky") for row in rows] == [flaky] * 3


# Each shape a repeated test takes, every run missing with a request of its own: parametrized (pytest puts
# the run's id before the test's own), in a class, the block held by a fixture; and one test that repeats
# the same request, which is no flaky agent.
SHAPES = """
import openai, pytest

def ask(content, attest_replay):
    with attest_replay("two"):
        client = openai.OpenAI(max_retries=0)
        client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": content}])

@pytest.mark.parametrize("who", ["x", "y"])
def test_param(attest_replay, attest_run, who):
    ask(f"question {who} {attest_run}", attest_replay)

class TestShapes:
    def test_method(self, attest_replay, attest_run):
        ask(f"question {attest_run}", attest_replay)

@pytest.fixture
def held(attest_replay, attest_run):
    with attest_replay("two"):
        yield attest_run

def test_held(held):
    client = openai.OpenAI(max_retries=0)
    client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": f"q {held}"}])

def test_steady(attest_replay):
    ask("question B", attest_replay)
"""


@pytest.mark.parametrize(
    "mode", [["--attest-replay=strict"], ["--attest-replay=strict", "-n", "2"], ["--attest-replay=auto"]]
)
def test_the_terminal_and_report_v2_name_the_same_flaky_tests_in_every_shape_and_mode(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, mode: list[str]
):
    scrub(monkeypatch)
    write_fixture(
        pytester.path / "tests" / "attest" / "fixtures",
        "two",
        [exchange(chat_request("question A", system=None), chat_response("answer A"))],
    )
    pytester.makepyfile(test_agent=SHAPES)
    result = pytester.runpytest_subprocess(*mode, "--attest-repeat=3", "--attest-report=report.json")
    # each run misses: strict fails it; auto with no key leaves it not evaluated
    assert result.parseoutcomes() == ({"failed": 15} if "strict" in mode[0] else {"skipped": 15})
    prefix = "attest repeat: flaky: "
    on_terminal = {line.removeprefix(prefix) for line in result.outlines if line.startswith(prefix)}
    report = json.loads((pytester.path / "report.json").read_text())
    in_report = {
        f"{base_id(row['id'])[0]}: {row['replay']['flaky']}"
        for row in report["tests"]
        if "flaky" in row["replay"]
    }
    flaky = "the request keys differ between run 1 and run 2 at model call 1"
    own = ["test_param[x]", "test_param[y]", "TestShapes::test_method", "test_held"]
    assert on_terminal == in_report == {f"test_agent.py::{test}: {flaky}" for test in own}
    assert sum("flaky" in row["replay"] for row in report["tests"]) == 12
