"""`attest select` against real git repositories built in tmp_path."""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import plants
import pytest
import typer
from attest_toolkit.cli import run
from attest_toolkit.cli.select import _terminal_progress, register
from attest_toolkit.git import GitRepo
from attest_toolkit.repo_root import toplevel
from attest_toolkit.report.build import ReportError, load_report
from attest_toolkit.selection import select_tests, shard
from attest_toolkit.selection.scan import scan_js
from conftest import git

FIX = "tests/attest/fixtures"

AGENT_PY = """\
import pytest

REFUND = "refund"


def test_plain(attest_replay):
    with attest_replay("inc-1042"):
        pass


class TestRefunds:
    @pytest.mark.parametrize("order", ["O-1", "O-2"])
    def test_refund(self, attest_replay, order):
        with attest_replay(REFUND, mode="strict"):
            pass

    class TestNested:
        async def test_other(self, attest_replay):
            with attest_replay(name="other"):
                pass


@pytest.mark.parametrize("fixture", ["alpha", pytest.param("beta", id="b")])
def test_each(attest_replay, fixture):
    with attest_replay(fixture):
        pass


def test_custom_dir(attest_replay):
    with attest_replay("inc-1042", fixtures_dir="tests/elsewhere"):
        pass


def test_no_replay():
    assert True
"""

AGENT_TS = """\
import { describe, it } from "vitest";
import { useReplay } from "@attest-ai/vitest";

describe("refund agent", () => {
  it("replays inc-1042", async () => {
    await useReplay("inc-1042");
    const result = await runRefundAgent("O-1042"); // (see "other")
  });

  it('replays other', async () => {
    await useReplay("other", { mode: "strict" });
  });
});
"""


