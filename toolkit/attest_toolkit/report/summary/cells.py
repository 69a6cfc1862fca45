"""Report strings in markdown and text cells: inert, on one line, cut to fit."""

from __future__ import annotations

from typing import Any

CELL_CHARS = 300  # a table cell longer than this is cut; the full text is in the report
BLOCK_CHARS = 1500  # the same for a failure message shown in a code block


def where(file: str, line: int | None) -> str:
    return f"{file}:{line}" if line else file


def limit_words(value: Any) -> str:
    """A policy rule's limit or actual value as every rendering shows it (never Python's None/False)."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def columns(*names: str) -> list[str]:
    """A markdown table's header row and the row under it."""
    return [f"| {' | '.join(names)} |", "|" + "---|" * len(names)]


def tests_cell(ids: list[str], shown: int = 3) -> str:
    if not ids:
        return "—"
    more = f" +{len(ids) - shown} more" if len(ids) > shown else ""
    return ", ".join(code(i) for i in ids[:shown]) + more


# autolinks and @mentions do not apply, on one line, with the table's pipes escaped.


def cell(text: str | None, limit: int = CELL_CHARS) -> str:
    """Our own words in a table cell (numbers and fixed phrases), on one line."""
    one_line = flat(text, limit)
    return one_line.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;") or "—"


def code(text: str | None, limit: int = CELL_CHARS, *, in_table: bool = True) -> str:
    """`text` from a report as one inert inline code span, whatever backticks, pipes or breaks it holds.

    The delimiter is longer than any backtick run in the text, and spaces pad it when the text holds a
    backtick, so the text can neither close the span nor merge with it. Inside a table a pipe must be
    escaped even in a code span (GFM splits cells first), and `\\|` is read as a pipe in the code.
    """
    one_line = flat(text, limit)
    if not one_line:
        return "—"
    delimiter = "`" * (_longest_run(one_line, "`") + 1)
    pad = " " if "`" in one_line else ""
    body = one_line.replace("|", "\\|") if in_table else one_line
    return f"{delimiter}{pad}{body}{pad}{delimiter}"


def _longest_run(text: str, char: str) -> int:
    longest, run = 0, 0
    for c in text:
        run = run + 1 if c == char else 0
        longest = max(longest, run)
    return longest


def fence(text: str) -> tuple[str, str]:
    """A fence longer than any run of backticks in `text`, so the text cannot close it early."""
    marks = "`" * max(3, _longest_run(text, "`") + 1)
    return marks + "text", marks


def flat(text: str | None, limit: int = CELL_CHARS) -> str:
    joined = " ".join((text or "").split())
    return joined if len(joined) <= limit else joined[: limit - 1] + "…"
