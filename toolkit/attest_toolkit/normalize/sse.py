"""Server-sent events, split exactly as received so a replay can serve them byte for byte."""

from __future__ import annotations

import re

_LINE_END = re.compile(r"\r\n|\r|\n")


def split_sse(text: str) -> list[str]:
    """The events of a text/event-stream body, each with its terminating blank line.

    `"".join(split_sse(text)) == text` always holds: line ends ("\\n", "\\r\\n", "\\r") are kept as
    sent, and a trailing event without its blank line is kept as the last item.
    """
    events: list[str] = []
    start = 0  # where the current event begins
    line_start = 0
    for end in _LINE_END.finditer(text):
        if end.start() == line_start:  # an empty line ends the event
            events.append(text[start : end.end()])
            start = end.end()
        line_start = end.end()
    if start < len(text):
        events.append(text[start:])
    return events
