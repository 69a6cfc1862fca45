"""Workflow commands, environment files and size limits, as GitHub's runner reads them.

Relies on GitHub's documented workflow-command syntax (`::name k=v,k=v::message`, with `%`, CR, LF
escaped in data and additionally `:` and `,` in properties), the GITHUB_OUTPUT file format (`name=value`
or `name<<DELIMITER` ... `DELIMITER`), and the limits: 65,536 characters per comment, 1 MiB per step
summary.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from attest_toolkit.errors import UsageError
from attest_toolkit.github import commands, trim
from attest_toolkit.github.commands import Annotation
from fake_runner import parse_command, parse_outputs


def test_error_command_round_trips_hostile_text_through_the_runners_parsing() -> None:
    message = "100% broken\r\nsecond line: a, b"
    title = "miss: messages, turn 2"
    line = commands.annotation_command(
        Annotation("error", message, file="tests/a,b:c.py", line=12, title=title)
    )
    assert "\n" not in line and "\r" not in line
    name, props, data = parse_command(line)
    assert name == "error"
    assert props == {"file": "tests/a,b:c.py", "line": "12", "title": title}
    assert data == message


def test_escaping_follows_the_documented_table() -> None:
    assert commands.escape_data("50%\r\nnext") == "50%25%0D%0Anext"
    assert commands.escape_property("a: b, c%") == "a%3A b%2C c%25"
    # Colons and commas are left alone in data: only properties are delimited by them.
    assert commands.escape_data("a: b, c") == "a: b, c"


def test_properties_without_a_value_are_left_out() -> None:
    assert (
        commands.workflow_command("warning", "m", file=None, line=None, title="t") == "::warning title=t::m"
    )
    assert commands.annotation_command(Annotation("notice", "m", line=3)) == "::notice::m"


def test_outputs_single_and_multi_line(tmp_path: Path) -> None:
    path = tmp_path / "output"
    path.write_text("earlier=kept\n")
    commands.append_outputs(path, {"verdict": "pass", "body": "line 1\nEOF\nline 3", "empty": ""})
    values = parse_outputs(path.read_text())
    assert values == {"earlier": "kept", "verdict": "pass", "body": "line 1\nEOF\nline 3", "empty": ""}


def test_output_delimiters_are_unique_per_value(tmp_path: Path) -> None:
    text = commands.format_outputs({"a": "x\ny", "b": "x\ny"})
    delimiters = re.findall(r"<<(\S+)", text)
    assert len(set(delimiters)) == 2


def test_an_output_name_that_would_break_the_file_is_refused() -> None:
    with pytest.raises(UsageError):
        commands.format_outputs({"a=b": "x"})


def test_step_summary_is_appended_and_kept_under_the_limit(tmp_path: Path) -> None:
    path = tmp_path / "summary.md"
    path.write_text("# from an earlier tool\n")
    rows = "".join(f"| row {i} | {'é' * 40} |\n" for i in range(40_000))
    trimmed = commands.append_step_summary(path, "## attest\n\n```\ncode\n" + rows)
    content = path.read_bytes()
    assert trimmed
    assert len(content) <= trim.STEP_SUMMARY_LIMIT
    text = content.decode("utf-8")
    assert text.startswith("# from an earlier tool\n## attest")
    assert "1 MiB job summary limit" in text.splitlines()[-1]
    assert text.count("```") % 2 == 0


def test_a_small_step_summary_is_appended_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "summary.md"
    assert not commands.append_step_summary(path, "all good")
    assert path.read_text() == "all good\n"


def test_fit_leaves_short_text_alone() -> None:
    assert trim.fit("short\n", 100, notice="cut") == "short\n"


def test_fit_closes_an_open_fence_and_details_and_ends_with_the_notice() -> None:
    text = "head\n<details><summary>x</summary>\n\n````python\n" + "code line\n" * 1000 + "````\n</details>\n"
    out = trim.fit(text, 500, notice="NOTICE")
    assert trim.size(out, "chars") <= 500
    assert out.endswith("````\n</details>\n\nNOTICE\n")


def test_fit_counts_what_github_counts() -> None:
    # An emoji outside the BMP is two UTF-16 code units: counted as two, never split.
    text = "😀" * 100
    out = trim.fit(text, 60, notice="n")
    assert trim.size(out, "chars") <= 60
    assert "\ud83d" not in out


def test_fit_in_bytes_never_splits_a_character() -> None:
    out = trim.fit("é\n" * 1000, 101, unit="bytes", notice="cut")
    assert len(out.encode("utf-8")) <= 101
    out.encode("utf-8").decode("utf-8")
