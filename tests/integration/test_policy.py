"""The policy gate: every rule blocks and passes, overrides by path, the file, and the CLI's exit codes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import typer
from attest_toolkit.cli import policy as policy_cli
from attest_toolkit.cli import run
from attest_toolkit.report.policy import PolicyError, Verdict, evaluate, glob_regex, load_policy, parse_policy
from conftest import run_cli
from report_factory import make_miss, make_report, make_test, replay_facts

GUARDED = {"mode": "guard", "isolation_verified": False, "probe": None, "strategy": None}


def cli(argv: list[str]) -> int:
    app = typer.Typer()
    policy_cli.register(app)
    return run(app, argv)


def verdict_of(tests: list[dict[str, Any]], policy: dict[str, Any] | None = None, **summary: Any) -> Verdict:
    return evaluate(make_report(tests, **summary), parse_policy(policy or {}))


def rule(verdict: Verdict, name: str, scope: str = "policy") -> dict[str, Any]:
    return next(r.to_dict() for r in verdict.rules if r.rule == name and r.scope.startswith(scope))


def passing(test_id: str = "tests/test_a.py::test_ok", **replay: Any) -> dict[str, Any]:
    return make_test(test_id, replay=replay_facts(1, **replay))


# --- the verdict on a report with every outcome --------------------------------------------------


def test_default_policy_on_every_outcome_blocks_on_the_failures_and_the_strict_miss() -> None:
    verdict = evaluate(make_report(), load_policy(None, root=Path("/nonexistent")))
    assert verdict.verdict == "blocked"
    assert verdict.exit_code == 1
    assert rule(verdict, "failures")["tests"] == [
        "tests/test_refund.py::test_strict_miss",
        "tests/test_refund.py::test_errors",
    ]
    assert rule(verdict, "misses")["tests"] == ["tests/test_refund.py::test_strict_miss"]
    assert rule(verdict, "not_evaluated")["status"] == "not_evaluated"
    assert rule(verdict, "max_live_calls")["ok"] is True
    assert verdict.policy == "built-in defaults"


def test_every_outcome_passes_when_failures_misses_and_not_evaluated_are_allowed() -> None:
    policy = {"failures": "allow", "misses": "allow", "not_evaluated": "allow"}
    verdict = evaluate(make_report(), parse_policy(policy))
    assert verdict.verdict == "pass"
    assert all(r.ok for r in verdict.rules)


def test_an_auto_miss_without_a_key_is_not_evaluated_not_blocked() -> None:
    auto_miss = make_test(
        "tests/test_a.py::test_auto",
        "not_evaluated",
        reason="replay_miss",
        replay=replay_facts(0, misses=1, mode="auto", miss=make_miss()),
    )
    verdict = verdict_of([passing(), auto_miss])
    assert verdict.verdict == "not_evaluated"
    assert verdict.exit_code == 2
    assert rule(verdict, "misses")["ok"] is True


# --- each rule blocks and passes -----------------------------------------------------------------

LIVE = [passing("tests/test_a.py::test_live", live=2, cost=0.5)]
UNPRICED = [passing("tests/test_a.py::test_live", live=1, unpriced=1)]
FAILED = [make_test("tests/test_a.py::test_bad", "failed", message="boom")]
MISSED = [
    make_test("tests/test_a.py::test_miss", "failed", replay=replay_facts(0, misses=1, miss=make_miss()))
]
NOT_EVALUATED = [make_test("tests/test_a.py::test_ne", "not_evaluated", reason="replay_miss")]


@pytest.mark.parametrize(
    ("name", "tests", "blocking", "passing_policy", "summary"),
    [
        ("failures", FAILED, {}, {"failures": "allow"}, {}),
        ("misses", MISSED, {"failures": "allow"}, {"failures": "allow", "misses": "allow"}, {}),
        ("not_evaluated", NOT_EVALUATED, {"not_evaluated": "block"}, {"not_evaluated": "allow"}, {}),
        ("max_live_calls", LIVE, {}, {"max_live_calls": 2}, {}),
        (
            "max_live_cost_usd",
            LIVE,
            {"max_live_calls": 9, "max_live_cost_usd": 0.25},
            {"max_live_calls": 9, "max_live_cost_usd": 0.5},
            {},
        ),
        (
            "max_live_cost_usd",
            UNPRICED,
            {"max_live_calls": 9, "max_live_cost_usd": 1},
            {"max_live_calls": 9},
            {},
        ),
        (
            "require_egress",
            [passing()],
            {"require_egress": "none"},
            {"require_egress": "guard"},
            {"egress": GUARDED},
        ),
        (
            "require_egress",
            [passing()],
            {"require_egress": "guard"},
            {"require_egress": "off"},
            {"egress": {"mode": "off"}},
        ),
        (
            "require_isolation_verified",
            [passing()],
            {"require_isolation_verified": True},
            {"require_isolation_verified": False},
            {"egress": GUARDED},
        ),
    ],
)
def test_each_rule_blocks_and_passes(
    name: str, tests: list[dict[str, Any]], blocking: dict, passing_policy: dict, summary: dict
) -> None:
    blocked = verdict_of(tests, blocking, **summary)
    assert blocked.verdict == "blocked"
    assert [r.rule for r in blocked.rules if not r.ok] == [name]
    passed = verdict_of(tests, passing_policy, **summary)
    assert passed.verdict == "pass", [r.to_dict() for r in passed.rules if not r.ok]


def test_not_evaluated_report_setting_gives_exit_2_and_block_wins_over_it() -> None:
    assert verdict_of(NOT_EVALUATED).exit_code == 2
    assert verdict_of(NOT_EVALUATED + FAILED).exit_code == 1


def test_an_unpriced_live_call_breaks_a_cost_ceiling_and_says_why() -> None:
    result = rule(verdict_of(UNPRICED, {"max_live_calls": 9, "max_live_cost_usd": 5}), "max_live_cost_usd")
    assert result["status"] == "blocked"
    assert "unpriced" in result["detail"]


def test_live_calls_made_outside_any_test_count_against_the_policy() -> None:
    verdict = verdict_of([passing()], replay={"live": 1})
    assert rule(verdict, "max_live_calls")["actual"] == 1
    assert verdict.verdict == "blocked"


def test_a_report_without_tests_is_judged_on_its_run_facts() -> None:
    assert verdict_of([], {"require_egress": "none", "require_isolation_verified": True}).verdict == "pass"
    assert verdict_of([], {"require_egress": "none"}, egress=GUARDED).verdict == "blocked"


# --- overrides by path ---------------------------------------------------------------------------


def test_override_allows_live_calls_under_its_paths_only() -> None:
    policy = {"overrides": [{"paths": ["tests/live/**"], "max_live_calls": 5}]}
    in_scope = passing("tests/live/test_smoke.py::test_live", live=3)
    assert verdict_of([in_scope], policy).verdict == "pass"
    elsewhere = passing("tests/test_a.py::test_live", live=1)
    verdict = verdict_of([in_scope, elsewhere], policy)
    assert verdict.verdict == "blocked"
    assert rule(verdict, "max_live_calls", "policy")["tests"] == ["tests/test_a.py::test_live"]
    assert rule(verdict, "max_live_calls", "overrides[0]")["actual"] == 3
    assert rule(verdict, "max_live_calls", "overrides[0]")["ok"] is True


def test_override_limits_are_shared_by_the_tests_they_cover() -> None:
    policy = {"overrides": [{"paths": ["tests/live"], "max_live_calls": 3}]}
    tests = [passing(f"tests/live/test_{i}.py::test_live", live=2) for i in range(2)]
    assert rule(verdict_of(tests, policy), "max_live_calls", "overrides[0]")["actual"] == 4
    assert verdict_of(tests, policy).verdict == "blocked"


def test_last_matching_override_wins_per_key() -> None:
    policy = {
        "overrides": [
            {"paths": ["tests/**"], "failures": "allow", "misses": "allow"},
            {"paths": ["tests/critical/*.py"], "failures": "block"},
        ]
    }
    critical = make_test("tests/critical/test_pay.py::test_x", "failed", message="boom")
    other = make_test("tests/test_other.py::test_y", "failed", message="boom")
    assert verdict_of([other], policy).verdict == "pass"
    verdict = verdict_of([critical, other], policy)
    assert verdict.verdict == "blocked"
    assert rule(verdict, "failures", "overrides[1]")["tests"] == ["tests/critical/test_pay.py::test_x"]
    # The second override does not set `misses`, so the first one's still applies to the critical test.
    assert [r.scope for r in verdict.rules if r.rule == "misses"] == ["policy", "overrides[0] (tests/**)"]


def test_override_can_require_stronger_isolation_for_some_tests() -> None:
    policy = {"overrides": [{"paths": ["tests/offline/**"], "require_egress": "none"}]}
    offline = passing("tests/offline/test_x.py::test_x")
    assert verdict_of([passing()], policy, egress=GUARDED).verdict == "pass"
    assert verdict_of([passing(), offline], policy, egress=GUARDED).verdict == "blocked"


@pytest.mark.parametrize(
    ("glob", "path", "matches"),
    [
        ("tests/live/**", "tests/live/a/test_x.py", True),
        ("tests/*.py", "tests/test_x.py", True),
        ("tests/*.py", "tests/sub/test_x.py", False),
        ("**/test_smoke.py", "test_smoke.py", True),
        ("**/test_smoke.py", "a/b/test_smoke.py", True),
        ("tests/live", "tests/live/test_x.py", True),
        ("tests/live", "tests/lively/test_x.py", False),
        ("tests/test_?.py", "tests/test_a.py", True),
        ("tests/test_[ab].py", "tests/test_c.py", False),
        ("./tests/", "tests/x.py", True),
    ],
)
def test_glob_semantics(glob: str, path: str, matches: bool) -> None:
    assert (glob_regex(glob).fullmatch(path) is not None) is matches


# --- the policy file -----------------------------------------------------------------------------


def test_yaml_policy_reads_off_as_a_word_not_a_boolean(tmp_path: Path) -> None:
    path = tmp_path / "policy.yml"
    path.write_text("require_egress: off\nnot_evaluated: block\nmax_live_cost_usd: 0.5\n", encoding="utf-8")
    policy = load_policy(path)
    assert policy.settings["require_egress"] == "off"
    assert policy.settings["not_evaluated"] == "block"
    assert policy.settings["max_live_calls"] == 0
    assert policy.source == str(path)


def test_default_policy_file_is_used_when_present_and_defaults_otherwise(tmp_path: Path) -> None:
    assert load_policy(None, root=tmp_path).source == "built-in defaults"
    (tmp_path / ".attest").mkdir()
    (tmp_path / ".attest" / "policy.yml").write_text("max_live_calls: 4\n", encoding="utf-8")
    policy = load_policy(None, root=tmp_path)
    assert policy.settings["max_live_calls"] == 4


def test_json_policy_and_empty_policy(tmp_path: Path) -> None:
    path = tmp_path / "policy.json"
    path.write_text(json.dumps({"misses": "allow", "overrides": [{"paths": ["a/**"], "max_live_calls": 1}]}))
    assert load_policy(path).settings["misses"] == "allow"
    empty = tmp_path / "empty.yml"
    empty.write_text("", encoding="utf-8")
    assert load_policy(empty).settings["failures"] == "block"


@pytest.mark.parametrize(
    ("name", "content", "problem"),
    [
        ("p.yml", "misses: [block\n", "not valid YAML (line 2, column 1"),
        ("p.json", '{"misses": }', "not valid JSON (line 1, column 12"),
        ("p.yml", "- a\n- b\n", "a policy must be a mapping"),
        ("p.yml", "max_live_calls: -1\n", "invalid at /max_live_calls: is less than the minimum of 0"),
        ("p.yml", "misses: maybe\n", 'invalid at /misses: must be one of "block", "allow"'),
        (
            "p.yml",
            "max_live_call: 2\n",
            "invalid at /max_live_call: is a property the schema does not allow",
        ),
        (
            "p.yml",
            "overrides:\n  - max_live_calls: 2\n",
            'invalid at /overrides/0: the required property "paths" is missing',
        ),
    ],
)
def test_malformed_policy_is_one_error_naming_the_file(
    tmp_path: Path, name: str, content: str, problem: str
) -> None:
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    with pytest.raises(PolicyError) as caught:
        load_policy(path)
    assert str(caught.value).startswith(f"{path}: ")
    assert problem in str(caught.value)
    assert "\n" not in str(caught.value)


POLICY_KEY = "sk-proj-" + "P0l1cyK3y" * 3


@pytest.mark.parametrize(
    "content",
    [
        f"misses: {POLICY_KEY}\n",
        f"max_live_calls: {POLICY_KEY}\n",
        f"{POLICY_KEY}: 1\n",
        f"overrides: {POLICY_KEY}\n",
    ],
)
def test_a_policy_error_never_shows_the_value(tmp_path: Path, content: str) -> None:
    # A key pasted into the wrong field must not be printed to the CI log by the error about it.
    path = tmp_path / "policy.yml"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(PolicyError) as caught:
        load_policy(path)
    assert "invalid at /" in str(caught.value)
    assert POLICY_KEY not in str(caught.value)


def test_named_policy_file_must_exist(tmp_path: Path) -> None:
    with pytest.raises(PolicyError, match="no such policy file"):
        load_policy(tmp_path / "policy.yml")


# --- the CLI -------------------------------------------------------------------------------------


@pytest.fixture
def files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)  # no .attest/policy.yml here: the built-in defaults apply
    for name, tests in {
        "pass": [passing()],
        "blocked": FAILED,
        "not-evaluated": NOT_EVALUATED,
    }.items():
        (tmp_path / f"{name}.json").write_text(json.dumps(make_report(tests)), encoding="utf-8")
    return tmp_path


@pytest.mark.parametrize(
    ("name", "code", "word"),
    [("pass", 0, "pass"), ("blocked", 1, "blocked"), ("not-evaluated", 2, "not_evaluated")],
)
def test_cli_exit_codes(
    files: Path, capsys: pytest.CaptureFixture[str], name: str, code: int, word: str
) -> None:
    assert cli(["policy", "evaluate", "--report", f"{name}.json"]) == code
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith(f"attest policy: {word}")
    assert "RULE" in out and "failures" in out


def test_cli_json_verdict(files: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli(["policy", "evaluate", "--report", "blocked.json", "--json"]) == 1
    verdict = json.loads(capsys.readouterr().out)
    assert verdict["verdict"] == "blocked"
    assert verdict["exit_code"] == 1
    failures = next(r for r in verdict["rules"] if r["rule"] == "failures")
    assert failures == {
        "rule": "failures",
        "scope": "policy",
        "limit": "block",
        "actual": 1,
        "ok": False,
        "status": "blocked",
        "tests": ["tests/test_a.py::test_bad"],
        "detail": None,
    }


def test_cli_writes_the_verdict_file_publishing_reads(
    files: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli(["policy", "evaluate", "--report", "blocked.json", "--verdict-file", "out/verdict.json"]) == 1
    printed = capsys.readouterr().out

    written = json.loads((files / "out" / "verdict.json").read_text(encoding="utf-8"))
    assert (written["verdict"], written["exit_code"], written["report"]) == ("blocked", 1, "blocked.json")
    assert printed.splitlines()[0].startswith("attest policy: blocked (failures)")
    assert [r["rule"] for r in written["rules"] if r["status"] == "blocked"] == ["failures"]


def test_cli_uses_the_named_policy(files: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (files / "lenient.yml").write_text("failures: allow\n", encoding="utf-8")
    assert cli(["policy", "evaluate", "--report", "blocked.json", "--policy", "lenient.yml"]) == 0


@pytest.mark.parametrize(
    ("argv", "problem"),
    [
        (["--report", "absent.json"], "attest: absent.json: no such report file"),
        (["--report", "bad.json"], "attest: bad.json: not valid JSON"),
        (["--report", "invalid.json"], "attest: invalid.json: invalid at /summary"),
        (["--report", "pass.json", "--policy", "absent.yml"], "attest: absent.yml: no such policy file"),
        (["--report", "pass.json", "--policy", "bad.yml"], "attest: bad.yml: not valid YAML"),
        (
            ["--report", "pass.json", "--policy", "invalid.yml"],
            "attest: invalid.yml: invalid at /require_egress",
        ),
        ([], "Missing option '--report'"),
    ],
)
def test_cli_could_not_run_is_exit_3_on_one_line(
    files: Path, capsys: pytest.CaptureFixture[str], argv: list[str], problem: str
) -> None:
    (files / "bad.json").write_text("{", encoding="utf-8")
    (files / "invalid.json").write_text(
        json.dumps({"version": 2, "tests": [], "summary": {}}), encoding="utf-8"
    )
    (files / "bad.yml").write_text("a: [\n", encoding="utf-8")
    (files / "invalid.yml").write_text("require_egress: sometimes\n", encoding="utf-8")
    assert cli(["policy", "evaluate", *argv]) == 3
    captured = capsys.readouterr()
    assert problem in captured.err
    assert captured.err.count("\n") == 1
    assert "Traceback" not in captured.err + captured.out


# --- a policy file is input: it may come from the pull request's checkout ----------------------------

ALIAS_BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{name}: &{name} [{', '.join([f'*{prev}'] * 9)}]\n"
    for prev, name in zip("abcdefgh", "bcdefghi", strict=True)
)


@pytest.mark.parametrize(
    ("name", "content", "problem"),
    [
        # Nine lines that expand to 387 million strings for whoever walks the document.
        (
            "p.yml",
            ALIAS_BOMB,
            "not valid YAML (line 2, column 8: alias *a: a policy file may not use aliases)",
        ),
        (
            "p.yml",
            "misses: block\nmisses: allow\n",
            "not valid YAML (line 2, column 1: duplicate key 'misses')",
        ),
        ("p.json", '{"misses": "block", "misses": "allow"}', "duplicate key 'misses'"),
        (
            "p.yml",
            'overrides:\n  - paths: ["tests/a/**", "tests/[z-a]*"]\n    max_live_calls: 3\n',
            "/overrides/0/paths/1: 'tests/[z-a]*' is not a valid glob (bad character range z-a)",
        ),
    ],
    ids=["alias-bomb", "duplicate-yaml-key", "duplicate-json-key", "reversed-range"],
)
def test_a_hostile_policy_is_one_line_and_exit_3(
    tmp_path: Path, name: str, content: str, problem: str
) -> None:
    (tmp_path / name).write_text(content, encoding="utf-8")
    (tmp_path / "r.json").write_text(json.dumps(make_report()), encoding="utf-8")
    done = run_cli(["policy", "evaluate", "--report", "r.json", "--policy", name], cwd=tmp_path)
    assert done.returncode == 3
    assert done.stderr.splitlines() == [f"attest: {name}: {problem}"]