def write(repo: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = repo / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def commit(repo: Path, files: dict[str, str] | None = None, message: str = "change") -> None:
    write(repo, files or {})
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--allow-empty", "-m", message)


def new_repo(path: Path, files: dict[str, str]) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    commit(path, files, "base")
    return path


def fixture_text(name: str, answer: str = "ok") -> str:
    return json.dumps({"format": "attest-fixture", "name": name, "answer": answer}, indent=2) + "\n"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    files = {
        f"{FIX}/{n}.attest.json": fixture_text(n) for n in ("inc-1042", "refund", "other", "alpha", "beta")
    }
    files["tests/elsewhere/inc-1042.attest.json"] = fixture_text("inc-1042", "elsewhere")
    files["tests/test_agent.py"] = AGENT_PY
    files["tests/agent.test.ts"] = AGENT_TS
    files["tests/test_plain.py"] = "def test_nothing():\n    assert True\n"
    files["src/agent.py"] = "ANSWER = 1\n"
    return new_repo(tmp_path / "project", files)


def select(repo: Path, *args: str) -> tuple[int, str, str]:
    app = typer.Typer()

    @app.callback()
    def _root() -> None:
        """A group, so `select` stays a subcommand as in `attest`."""

    register(app)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = run(app, ["select", "--repo", str(repo), *args])
    return code, out.getvalue(), err.getvalue()


def selected(repo: Path, *args: str) -> dict:
    code, out, err = select(repo, "--format", "json", *args)
    assert code == 0, err
    return json.loads(out)


def last_commit(repo: Path, *args: str) -> dict:
    """The selection for the last commit: `--base HEAD~1 --head HEAD`."""
    return selected(repo, "--base", "HEAD~1", "--head", "HEAD", *args)


# --- fixtures select the tests that use them ------------------------------------------------------


def test_changed_fixture_selects_exactly_its_tests_in_python_and_typescript(repo: Path) -> None:
    commit(repo, {f"{FIX}/inc-1042.attest.json": fixture_text("inc-1042", "changed")})
    result = last_commit(repo)
    assert result == {
        "selection": "some",
        "tests": ["tests/agent.test.ts::replays inc-1042", "tests/test_agent.py::test_plain"],
        "fixtures": [f"{FIX}/inc-1042.attest.json"],
        "reason": "1 changed fixture: 2 tests selected",
    }


def test_pytest_format_prints_only_pytest_ids(repo: Path) -> None:
    commit(repo, {f"{FIX}/inc-1042.attest.json": fixture_text("inc-1042", "changed")})
    code, out, _ = select(repo, "--base", "HEAD~1", "--head", "HEAD", "--format", "pytest")
    assert (code, out) == (0, "tests/test_agent.py::test_plain\n")


@pytest.mark.parametrize(
    ("fixture", "expected"),
    [
        ("refund", ["tests/test_agent.py::TestRefunds::test_refund"]),
        (
            "other",
            [
                "tests/agent.test.ts::replays other",
                "tests/test_agent.py::TestRefunds::TestNested::test_other",
            ],
        ),
        ("beta", ["tests/test_agent.py::test_each"]),
    ],
)
def test_classes_constants_keywords_and_parametrize_resolve_to_the_function(
    repo: Path, fixture: str, expected: list[str]
) -> None:
    commit(repo, {f"{FIX}/{fixture}.attest.json": fixture_text(fixture, "changed")})
    assert last_commit(repo)["tests"] == expected


def test_fixture_in_another_directory_selects_the_test_naming_that_directory(repo: Path) -> None:
    commit(repo, {"tests/elsewhere/inc-1042.attest.json": fixture_text("inc-1042", "changed")})
    assert last_commit(repo)["tests"] == ["tests/test_agent.py::test_custom_dir"]


def test_deleted_fixture_selects_the_tests_that_used_it(repo: Path) -> None:
    git(repo, "rm", "-q", f"{FIX}/other.attest.json")
    commit(repo)
    result = last_commit(repo)
    assert result["tests"] == [
        "tests/agent.test.ts::replays other",
        "tests/test_agent.py::TestRefunds::TestNested::test_other",
    ]
    assert result["fixtures"] == [f"{FIX}/other.attest.json"]


def test_renamed_fixture_selects_the_tests_of_its_old_name(repo: Path) -> None:
    git(repo, "mv", f"{FIX}/refund.attest.json", f"{FIX}/refund-v2.attest.json")
    commit(repo)
    result = last_commit(repo)
    assert result["tests"] == ["tests/test_agent.py::TestRefunds::test_refund"]
    assert result["fixtures"] == [f"{FIX}/refund-v2.attest.json", f"{FIX}/refund.attest.json"]


def test_fixture_no_test_uses_is_nothing_to_run(repo: Path) -> None:
    commit(repo, {f"{FIX}/orphan.attest.json": fixture_text("orphan")})
    result = last_commit(repo)
    assert (result["selection"], result["tests"]) == ("none", [])


# --- test files and other files -------------------------------------------------------------------


def test_changed_test_file_selects_the_file(repo: Path) -> None:
    commit(repo, {"tests/test_agent.py": AGENT_PY + "\n\ndef test_new(attest_replay):\n    pass\n"})
    assert last_commit(repo)["tests"] == ["tests/test_agent.py"]


def test_changed_test_file_and_its_fixture_run_the_file_once(repo: Path) -> None:
    commit(
        repo,
        {
            "tests/test_agent.py": AGENT_PY + "# edited\n",
            f"{FIX}/refund.attest.json": fixture_text("refund", "x"),
        },
    )
    assert last_commit(repo)["tests"] == ["tests/test_agent.py"]


def test_deleted_test_file_selects_nothing(repo: Path) -> None:
    git(repo, "rm", "-q", "tests/test_plain.py")
    commit(repo)
    assert last_commit(repo)["selection"] == "none"


@pytest.mark.parametrize("path", ["src/agent.py", "tests/conftest.py", "pyproject.toml"])
def test_other_change_selects_everything(repo: Path, path: str) -> None:
    commit(repo, {path: "# changed\n"})
    result = last_commit(repo)
    assert (result["selection"], result["tests"]) == ("all", ["tests"])
    code, out, _ = select(repo, "--base", "HEAD~1", "--head", "HEAD", "--format", "pytest")
    assert (code, out) == (0, "tests\n")


def test_only_fixtures_ignores_other_changes(repo: Path) -> None:
    commit(repo, {"src/agent.py": "ANSWER = 2\n", f"{FIX}/beta.attest.json": fixture_text("beta", "new")})
    result = last_commit(repo, "--only-fixtures")
    assert (result["selection"], result["tests"]) == ("some", ["tests/test_agent.py::test_each"])
    assert "ignored (--only-fixtures)" in result["reason"]
    commit(repo, {"src/agent.py": "ANSWER = 3\n", "tests/test_plain.py": "def test_x():\n    pass\n"})
    result = last_commit(repo, "--only-fixtures")
    assert (result["selection"], result["tests"]) == ("none", [])


def test_no_change_is_a_clean_nothing_to_run(repo: Path) -> None:
    assert select(repo, "--base", "HEAD", "--head", "HEAD") == (0, "", "")
    assert select(repo, "--base", "HEAD", "--format", "pytest") == (0, "", "")
    result = selected(repo, "--base", "HEAD")
    assert (result["selection"], result["tests"], result["fixtures"]) == ("none", [], [])


# --- head and the working tree --------------------------------------------------------------------


def test_without_head_uncommitted_and_untracked_files_count(repo: Path) -> None:
    write(repo, {f"{FIX}/alpha.attest.json": fixture_text("alpha", "edited")})
    assert selected(repo, "--base", "HEAD")["tests"] == ["tests/test_agent.py::test_each"]
    write(repo, {"tests/test_new.py": "def test_new():\n    pass\n"})
    assert selected(repo, "--base", "HEAD")["tests"] == [
        "tests/test_agent.py::test_each",
        "tests/test_new.py",
    ]


def test_with_head_the_commit_is_scanned_not_the_working_tree(repo: Path) -> None:
    commit(repo, {f"{FIX}/inc-1042.attest.json": fixture_text("inc-1042", "changed")})
    write(repo, {"tests/test_agent.py": "# emptied in the working tree\n", "tests/agent.test.ts": ""})
    assert last_commit(repo)["tests"] == [
        "tests/agent.test.ts::replays inc-1042",
        "tests/test_agent.py::test_plain",
    ]


def test_base_is_compared_from_the_merge_base(repo: Path) -> None:
    git(repo, "checkout", "-q", "-b", "feature")
    commit(repo, {f"{FIX}/refund.attest.json": fixture_text("refund", "feature")})
    git(repo, "checkout", "-q", "main")
    commit(repo, {"src/agent.py": "ANSWER = 'main moved on'\n"})
    result = selected(repo, "--base", "main", "--head", "feature")
    assert result["tests"] == ["tests/test_agent.py::TestRefunds::test_refund"]


def test_project_in_a_subdirectory_of_the_repository(tmp_path: Path) -> None:
    top = new_repo(
        tmp_path / "mono",
        {
            "py/tests/test_x.py": 'def test_x(attest_replay):\n    with attest_replay("x"):\n        pass\n',
            f"py/{FIX}/x.attest.json": fixture_text("x"),
            "web/app.js": "1\n",
        },
    )
    commit(top, {f"py/{FIX}/x.attest.json": fixture_text("x", "changed")})
    assert last_commit(top / "py")["tests"] == ["tests/test_x.py::test_x"]
    commit(top, {"web/app.js": "2\n"})
    assert last_commit(top / "py")["selection"] == "all"


# --- the last report ------------------------------------------------------------------------------

DYNAMIC_PY = """\
import pytest


def fixture_for(case):
    return f"case-{case}"


@pytest.mark.parametrize("case", ["a", "b"])
def test_case(attest_replay, case):
    with attest_replay(fixture_for(case)):
        pass
"""


def report_for(tests: dict[str, list[str]], durations: dict[str, float] | None = None) -> dict:
    rows = []
    for test_id, fixtures in tests.items():
        row = {
            "id": test_id,
            "file": test_id.split("::")[0],
            "line": 1,
            "outcome": "passed",
            "duration": (durations or {}).get(test_id, 0.1),
        }
        if fixtures:
            row["replay"] = {"fixtures": fixtures, "mode": "strict", "replayed": 1, "live": 0, "misses": 0}
        rows.append(row)
    summary = {
        "tests": len(rows),
        "outcomes": {"passed": len(rows)},
        "replay": {"replayed": len(rows), "live": 0, "misses": 0, "live_cost_usd": 0.0, "unpriced": 0},
        "usage": {"calls": 0, "cost_usd": 0.0},
        "egress": {"mode": "guard", "isolation_verified": False},
        "environment": {"toolkit_version": "0.1.0"},
    }
    return {"version": 2, "tests": rows, "summary": summary}


@pytest.fixture
def dynamic_repo(tmp_path: Path) -> Path:
    files = {f"{FIX}/case-{c}.attest.json": fixture_text(c) for c in "abc"}
    files["tests/test_dynamic.py"] = DYNAMIC_PY
    return new_repo(tmp_path / "dynamic", files)


def test_report_maps_a_fixture_whose_name_is_not_a_literal(dynamic_repo: Path, tmp_path: Path) -> None:
    report = tmp_path / "attest-report.json"
    ids = {"tests/test_dynamic.py::test_case[a]": [f"{FIX}/case-a.attest.json"]}
    ids["tests/test_dynamic.py::test_case[b]"] = [f"{FIX}/case-b.attest.json"]
    ids["tests/test_gone.py::test_old"] = [f"{FIX}/case-a.attest.json"]  # deleted since the report
    report.write_text(json.dumps(report_for(ids)))
    commit(dynamic_repo, {f"{FIX}/case-a.attest.json": fixture_text("a", "changed")})
    result = last_commit(dynamic_repo, "--report", str(report))
    assert result["tests"] == ["tests/test_dynamic.py::test_case[a]"]
    commit(dynamic_repo, {f"{FIX}/case-c.attest.json": fixture_text("c", "changed")})
    result = last_commit(dynamic_repo, "--report", str(report))
    assert result["selection"] == "none"


def test_without_a_report_a_computed_name_is_selected_by_any_fixture_change(dynamic_repo: Path) -> None:
    commit(dynamic_repo, {f"{FIX}/case-c.attest.json": fixture_text("c", "changed")})
    assert last_commit(dynamic_repo)["tests"] == ["tests/test_dynamic.py::test_case"]


def test_report_and_scan_are_united(repo: Path, tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    helper_user = "tests/test_plain.py::test_nothing"  # loads inc-1042 through a helper the scan cannot see
    report.write_text(json.dumps(report_for({helper_user: [f"{FIX}/inc-1042.attest.json"]})))
    commit(repo, {f"{FIX}/inc-1042.attest.json": fixture_text("inc-1042", "changed")})
    tests = last_commit(repo, "--report", str(report))["tests"]
    assert tests == ["tests/agent.test.ts::replays inc-1042", "tests/test_agent.py::test_plain", helper_user]


# --- sharding -------------------------------------------------------------------------------------


@pytest.mark.parametrize("count", [0, 1, 7, 50, 101])
@pytest.mark.parametrize("total", [1, 2, 3, 8])
def test_shards_cover_every_test_once_balanced_within_one(count: int, total: int) -> None:
    ids = [f"tests/test_{i % 9}.py::test_{i}" for i in range(count)]
    shards = [shard(ids, i, total) for i in range(1, total + 1)]
    assert sorted(t for s in shards for t in s) == sorted(ids)
    assert max(map(len, shards)) - min(map(len, shards)) <= 1
    assert shards == [shard(list(reversed(ids)), i, total) for i in range(1, total + 1)]


def test_weighted_shards_are_disjoint_deterministic_and_spread_the_slow_tests() -> None:
    ids = [f"t::{i}" for i in range(20)]
    weights = {"t::0": 10.0, "t::1": 10.0, "t::2": 10.0, **{f"t::{i}": 1.0 for i in range(3, 19)}}
    shards = [shard(ids, i, 3, weights) for i in (1, 2, 3)]
    assert sorted(t for s in shards for t in s) == sorted(ids)
    assert [sum(1 for t in s if t in ("t::0", "t::1", "t::2")) for s in shards] == [1, 1, 1]
    assert shards == [shard(list(reversed(ids)), i, 3, dict(reversed(weights.items()))) for i in (1, 2, 3)]


def test_shard_of_everything_splits_the_test_files(repo: Path) -> None:
    commit(repo, {"src/agent.py": "ANSWER = 2\n"})
    parts = [last_commit(repo, "--shard", f"{i}/2")["tests"] for i in (1, 2)]
    assert sorted(parts[0] + parts[1]) == [
        "tests/agent.test.ts",
        "tests/test_agent.py",
        "tests/test_plain.py",
    ]
    assert not set(parts[0]) & set(parts[1])


def test_report_durations_weigh_the_shards(repo: Path, tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    slow = {"tests/test_plain.py::test_nothing": 10.0, "tests/test_agent.py::test_plain": 0.5}
    report.write_text(json.dumps(report_for({test: [] for test in slow}, slow)))
    commit(repo, {"src/agent.py": "ANSWER = 2\n"})
    args = ("--base", "HEAD~1", "--head", "HEAD", "--report", str(report))
    parts = [selected(repo, *args, "--shard", f"{i}/2")["tests"] for i in (1, 2)]
    # Round-robin would pair test_plain.py with agent.test.ts; its 10 s keep it alone.
    assert parts == [["tests/test_plain.py"], ["tests/agent.test.ts", "tests/test_agent.py"]]


def test_an_empty_shard_is_nothing_to_run(repo: Path) -> None:
    commit(repo, {f"{FIX}/refund.attest.json": fixture_text("refund", "changed")})
    first = last_commit(repo, "--shard", "1/2")
    second = last_commit(repo, "--shard", "2/2")
    assert first["tests"] == ["tests/test_agent.py::TestRefunds::test_refund"]
    assert (second["selection"], second["tests"], second["shard"]) == ("none", [], {"index": 2, "total": 2})


# --- errors ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--base", "no-such-branch"], "bad revision 'no-such-branch'"),
        (["--base", "HEAD", "--head", "--output=x"], "bad revision '--output=x'"),
        (["--base", "HEAD", "--shard", "3/2"], "--shard: expected i/N"),
        (["--base", "HEAD", "--report", "missing.json"], "missing.json: no such report file"),
    ],
)
def test_errors_are_one_line_and_exit_3(repo: Path, args: list[str], message: str) -> None:
    code, out, err = select(repo, *args)
    assert (code, out) == (3, "")
    assert err.startswith("attest: ") and err.count("\n") == 1 and message in err, err


def test_not_a_git_repository_is_exit_3(tmp_path: Path) -> None:
    code, _, err = select(tmp_path, "--base", "main")
    assert code == 3 and err == f"attest: {tmp_path}: not a git repository\n"


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("{not json", "not valid JSON (line 1, column 2"),
        ('{"version": 1}', "report version 1 is not the version this toolkit reads (2)"),
        ('{"version": 2, "tests": [{"id": "x"}], "summary": {}}', "invalid at /summary"),
    ],
)
def test_malformed_report_is_one_line_exit_3(repo: Path, tmp_path: Path, text: str, problem: str) -> None:
    report = tmp_path / "bad.json"
    report.write_text(text)
    code, _, err = select(repo, "--base", "HEAD", "--report", str(report))
    assert code == 3 and err.startswith(f"attest: {report}: {problem}") and err.count("\n") == 1, err
    with pytest.raises(ReportError):
        load_report(report)


