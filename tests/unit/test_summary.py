"""The pull-request summary: the summary line first, misses at file:line, trimming, fixture changes."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pytest
import typer
from attest_toolkit.cli import report as report_cli
from attest_toolkit.cli import run
from attest_toolkit.fixtures import document as fx
from attest_toolkit.fixtures.diff import fixture_changes
from attest_toolkit.github.links import blob_links
from attest_toolkit.report.policy import evaluate, parse_policy
from attest_toolkit.report.summary import render, summary_line
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from report_factory import MISS_MESSAGE, make_miss, make_report, make_test, replay_facts

SHA = "0123456789abcdef0123456789abcdef01234567"
NOTICE = re.compile(r"… (\d+) more rows not shown; see the job summary/artifact\n$")


def cli(argv: list[str]) -> int:
    app = typer.Typer()
    report_cli.register(app)
    return run(app, argv)


# --- the summary line and what follows it --------------------------------------------------------


@pytest.mark.parametrize("fmt", ["markdown", "text"])
def test_first_line_is_exactly_the_summary_line(fmt: str) -> None:
    report = make_report(replay={"replayed": 4, "live": 2, "live_cost_usd": 0.0312, "unpriced": 1})
    first = render(report, fmt).splitlines()[0]
    line = "4 replayed · 2 live model calls · $0.03 (+1 unpriced) · 2 missed · 2 failed"
    assert first == "attest replay: " + summary_line(4, 2, 0.0312, 1, missed=2, failed=2)
    assert first == f"attest replay: {line}"  # as every terminal and the docs open with


def test_markdown_lists_misses_at_file_and_line_linked_to_the_head_commit() -> None:
    text = render(make_report(), "markdown", links=blob_links("acme/agent", SHA))
    link = f"[`agent/refund.py:42`](https://github.com/acme/agent/blob/{SHA}/agent/refund.py#L42)"
    miss_row = next(line for line in text.splitlines() if link in line)
    assert "`tests/test_refund.py::test_strict_miss`" in miss_row
    assert MISS_MESSAGE in miss_row
    assert "### Replay misses (2)" in text


def test_links_use_the_server_url_and_quote_the_path() -> None:
    report = make_report([make_test("tests/my dir/test_a.py::t", "failed", line=3, message="x")])
    text = render(report, links=blob_links("o/r", SHA, "https://ghe.example.com/"))
    assert f"(https://ghe.example.com/o/r/blob/{SHA}/tests/my%20dir/test_a.py#L3)" in text


def test_without_repo_and_sha_locations_are_plain_text() -> None:
    text = render(make_report(), "markdown")
    assert "agent/refund.py:42" in text
    assert "](http" not in text


def test_markdown_shows_failures_not_evaluated_egress_and_the_verdict() -> None:
    report = make_report()
    verdict = evaluate(report, parse_policy({}))
    text = render(report, "markdown", verdict=verdict)
    assert "### Failures (2)" in text
    assert "RuntimeError: fixture setup failed" in text
    assert "### Not evaluated (1)" in text
    assert "| `replay_miss` |" in text
    assert "- Egress: none (network namespace with only loopback), isolation verified" in text
    assert "- Policy: **blocked** (failures, misses, not_evaluated)" in text
    assert "| failures | `policy` | block | 2 | **blocked** |" in text


def test_text_format_has_the_same_facts_without_markup() -> None:
    text = render(make_report(), "text", verdict=evaluate(make_report(), parse_policy({})))
    assert "agent/refund.py:42  tests/test_refund.py::test_strict_miss" in text
    assert "egress: none (network namespace with only loopback), isolation verified" in text
    assert "policy: blocked" in text
    assert "**" not in text and "|" not in text.split("policy: blocked")[0]


def test_json_format() -> None:
    data = json.loads(render(make_report(), "json"))
    assert data["summary_line"] == "7 replayed · 0 live model calls · $0.00 · 2 missed · 2 failed"
    assert [m["line"] for m in data["misses"]] == [42, 30]
    assert data["misses"][0]["message"] == MISS_MESSAGE
    assert data["egress"]["isolation_verified"] is True


def test_table_cells_are_escaped_and_credentials_redacted() -> None:
    message = "expected a|b <b>bold</b> with key sk-proj-abcdefghijklmnopqrstuvwx"
    text = render(make_report([make_test("tests/a.py::t", "not_evaluated", reason=message)]))
    row = next(line for line in text.splitlines() if "`tests/a.py::t`" in line)
    assert "`expected a\\|b <b>bold</b> with key" in row  # a code span: the tag is shown, not rendered
    assert row.count(" | ") == 2  # three cells, the pipe in the message escaped
    assert "sk-proj-" not in text


def test_a_failure_message_with_backticks_cannot_break_out_of_its_fence() -> None:
    text = render(make_report([make_test("tests/a.py::t", "failed", message="see ```code``` here")]))
    assert "  ````text" in text
    assert text.count("````") == 2


# --- trimming ------------------------------------------------------------------------------------


def big_report(rows: int = 300) -> dict[str, Any]:
    tests = []
    for i in range(rows):
        tests.append(make_test(f"tests/test_pass.py::test_{i}", replay=replay_facts(1)))
        tests.append(
            make_test(
                f"tests/test_fail.py::test_{i}", "failed", line=i + 1, message=f"assert {i} == 0\nline two"
            )
        )
        tests.append(
            make_test(
                f"tests/test_miss.py::test_{i}",
                "failed",
                line=i + 1,
                message=MISS_MESSAGE,
                replay=replay_facts(0, misses=1, miss=make_miss(line=i + 1)),
            )
        )
        tests.append(make_test(f"tests/test_ne.py::test_{i}", "not_evaluated", reason="replay_miss"))
    return make_report(tests)


BIG = big_report()
BIG_VERDICT = evaluate(BIG, parse_policy({}))


def assert_fences_closed(text: str) -> None:
    fences = [line.strip() for line in text.splitlines() if line.strip().startswith("```")]
    assert len(fences) % 2 == 0, "a code fence was left open"


def assert_well_formed(text: str, max_chars: int) -> None:
    assert len(text) <= max_chars
    # The generated reports vary what fails and what misses: the line states the counts it was given.
    assert text.splitlines()[0].startswith("attest replay: 300 replayed · 0 live model calls · $0.00 · ")
    assert_fences_closed(text)


def test_trimming_keeps_misses_first_and_ends_with_the_notice() -> None:
    full = render(BIG, "markdown", verdict=BIG_VERDICT, links=blob_links("o/r", SHA))
    text = render(BIG, "markdown", verdict=BIG_VERDICT, links=blob_links("o/r", SHA), max_chars=60_000)
    assert len(full) > 60_000
    assert_well_formed(text, 60_000)
    shown = text.count("| [`agent/refund.py:")
    assert 0 < shown < 300
    assert "### Failures" not in text and "### Not evaluated" not in text and "### Policy" not in text
    total_rows = 300 + 600 + 300 + len(BIG_VERDICT.rules)
    assert int(NOTICE.search(text).group(1)) == total_rows - shown


def test_trimming_keeps_failures_and_misses_before_everything_else() -> None:
    tests = [
        make_test(f"tests/test_ne.py::test_{i}", "not_evaluated", reason="replay_miss") for i in range(400)
    ]
    tests += [
        make_test(f"tests/test_f.py::test_{i}", "failed", message="assert x\n  where x = 0")
        for i in range(10)
    ]
    tests += [
        make_test(f"tests/test_m.py::test_{i}", "passed", replay=replay_facts(1, misses=1, miss=make_miss()))
        for i in range(10)
    ]
    report = make_report(tests)
    text = render(report, "markdown", max_chars=8000)
    assert_fences_closed(text)
    assert len(text) <= 8000
    assert text.count("`tests/test_m.py::") == 10
    assert text.count("`tests/test_f.py::") == 10
    shown_ne = text.count("`tests/test_ne.py::")
    assert 0 < shown_ne < 400
    assert int(NOTICE.search(text).group(1)) == 400 - shown_ne


def test_a_summary_that_fits_is_not_trimmed() -> None:
    text = render(make_report(), "markdown", max_chars=65_536)
    assert text == render(make_report(), "markdown")
    assert "more rows not shown" not in text


FAILURES_FIRST = make_report([t for t in BIG["tests"] if not t["id"].startswith("tests/test_miss.py")])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    max_chars=st.integers(min_value=200, max_value=40_000),
    fmt=st.sampled_from(["markdown", "text"]),
    report=st.sampled_from([BIG, FAILURES_FIRST]),
)
def test_trimmed_summary_never_exceeds_max_chars(max_chars: int, fmt: str, report: dict[str, Any]) -> None:
    text = render(report, fmt, verdict=BIG_VERDICT, max_chars=max_chars)
    assert_well_formed(text, max_chars)
    assert NOTICE.search(text)


# --- fixture changes -----------------------------------------------------------------------------


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def interaction(
    system: str = "You are terse.", user: str = "hi", answer: str = "Hello!", model: str = "gpt-4o-mini"
) -> dict[str, Any]:
    return {
        "provider": "openai",
        "method": "POST",
        "path": "/v1/chat/completions",
        "request": {
            "json": {
                "model": model,
                "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
            }
        },
        "hashes": {
            "system": digest(system),
            "messages": digest(user),
            "tools": digest("[]"),
            "params": digest("{}"),
            "model": digest(model),
        },
        "response": {"status": 200, "body": {"json": {"choices": [{"message": {"content": answer}}]}}},
    }


def doc(*interactions: dict[str, Any]) -> dict[str, Any]:
    source = {"command": ["python", "agent.py"], "recorded_at": "2026-01-01T00:00:00Z"}
    return fx.new_fixture("inc-1042", source, list(interactions))


def test_fixture_changes_names_changed_components_and_the_response() -> None:
    base = doc(interaction(user="one"), interaction(user="two"))
    head = doc(
        interaction(user="one"), interaction(system="You are verbose.", user="two", answer="Hello there!")
    )
    change = fixture_changes(base, head, "inc-1042")
    assert change["status"] == "changed"
    assert (change["added"], change["removed"], change["changed"]) == (0, 0, 1)
    row = change["interactions"][0]
    assert row["change"] == "changed"
    assert row["head_index"] == 1
    assert row["components"] == ["system"]
    assert row["response_changed"] is True


def test_fixture_changes_aligns_an_inserted_call_instead_of_shifting_everything() -> None:
    base = doc(interaction(user="one"), interaction(user="two"))
    head = doc(interaction(user="zero"), interaction(user="one"), interaction(user="two", answer="Different"))
    change = fixture_changes(base, head, "inc-1042")
    assert [(r["change"], r["head_index"]) for r in change["interactions"]] == [("added", 0), ("changed", 2)]
    assert change["interactions"][1]["components"] == []
    assert change["interactions"][1]["response_changed"] is True


def test_fixture_changes_added_removed_and_unchanged() -> None:
    one = doc(interaction())
    assert fixture_changes(None, one, "x")["status"] == "added"
    assert fixture_changes(one, None, "x")["status"] == "removed"
    assert fixture_changes(one, None, "x")["removed"] == 1
    assert fixture_changes(one, doc(interaction()), "x")["status"] == "unchanged"
    dropped = fixture_changes(
        doc(interaction(user="a"), interaction(user="b")), doc(interaction(user="a")), "x"
    )
    assert [r["change"] for r in dropped["interactions"]] == ["removed"]


def test_fixture_changes_compare_responses_modulo_placeholder_numbers() -> None:
    base = doc(interaction(user="a", answer="{{id_1}} at {{ts_1}}"), interaction(user="b", answer="{{id_2}}"))
    renumbered = doc(interaction(user="b", answer="{{id_1}}"))  # b re-recorded alone: its id is the first
    assert [r["change"] for r in fixture_changes(base, renumbered, "x")["interactions"]] == ["removed"]
    other = doc(
        interaction(user="a", answer="{{id_1}} at {{ts_1}}"), interaction(user="b", answer="{{ts_2}}")
    )
    (row,) = fixture_changes(base, other, "x")["interactions"]
    assert row["response_changed"] is True  # another kind of value is a change, whatever its number


def test_fixture_changes_render_as_a_table() -> None:
    change = fixture_changes(doc(interaction()), doc(interaction(model="gpt-5.4")), "inc-1042")
    text = render(make_report(), "markdown", fixture_changes=[change])
    assert "What the re-recorded fixtures in this change altered:" in text
    assert "| `inc-1042` | `#1 POST /v1/chat/completions` | changed | model | same |" in text


def test_report_summary_cli_with_base_fixtures_and_policy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    fx.write_fixture(tmp_path / "base" / "inc-1042.attest.json", doc(interaction()))
    fx.write_fixture(tmp_path / "head" / "inc-1042.attest.json", doc(interaction(system="New prompt")))
    fx.write_fixture(tmp_path / "head" / "inc-2000.attest.json", doc(interaction()))
    (tmp_path / "r.json").write_text(json.dumps(make_report()), encoding="utf-8")
    (tmp_path / "policy.yml").write_text("failures: allow\nmisses: allow\n", encoding="utf-8")
    argv = [
        "report",
        "summary",
        "--report",
        "r.json",
        "--repo",
        "o/r",
        "--sha",
        SHA,
        "--policy",
        "policy.yml",
    ]
    argv += ["--base-fixtures", "base", "--fixtures-dir", "head"]
    assert cli(argv) == 0
    out = capsys.readouterr().out
    assert (
        out.splitlines()[0] == "attest replay: 7 replayed · 0 live model calls · $0.00 · 2 missed · 2 failed"
    )
    assert "| `inc-1042` | `#1 POST /v1/chat/completions` | changed | system | same |" in out
    assert "| `inc-2000` | — | fixture added (1 call) | — | — |" in out
    assert "- Policy: **not evaluated** (not_evaluated)" in out


def test_report_summary_cli_writes_a_file_and_trims(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "r.json").write_text(json.dumps(BIG), encoding="utf-8")
    out = tmp_path / "summary.md"
    argv = ["report", "summary", "--report", str(tmp_path / "r.json"), "--max-chars", "5000", "-o", str(out)]
    assert cli(argv) == 0
    assert capsys.readouterr().out == ""
    assert len(out.read_text(encoding="utf-8")) <= 5000


@pytest.mark.parametrize(
    ("argv", "problem"),
    [
        (["--report", "absent.json"], "attest: absent.json: no such report file"),
        (["--report", "r.json", "--format", "html"], "Invalid value for '--format'"),
        (["--report", "r.json", "--policy", "absent.yml"], "attest: absent.yml: no such policy file"),
    ],
)
def test_report_summary_cli_errors_are_one_line_exit_3(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    problem: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "r.json").write_text(json.dumps(make_report()), encoding="utf-8")
    assert cli(["report", "summary", *argv]) == 3
    err = capsys.readouterr().err
    assert problem in err
    assert err.count("\n") == 1


def test_the_html_page_says_values_and_counts_in_words(tmp_path: Path) -> None:
    from attest_toolkit.report.html import render_html

    fixture = "tests/attest/fixtures/one.attest.json"
    (tmp_path / fixture).parent.mkdir(parents=True)
    one_call = json.loads((Path(__file__).parents[2] / "examples/fixtures/example.attest.json").read_text())
    one_call["channels"] = {"model": one_call["channels"]["model"][:1]}
    one_call.pop("tools", None)
    fx.write_fixture(tmp_path / fixture, one_call)
    report = make_report(
        [make_test("tests/test_a.py::test_a", "passed", replay=replay_facts(1, fixtures=[fixture]))]
    )
    page = render_html(report, root=tmp_path, verdict=evaluate(report, parse_policy({})))
    cells = re.findall(r"<td>([^<]*)</td>", page)
    assert "None" not in cells and "False" not in cells
    assert "<td>none</td>" in page and "<td>no</td>" in page  # max_live_cost_usd, require_isolation_verified
    assert "· 1 call</summary>" in page
