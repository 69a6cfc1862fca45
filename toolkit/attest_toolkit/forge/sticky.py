"""The sticky summary a forge keeps on a change (a GitHub comment, a GitLab note): its body and how
it is found again. The marker is the body's last line; only the last line counts, so a quote of the
marker in a reply, or one inside the summary, does not make a body ours. Whose it is (the author) is
the forge's check: anyone can paste the marker."""

from __future__ import annotations

from .. import __version__
from ..pricing.table import table_date
from .trim import fit

MARKER = "<!-- attest-toolkit:summary -->"


def sticky_body(markdown: str, limit: int, notice: str) -> str:
    """The rendered summary, trimmed under the forge's `limit` (characters), then who wrote it and the
    date of the prices its costs come from, and the marker line."""
    footer = f"\n<sub>attest-toolkit {__version__} · model prices of {table_date()}</sub>\n{MARKER}\n"
    text = markdown if markdown.endswith("\n") else markdown + "\n"
    return fit(text, limit - len(footer), unit="chars", notice=notice) + footer


def is_sticky(body: str | None) -> bool:
    """A summary when its last line is exactly the marker, as `sticky_body` writes it."""
    lines = (body or "").rstrip().splitlines()
    return bool(lines) and lines[-1].strip() == MARKER
