"""The forge-neutral gate's decisions (`attest_toolkit.forge`): which tests run, what the test command
is given, which policy judges the run and how the gate ends. The CLI over them: tests/integration/test_ci.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from attest_toolkit.forge.changes import base_commit
from attest_toolkit.forge.command import RunInputs, command_env, setup_assignments, shell_argv
from attest_toolkit.forge.gate import policy_verdict, run_outputs, worth_telling
from attest_toolkit.forge.selection import Choice, SelectInputs, choose
from attest_toolkit.forge.step import StepFailed
from attest_toolkit.forge.verdict import GateInputs, ending, policy_to_use
from attest_toolkit.forge.verdict_file import Counts, GateVerdict, judge, write_verdict
from attest_toolkit.report.policy import Policy
from conftest import chat_request, chat_response, exchange, git, write_fixture
from report_factory import make_report, make_test, replay_facts

FIX = "tests/attest/fixtures"
TEST = 'def test_{name}(attest_replay):\n    with attest_replay("{name}"):\n        pass\n'


@pytest.mark.parametrize("value", [None, "", "0" * 40])
def test_no_base_is_none_also_for_the_forty_zeros_of_a_push_that_created_its_branch(
    value: str | None,
) -> None:
    assert base_commit(value) is None


def test_a_base_commit_is_kept_as_given() -> None:
    assert base_commit("0" * 39 + "1") == "0" * 39 + "1"


@pytest.mark.parametrize(
    ("inputs", "expected"),
    [
        (
            SelectInputs(select=True, fixtures_available=False),
            Choice("none", "fixtures not available to forks"),
        ),
        (
            SelectInputs(select=False, base="a" * 40),
            Choice("all", "selection is off: running the whole command"),
        ),
        (SelectInputs(select=True), Choice("all", "no base commit to compare with: running everything")),
        (
            SelectInputs(select=True, base="0" * 40, shard="1/3"),
            Choice("all", "no base commit to compare with: running everything"),
        ),
        (SelectInputs(select=True, shard="2/3"), Choice("none", "no base commit: shard 1 runs everything")),
    ],
    ids=["fork without fixtures", "selection off", "no base", "no base, shard 1", "no base, shard 2"],
)
def test_what_runs_without_a_diff(inputs: SelectInputs, expected: Choice) -> None:
    choice = choose(inputs)

    assert choice == expected
    assert choice.runs is (expected.kind != "none")


@pytest.fixture
def repo(tmp_path: Path) -> tuple[Path, str]:
    """Two fixtures with a test each; HEAD re-records `alpha`. Returns the repository and the base."""
    root = tmp_path / "repo"
    (root / "tests").mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    for name in ("alpha", "beta"):
        (root / "tests" / f"test_{name}.py").write_text(TEST.format(name=name), encoding="utf-8")
        write_fixture(root / FIX, name, [exchange(chat_request(name), chat_response("Hi!"))])
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "base")
    base = git(root, "rev-parse", "HEAD").strip()
    write_fixture(root / FIX, "alpha", [exchange(chat_request("alpha"), chat_response("Hello!"))])
    git(root, "commit", "-q", "-am", "re-record alpha")
    return root, base


def test_a_changed_fixture_selects_its_tests_compared_with_head(repo: tuple[Path, str]) -> None:
    root, base = repo
    # An uncommitted file is what the set-up left behind, not a change of the pull request.
    (root / "setup-output.txt").write_text("built\n", encoding="utf-8")

    choice = choose(SelectInputs(select=True, base=base, fixtures_dir=FIX), root)

    assert (choice.kind, choice.tests) == ("some", ("tests/test_alpha.py::test_alpha",))


def test_an_unsharded_whole_suite_runs_the_command_as_it_is(repo: tuple[Path, str]) -> None:
    root, base = repo
    (root / "agent.py").write_text("print('changed')\n", encoding="utf-8")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "a source change")

    unsharded = choose(SelectInputs(select=True, base=base, fixtures_dir=FIX), root)
    sharded = choose(SelectInputs(select=True, base=base, shard="1/1", fixtures_dir=FIX), root)

    assert (unsharded.kind, unsharded.tests) == ("all", ())
    assert sharded.kind == "all" and sharded.tests  # a shard names its tests


def test_a_base_missing_from_the_checkout_stops_the_step_saying_to_fetch_it(repo: tuple[Path, str]) -> None:
    root, _ = repo

    with pytest.raises(StepFailed) as caught:
        choose(SelectInputs(select=True, base="1" * 40, fixtures_dir=FIX), root)

    assert caught.value.exit_code == 3
    assert str(caught.value).startswith("attest select failed: ")
    assert str(caught.value).endswith("check out with fetch-depth: 0")


def test_the_command_gets_the_replay_mode_and_report_and_never_the_store_keys() -> None:
    environ = {
        "PATH": "/usr/bin",
        "PYTEST_ADDOPTS": "-x",
        "OBJECT_STORE_SECRET_KEY": "k",
        "OBJECT_STORE_ACCESS_KEY": "a",
    }

    env = command_env(RunInputs("pytest", mode="auto"), Path("/w/attest-report.json"), environ)

    assert "OBJECT_STORE_SECRET_KEY" not in env and "OBJECT_STORE_ACCESS_KEY" not in env
    assert (env["CI"], env["ATTEST_REPLAY"], env["ATTEST_REPORT"]) == (
        "true",
        "auto",
        "/w/attest-report.json",
    )
    assert env["PYTEST_ADDOPTS"] == "-x --attest-report=/w/attest-report.json"
    assert command_env(RunInputs("pytest"), Path("/r"), {})["PYTEST_ADDOPTS"] == "--attest-report=/r"


def test_the_setup_gives_the_command_its_path_first_then_its_variables() -> None:
    inputs = RunInputs(
        "pytest", setup_env={"GREETING": "hello\nworld", "PLAIN": "a=b"}, setup_path=["/b", "/a"]
    )

    assert setup_assignments(inputs, {"PATH": "/usr/bin"}) == [
        "PATH=/b:/a:/usr/bin",
        "GREETING=hello\nworld",
        "PLAIN=a=b",
    ]
    assert setup_assignments(RunInputs("pytest"), {"PATH": "/usr/bin"}) == []


def test_selected_ids_are_arguments_of_the_command_never_part_of_its_line() -> None:
    inputs = RunInputs("pytest -q", tests=("tests/test_a.py::test_x[$(touch pwned)]",))

    assert shell_argv("bash", inputs) == [
        "bash",
        "-c",
        'pytest -q "$@"',
        "attest-command",
        "tests/test_a.py::test_x[$(touch pwned)]",
    ]


@pytest.mark.parametrize(
    ("given", "exists", "chosen"),
    [
        (".attest/policy.yml", False, None),  # the default may be absent: built-in defaults
        (".attest/policy.yml", True, ".attest/policy.yml"),
        ("policies/strict.yml", False, "policies/strict.yml"),  # a named one must exist: policy says so
    ],
)
def test_the_policy_file_the_gate_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, given: str, exists: bool, chosen: str | None
) -> None:
    monkeypatch.chdir(tmp_path)
    if exists:
        (tmp_path / given).parent.mkdir(parents=True)
        (tmp_path / given).write_text("version: 1\n", encoding="utf-8")

    assert policy_to_use(given) == chosen


def test_nothing_affected_passes_and_says_why() -> None:
    end = ending(GateInputs(ran=False, reason="no fixture of the change is used"))

    assert (end.verdict, end.exit_code) == ("pass", 0)
    assert end.line == "attest: nothing to run: no fixture of the change is used"
    assert end.outputs == {
        "replayed": "0",
        "live": "0",
        "cost": "0",
        "misses": "0",
        "verdict": "pass",
        "comment-url": "",
        "summary": end.line,
        "report": "",
    }


def test_a_fork_without_the_fixtures_is_not_evaluated_exit_2() -> None:
    end = ending(GateInputs(ran=False, reason="fixtures not available to forks", fixtures_available=False))

    assert (end.verdict, end.exit_code) == ("not_evaluated", 2)
    assert end.line == (
        "attest: not evaluated: fixtures not available to forks"
        " (the object store's secrets are not given to forks)"
    )


@pytest.mark.parametrize(
    ("verdict", "code", "expected"),
    [
        ("pass", "0", ("pass", 0)),
        ("blocked", "1", ("blocked", 1)),
        ("error", "3", ("error", 3)),
        ("", "", ("error", 3)),
    ],
)
def test_a_run_ends_with_the_policy_steps_verdict(
    tmp_path: Path, verdict: str, code: str, expected: tuple[str, int]
) -> None:
    # The policy step's file ("": a step that reached no verdict, written as the error it is).
    counts = Counts(replayed=4, live=0, cost_usd=0.0, misses=0)
    found = GateVerdict(verdict or "error", int(code or 3), "p", (), counts, "4 replayed", "/r.json")
    write_verdict(tmp_path / "verdict.json", found)
    inputs = GateInputs(ran=True, verdict=tmp_path / "verdict.json")

    end = ending(inputs)

    assert (end.verdict, end.exit_code) == expected
    assert (end.outputs["replayed"], end.outputs["summary"], end.outputs["report"]) == (
        "4",
        "4 replayed",
        "/r.json",
    )


def test_the_outputs_a_run_ends_with() -> None:
    report = make_report([make_test("tests/test_a.py::test_ok", replay=replay_facts(3))])

    outputs = run_outputs(judge(report, Policy()), "https://github.com/o/r/pull/1#issuecomment-1")

    assert outputs == {
        "replayed": "3",
        "live": "0",
        "cost": "0",
        "misses": "0",
        "verdict": "pass",
        "comment-url": "https://github.com/o/r/pull/1#issuecomment-1",
        "summary": "3 replayed · 0 live model calls · $0.00",
    }


def test_a_clean_run_has_nothing_to_tell_a_reviewer_a_miss_or_a_re_recorded_fixture_has() -> None:
    clean = make_report([make_test("tests/test_a.py::test_ok", replay=replay_facts(3))])
    missed = make_report(
        [make_test("tests/test_a.py::test_miss", "failed", replay=replay_facts(0, misses=1))]
    )

    assert not worth_telling(clean, judge(clean, Policy()), None)
    assert worth_telling(clean, judge(clean, Policy()), [{"name": "alpha"}])
    assert worth_telling(missed, judge(missed, Policy()), None)


def test_a_verdict_is_shown_only_with_a_policy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    report = make_report()

    assert policy_verdict(report, None) is None
    (tmp_path / ".attest").mkdir()
    (tmp_path / ".attest" / "policy.yml").write_text("version: 1\nfailures: allow\n", encoding="utf-8")
    verdict = policy_verdict(report, None)
    assert verdict is not None and verdict.policy.endswith("policy.yml")
