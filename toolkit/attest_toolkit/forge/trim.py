"""Fitting markdown under a forge's size limit without leaving a code fence or a `<details>` open.

A forge refuses a comment or a note over its limit (`github/trim.py` and `gitlab/` name theirs). The
renderer trims by rows first; this is the last line of defence, cutting at a line boundary, closing
what the cut left open and saying so.
"""

from __future__ import annotations

import re
from typing import Literal

Unit = Literal["chars", "bytes"]

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_DETAILS_OPEN = re.compile(r"<details\b", re.IGNORECASE)
_DETAILS_CLOSE = re.compile(r"</details\s*>", re.IGNORECASE)


def size(text: str, unit: Unit) -> int:
    """Characters as a forge counts them at worst (UTF-16 code units), or UTF-8 bytes."""
    if unit == "bytes":
        return len(text.encode("utf-8"))
    return len(text.encode("utf-16-le")) // 2


def cut(text: str, limit: int, unit: Unit = "chars") -> str:
    """`text` unchanged when within `limit`, else its longest prefix that fits, ending with "…"."""
    if size(text, unit) <= limit:
        return text
    return _prefix(text, limit - size("…", unit), unit) + "…"


def _prefix(text: str, budget: int, unit: Unit) -> str:
    """The longest prefix of `text` within `budget`, never splitting a character."""
    encoding = "utf-8" if unit == "bytes" else "utf-16-le"
    width = 1 if unit == "bytes" else 2
    raw = text.encode(encoding)[: max(budget, 0) * width]
    return raw.decode(encoding, errors="ignore")


def _closers(text: str) -> str:
    """What closes the fence and the `<details>` blocks that `text` leaves open."""
    fence: str | None = None
    for line in text.splitlines():
        match = _FENCE.match(line)
        if not match:
            continue
        marker = match.group(1)
        if fence is None:
            fence = marker
        elif marker[0] == fence[0] and len(marker) >= len(fence) and not line.strip()[len(marker) :]:
            fence = None
    # `text` ends at a line boundary, so closers start on a line of their own.
    closing = f"{fence}\n" if fence else ""
    open_details = len(_DETAILS_OPEN.findall(text)) - len(_DETAILS_CLOSE.findall(text))
    return closing + "</details>\n" * max(open_details, 0)


def fit(text: str, limit: int, *, unit: Unit = "chars", notice: str) -> str:
    """`text` unchanged when within `limit`, else cut at a line, closed, and ended with `notice`."""
    if size(text, unit) <= limit:
        return text
    # The cut ends at a line boundary; one blank line sets the notice apart.
    tail = f"\n{notice}\n"
    budget = limit - size(tail, unit)
    if budget <= 0:
        return _prefix(notice, limit, unit)
    reserve = 0
    while True:
        head = _prefix(text, budget - reserve, unit)
        head = head[: head.rfind("\n") + 1]
        closed = head + _closers(head)
        if size(closed, unit) <= budget or not head:
            return (closed if head else "") + tail
        # What the cut left open did not fit: make room for it and cut again (reserve only grows).
        reserve = max(reserve + 1, size(closed, unit) - size(head, unit))