# --- the library and progress ---------------------------------------------------------------------


def test_library_call_returns_the_selection(repo: Path) -> None:
    commit(repo, {f"{FIX}/alpha.attest.json": fixture_text("alpha", "changed")})
    selection = select_tests(
        repo, "HEAD~1", "HEAD", fixtures_dir=FIX, tests_dir="tests", report=None, only_fixtures=False
    )
    assert (selection.kind, selection.tests) == ("some", ["tests/test_agent.py::test_each"])


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(
    ("tty", "ci", "shown"), [(True, None, True), (True, "true", False), (False, None, False)]
)
def test_progress_only_on_a_terminal_outside_ci(
    monkeypatch: pytest.MonkeyPatch, tty: bool, ci: str | None, shown: bool
) -> None:
    stderr = _Terminal() if tty else io.StringIO()
    monkeypatch.setattr("sys.stderr", stderr)
    if ci is None:
        monkeypatch.delenv("CI", raising=False)
    else:
        monkeypatch.setenv("CI", ci)
    items = [f"tests/test_{i}.py" for i in range(500)]
    assert list(_terminal_progress(items, len(items))) == items
    assert ("scanning tests" in stderr.getvalue()) is shown


# --- uses the scan cannot pin to one test ---------------------------------------------------------

HELPER = 'def replayed(attest_replay):\n    return attest_replay("refund")\n'


