"""Renderers: the one-line replay summary, and the pull-request summary built from report-v2.

`line` (the summary line and the lines a run ends with), `sections` (what the summary shows, one class
per part, for markdown, text and JSON alike), `markdown` (the summary assembled and trimmed),
`verdict` (the policy verdict on its own), `cells` (report strings made inert in a cell). Links to the
code are the publishing forge's (`Links`): this package names none.
"""

from .cells import limit_words
from .line import (
    LINE_PREFIX,
    call_cost,
    money,
    price_note,
    replay_line,
    report_summary_line,
    run_end_lines,
    summary_line,
)
from .markdown import facts, render
from .sections import NO_LINKS, Links
from .verdict import render_verdict

__all__ = [
    "LINE_PREFIX",
    "NO_LINKS",
    "Links",
    "call_cost",
    "facts",
    "limit_words",
    "money",
    "price_note",
    "render",
    "render_verdict",
    "replay_line",
    "report_summary_line",
    "run_end_lines",
    "summary_line",
]
