"""A credential across a length cut: every place that cuts text redacts it first, so no part of a key
long enough to use survives the cut (pytest helper, the runners' rows, JUnit import, the summary)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from xml.sax.saxutils import quoteattr

import pytest
from conftest import clean_env, run_cli, scrub
from github_harness import PR, REPO, Actions, report_file, row
from report_factory import make_report, make_test

pytest_plugins = ["github_harness"]  # the actions fixture: a pull-request step against a fake GitHub

# A credential by its variable's name only: no shape of its own, so redaction finds it as a whole value.
SECRET = "Zk4mQ9vT2xLp7RwN3bHc6YdF1sJg5KaE"
ENV = {"SERVICE_API_KEY": SECRET}


def pieces(secret: str = SECRET, width: int = 8) -> list[str]:
    return [secret[i : i + width] for i in range(len(secret) - width + 1)]


def assert_no_piece(text: str) -> None:
    assert not [p for p in pieces() if p in text], "part of the credential survived the cut"


def straddling(cut: int, before: str = "") -> str:
    """Filler that puts SECRET across the `cut`-th character, 10 of its characters before the cut."""
    return "x" * (cut - len(before) - 10) + SECRET


def test_the_pytest_helper_redacts_a_failure_message_before_cutting_it(pytester, monkeypatch):
    scrub(monkeypatch)
    monkeypatch.setenv("SERVICE_API_KEY", SECRET)
    pytester.makepyfile(
        test_leak=f"""
import os

def test_leak():
    assert False, {straddling(4000, "AssertionError: ")[: -len(SECRET)]!r} + os.environ["SERVICE_API_KEY"]
"""
    )
    result = pytester.runpytest_subprocess("--attest-report=report.json")
    result.assert_outcomes(failed=1)
    message = json.loads((pytester.path / "report.json").read_text())["tests"][0]["message"]
    assert len(message) == 4000 and message.startswith("AssertionError: xxx")
    assert_no_piece(message)


def test_a_runners_rows_are_redacted_before_their_messages_are_cut(tmp_path: Path) -> None:
    # What the Vitest reporter sends: the message whole; `attest-engine report` redacts, then cuts.
    row = {"id": "t.test.ts::leaks", "file": "t.test.ts", "line": 3, "outcome": "failed", "duration": 0.1}
    rows = {"runner": "vitest", "guard": True, "tests": [{**row, "message": straddling(4000)}]}
    out = tmp_path / "attest-report.json"
    code = "import sys; from attest_toolkit.cli.engine import main; sys.argv[0] = 'attest-engine'; main()"
    done = subprocess.run(
        [sys.executable, "-c", code, "report", "--output", str(out)],
        input=json.dumps(rows),
        env=clean_env(**ENV),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    message = json.loads(out.read_text())["tests"][0]["message"]
    assert len(message) == 4000
    assert_no_piece(message)


def test_junit_import_redacts_a_failure_message_before_cutting_it(tmp_path: Path) -> None:
    xml = tmp_path / "junit.xml"
    failure = f"<failure message={quoteattr(straddling(2000))}/>"
    xml.write_text(f'<testsuite name="s"><testcase name="t" classname="c">{failure}</testcase></testsuite>')
    done = run_cli(["report", "from-junit", str(xml), "-o", str(tmp_path / "r.json")], env=clean_env(**ENV))
    assert done.returncode == 0, done.stderr
    message = json.loads((tmp_path / "r.json").read_text())["tests"][0]["message"]
    assert len(message) == 2000
    assert_no_piece(message)


@pytest.mark.parametrize("fmt", ["markdown", "text"])
def test_the_summary_redacts_a_report_before_cutting_its_cells(tmp_path: Path, fmt: str) -> None:
    # A report written by a process that did not know the key (another job, a hand-made file).
    test = make_test("t.py::" + straddling(300, "t.py::"), "failed", message=straddling(1500))
    report = tmp_path / "r.json"
    report.write_text(json.dumps(make_report([test])))
    done = run_cli(["report", "summary", "--report", str(report), "--format", fmt], env=clean_env(**ENV))
    assert done.returncode == 0, done.stderr
    assert "xxxxxxxxxx" in done.stdout  # the row is shown, cut
    assert_no_piece(done.stdout)


def test_publishing_redacts_before_each_of_its_cuts(actions: Actions, monkeypatch) -> None:
    # One message with a key across the comment's block cut (1,500), the workflow command's (4,000) and
    # the check run annotation's (64 KB), in a report its writer did not redact. (Publishing redacted
    # the whole report before any cut already: this keeps it so.)
    monkeypatch.setenv("SERVICE_API_KEY", SECRET)
    message = straddling(1500)
    message += "y" * (4000 - len(message) - 10) + SECRET
    message += "z" * (64 * 1024 - len(message) - 10) + SECRET
    actions.publish(report_file(actions.tmp, [row(1, "failed", message=message)]))
    (comment,) = actions.gh.comments(REPO, PR)
    (run,) = actions.gh.state.check_runs.values()
    assert "xxxxxxxxxx" in comment["body"] and run["annotations"]
    for published in (
        comment["body"],
        json.dumps(run),
        actions.stdout.getvalue(),
        actions.summary.read_text(),
    ):
        assert_no_piece(published)