@pytest.mark.parametrize(
    ("path", "expected", "kind"),
    [
        ("tests/test_helpers.py", ["tests/test_helpers.py"], "some"),
        ("tests/sub/conftest.py", ["tests/sub"], "some"),
        ("tests/helpers.py", ["tests"], "all"),
    ],
)
def test_a_use_outside_a_test_function_selects_what_it_can_reach(
    repo: Path, path: str, expected: list[str], kind: str
) -> None:
    commit(repo, {path: HELPER})
    commit(repo, {f"{FIX}/refund.attest.json": fixture_text("refund", "changed")})
    result = last_commit(repo)
    assert result["selection"] == kind
    assert [t for t in result["tests"] if "TestRefunds" not in t] == expected


def test_a_computed_name_on_the_next_line_is_still_found(dynamic_repo: Path) -> None:
    multiline = (
        "def test_later(attest_replay):\n    with attest_replay(\n        pick()\n    ):\n        pass\n"
    )
    commit(dynamic_repo, {"tests/test_later.py": multiline})
    commit(dynamic_repo, {f"{FIX}/case-c.attest.json": fixture_text("c", "changed")})
    assert "tests/test_later.py::test_later" in last_commit(dynamic_repo)["tests"]


def test_typescript_names_directories_and_computed_names() -> None:
    source = """
    import { it, beforeEach } from "vitest";
    beforeEach(async () => { await useReplay("shared"); });
    it("uses a directory", async () => {
      await useReplay('refund', { fixturesDir: "fixtures/ts", mode: "strict" });
    });
    test.concurrent(`computed ${1}`, async () => {
      await useReplay(`case-${n}`);
      /* useReplay("commented") ) */
    });
    """
    usages = {(u.owner, u.name, u.directory) for u in scan_js("web/a.test.ts", source, FIX, "web")}
    assert usages == {
        ("web/a.test.ts", "shared", FIX),
        ("web/a.test.ts::uses a directory", "refund", "fixtures/ts"),
        ("web/a.test.ts::computed ${1}", None, FIX),
    }


