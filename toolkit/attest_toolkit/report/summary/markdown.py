"""The pull-request summary of a report, in markdown (the comment), text (the terminal) or JSON, trimmed
to fit: the sections' head lines first, then their blocks' rows in priority order."""

from __future__ import annotations

import json
from typing import Any, Literal

from ..build import Report, redact_report, run_secrets
from .sections import NO_LINKS, Block, Flaky, Links, View, sections

Format = Literal["markdown", "text", "json"]
FORMATS = ("markdown", "text", "json")

MIN_CHARS = 200


def render(
    report: Report,
    fmt: Format = "markdown",
    *,
    links: Links = NO_LINKS,
    max_chars: int | None = None,
    verdict: Any = None,
    fixture_changes: list[dict[str, Any]] | None = None,
    notes: list[str] | None = None,
) -> str:
    """The pull-request summary of a report. The first line of markdown and text is the summary line.

    `links` are where the forge that publishes shows the code (none: locations are plain `file:line`);
    `verdict` is a policy Verdict (or its dict); `fixture_changes` a list of `fixture_changes()` results;
    `notes` are lines of our own (never report strings) shown right under the summary line.
    `max_chars` trims markdown and text to fit, keeping misses and failures first.
    """
    if fmt not in FORMATS:
        raise ValueError(f"unknown summary format {fmt!r}; use one of {', '.join(FORMATS)}")
    if max_chars is not None and max_chars < MIN_CHARS:
        raise ValueError(f"max_chars must be at least {MIN_CHARS}: the summary line and the notice must fit")
    # Redacted whole before any cell or block is cut: a cut first could leave most of a key behind.
    secrets = run_secrets()
    view = View.of(redact_report(report, secrets), verdict, fixture_changes or [], secrets, links)
    if fmt == "json":
        return json.dumps(summary_json(view), indent=2, ensure_ascii=False) + "\n"
    parts = [s.markdown() if fmt == "markdown" else s.text() for s in sections(view)]
    head = [line for part in parts for line in part.head]
    bullet = "- " if fmt == "markdown" else ""
    head[1:1] = [f"{bullet}{note}" for note in notes or []]
    return _assemble(head, [p.block for p in parts if p.block and p.block.rows], max_chars)


def facts(
    report: Report, *, verdict: Any = None, fixture_changes: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """What the summary shows, as data (`--format json`), messages redacted: for other renderings."""
    return summary_json(View.of(report, verdict, fixture_changes or [], run_secrets()))


def summary_json(view: View) -> dict[str, Any]:
    """Every section's keys in the sections' order; the flaky tests' key stays last, where it was
    before the summary had sections, so `--format json` readers see the same document."""
    shown = sections(view)
    ordered = [s for s in shown if not isinstance(s, Flaky)] + [s for s in shown if isinstance(s, Flaky)]
    return {key: value for section in ordered for key, value in section.json().items()}


def _notice(count: int) -> str:
    return f"… {count} more rows not shown; see the job summary/artifact"


def _assemble(head: list[str], sections: list[Block], max_chars: int | None) -> str:
    """Head lines, then section rows in priority order until `max_chars` would be passed.

    Whole rows are dropped, never cut, so a row's code fence is always closed; once one row does not
    fit, every later row is dropped too, so what is shown is always the most important part.
    """
    total_rows = sum(len(s.rows) for s in sections)
    if max_chars is None:
        return "".join(["\n".join(head) + "\n", *_pieces(sections)])
    notice_chars = len("\n" + _notice(total_rows) + "\n")
    head_text = _fit_head(head, max_chars - notice_chars)
    budget = max_chars - notice_chars - len(head_text)
    parts = [head_text]
    for shown, piece in enumerate(_pieces(sections)):
        if len(piece) > budget:
            return "".join(parts) + "\n" + _notice(total_rows - shown) + "\n"
        parts.append(piece)
        budget -= len(piece)
    return "".join(parts)


def _pieces(sections: list[Block]) -> list[str]:
    """Each row as it is printed, the first row of a section carrying the section's opening."""
    return [(s.opening() if i == 0 else "") + row + "\n" for s in sections for i, row in enumerate(s.rows)]


def _fit_head(head: list[str], limit: int) -> str:
    """The head lines that fit in `limit`, dropping from the end; the summary line always stays."""
    lines = list(head)
    while len(lines) > 1 and len("\n".join(lines)) + 1 > limit:
        lines.pop()
    return "\n".join(lines) + "\n"
