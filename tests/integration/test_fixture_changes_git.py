"""What a pull request re-recorded, read from a real git repository: the comment's fixture section."""

from __future__ import annotations

from pathlib import Path

import pytest
from attest_toolkit.errors import AttestError
from attest_toolkit.fixtures.diff import changes_since
from conftest import chat_request, chat_response, exchange, git, write_fixture


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    fixtures = tmp_path / "tests" / "attest" / "fixtures"
    fixtures.mkdir(parents=True)
    git(tmp_path, "init", "-q", "-b", "main")
    two_calls = [
        exchange(chat_request("one"), chat_response("1")),
        exchange(chat_request("two"), chat_response("2")),
    ]
    write_fixture(fixtures, "kept", two_calls)
    write_fixture(fixtures, "gone", [exchange(chat_request("bye"), chat_response("bye"))])
    write_fixture(fixtures, "same", [exchange(chat_request("same"), chat_response("same"))])
    (tmp_path / "README").write_text("x\n")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-qm", "base")
    return tmp_path


def test_re_recorded_added_and_removed_fixtures_are_named_by_component(repo: Path) -> None:
    fixtures = repo / "tests" / "attest" / "fixtures"
    git(repo, "checkout", "-qb", "change")
    write_fixture(
        fixtures,
        "kept",
        [
            exchange(chat_request("one"), chat_response("1")),
            exchange(chat_request("two, rephrased"), chat_response("2")),
        ],
    )
    write_fixture(fixtures, "new", [exchange(chat_request("hi"), chat_response("hi"))])
    (fixtures / "gone.attest.json").unlink()
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "re-record")

    changes = {c["name"]: c for c in changes_since(repo, "main", "tests/attest/fixtures")}

    assert set(changes) == {"kept", "new", "gone"}
    assert changes["new"]["status"] == "added" and changes["gone"]["status"] == "removed"
    kept = changes["kept"]
    assert kept["status"] == "changed"
    changed = [row for row in kept["interactions"] if row["change"] == "changed"]
    assert len(changed) == 1 and changed[0]["components"] == ["messages"]


def test_nothing_re_recorded_is_an_empty_list(repo: Path) -> None:
    (repo / "README").write_text("y\n")
    assert changes_since(repo, "HEAD", "tests/attest/fixtures") == []


def test_a_bad_base_is_one_line(repo: Path) -> None:
    with pytest.raises(AttestError, match="bad revision"):
        changes_since(repo, "no-such-branch", "tests/attest/fixtures")


def test_report_summary_shows_the_re_recording_since_a_base_ref(repo: Path, monkeypatch, capsys) -> None:
    import typer
    from attest_toolkit.cli import run
    from attest_toolkit.cli.report import register
    from attest_toolkit.report.build import write_report
    from report_factory import make_report

    fixtures = repo / "tests" / "attest" / "fixtures"
    write_fixture(fixtures, "same", [exchange(chat_request("same", model="gpt-4.1"), chat_response("same"))])
    write_report(make_report(), repo / "report.json")
    monkeypatch.chdir(repo)
    app = typer.Typer()
    register(app)
    assert (
        run(app, ["report", "summary", "--report", "report.json", "--base-ref", "HEAD", "--format", "text"])
        == 0
    )
    out = capsys.readouterr().out
    assert "same" in out and "model" in out[out.index("re-recorded") :]