def test_pytest_format_ids_are_collected_by_pytest(repo: Path) -> None:
    for name in ("refund", "beta", "inc-1042"):
        write(repo, {f"{FIX}/{name}.attest.json": fixture_text(name, "changed")})
    code, out, _ = select(repo, "--base", "HEAD", "--format", "pytest")
    ids = out.split()
    assert code == 0 and len(ids) == 3
    collected = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *ids],
        cwd=repo,
        capture_output=True,
        text=True,
        check=False,
    )
    assert collected.returncode == 0, collected.stdout + collected.stderr
    assert sorted(line for line in collected.stdout.splitlines() if "::" in line) == [
        "tests/test_agent.py::TestRefunds::test_refund[O-1]",
        "tests/test_agent.py::TestRefunds::test_refund[O-2]",
        "tests/test_agent.py::test_each[alpha]",
        "tests/test_agent.py::test_each[b]",
        "tests/test_agent.py::test_plain",
    ]


def test_a_repositorys_own_fsmonitor_command_never_runs(tmp_path: Path) -> None:
    """The tests a gate judges can write `.git/config`; the step that reads the diff holds the token."""
    repo, marker = tmp_path / "repo", tmp_path / "ran"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "a.txt").write_text("a\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "a")
    hook = tmp_path / "fsmonitor"
    hook.write_text(f"#!/bin/sh\n: >'{marker}'\n")
    hook.chmod(0o755)
    git(repo, "config", "core.fsmonitor", str(hook))
    (repo / "a.txt").write_text("b\n")

    changes = GitRepo(repo).changes("main", None)

    assert [c.path for c in changes] == ["a.txt"]
    assert not marker.exists()


def test_git_is_never_looked_up_in_the_repository_it_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With `.` on PATH, a git run with the checkout as its working directory would be the checkout's."""
    repo, markers = tmp_path / "repo", tmp_path / "markers"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "a.txt").write_text("a\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "a")
    plants.plant(repo, markers)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PATH", f".:{os.environ['PATH']}")

    changes = GitRepo(repo).changes("main", None)

    assert "a.txt" not in [c.path for c in changes] and "git" in [c.path for c in changes]
    assert toplevel(repo) == repo.resolve()
    assert plants.ran(markers) == []
