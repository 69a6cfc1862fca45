"""The summary as sections: each section is one object rendering markdown, text and JSON, and the
summary is their ordered list, so a new section is written once and shows in every rendering."""

from __future__ import annotations

import json
from typing import Any

import pytest
from attest_toolkit.github.links import blob_links
from attest_toolkit.report.build import run_secrets
from attest_toolkit.report.summary import Links, render, report_summary_line
from attest_toolkit.report.summary import sections as summary
from attest_toolkit.report.summary.sections import Block, Misses, Part, Section, View
from report_factory import make_miss, make_report, make_test, replay_facts

MISSED = "tests/test_refund.py::test_refund"


def missed_report() -> Any:
    miss = make_miss(message="replay miss: messages changed", component="messages", line=42)
    return make_report([make_test(MISSED, "failed", replay=replay_facts(1, misses=1, miss=miss))])


def test_one_section_renders_markdown_text_and_json_from_one_object() -> None:
    view = View.of(missed_report(), None, [], run_secrets(), blob_links("o/r", "a" * 40))
    section = Misses(view)

    markdown, text, data = section.markdown(), section.text(), section.json()

    assert markdown.head == [] and markdown.block is not None
    assert markdown.block.title == "### Replay misses (1)"
    assert markdown.block.rows == [
        f"| [`agent/refund.py:42`](https://github.com/o/r/blob/{'a' * 40}/agent/refund.py#L42) "
        f"| `{MISSED}` | `replay miss: messages changed` |"
    ]
    assert text.block is not None and text.block.title == "replay misses (1):"
    assert text.block.rows == [f"  agent/refund.py:42  {MISSED}\n    replay miss: messages changed"]
    assert data == {
        "misses": [
            {
                "id": MISSED,
                "file": "agent/refund.py",
                "line": 42,
                "component": "messages",
                "message": "replay miss: messages changed",
                "paths": [],
            }
        ]
    }


class Owners(Section):
    """A section a later change might add: who to ask about the run."""

    def markdown(self) -> Part:
        return Part(["- Owners: @nobody"], Block("### Owners (1)", ["| `team` |"], ["", "| Team |", "|---|"]))

    def text(self) -> Part:
        return Part(["owners: team"])

    def json(self) -> dict[str, Any]:
        return {"owners": ["team"]}


def test_a_section_added_to_the_list_shows_in_all_three_renderings(monkeypatch: pytest.MonkeyPatch) -> None:
    report = missed_report()
    before = {fmt: render(report, fmt) for fmt in ("markdown", "text", "json")}
    monkeypatch.setattr(summary, "SECTIONS", (*summary.SECTIONS, Owners))

    markdown, text = render(report, "markdown"), render(report, "text")
    data = json.loads(render(report, "json"))

    # Its head line joins the head, its block comes last, and nothing else moves.
    assert markdown.startswith(before["markdown"].split("\n### ")[0] + "- Owners: @nobody\n")
    assert markdown.endswith("\n### Owners (1)\n\n| Team |\n|---|\n| `team` |\n")
    assert text.splitlines()[3] == "owners: team"
    assert text.replace("owners: team\n", "") == before["text"]
    assert list(data) == [*list(json.loads(before["json"]))[:-1], "owners", "flaky"]
    assert data["owners"] == ["team"]
    assert {k: v for k, v in data.items() if k != "owners"} == json.loads(before["json"])


def test_the_json_keeps_its_key_order() -> None:
    """`--format json` reads as it did before the sections: the flaky tests last."""
    keys = list(json.loads(render(missed_report(), "json")))
    assert keys == [
        "summary_line",
        "tests",
        "outcomes",
        "replay",
        "egress",
        "faults",
        "misses",
        "failures",
        "not_evaluated",
        "verdict",
        "fixture_changes",
        "fixtures",
        "flaky",
    ]


def test_the_comment_names_which_tests_ran_with_which_faults_and_the_line_counts_them() -> None:
    facts = replay_facts(1)
    facts["faults"] = 2
    facts["fault_list"] = [
        {"call": 1, "fault": "status=429,retry-after=1", "kind": "status"},
        {"call": 3, "fault": "every:pace=20", "kind": "pace"},
    ]
    report = make_report(
        [make_test(MISSED, "passed", replay=facts), make_test("tests/t.py::plain", "passed")]
    )
    view = View.of(report, None, [], run_secrets(), blob_links("o/r", "a" * 40))
    faults = summary.Faults(view)
    words = "status=429,retry-after=1 (request 1), every:pace=20 (request 3)"
    assert faults.markdown().head == [f"- Faults: {MISSED}: {words}"]
    # the same words, as data, are what `--format json` and the HTML page show
    assert faults.json() == {
        "faults": [
            {"id": MISSED, "file": "tests/test_refund.py", "line": 10, "outcome": "passed", "text": words}
        ]
    }
    assert report["summary"]["replay"]["faults"] == 2
    assert report_summary_line(report).endswith(" · 2 faults injected")


# --- links come from the forge that publishes -------------------------------------------------------


def test_without_links_a_location_is_plain_file_and_line() -> None:
    markdown = render(missed_report(), "markdown")

    assert "| `agent/refund.py:42` |" in markdown
    assert "](" not in markdown and "github.com" not in markdown


def test_a_gitlab_shaped_links_object_gives_gitlab_blob_links() -> None:
    sha = "b" * 40
    links = Links(f"https://gitlab.example.com/acme/agent/-/blob/{sha}/")

    markdown = render(missed_report(), "markdown", links=links)

    link = f"[`agent/refund.py:42`](https://gitlab.example.com/acme/agent/-/blob/{sha}/agent/refund.py#L42)"
    assert f"| {link} |" in markdown
    assert "github.com" not in markdown
