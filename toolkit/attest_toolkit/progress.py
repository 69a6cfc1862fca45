"""A progress line for long work: rewritten in place on a terminal, silent in CI logs.

On a terminal (the stream is a tty and CI is unset) `update` redraws one line with `\\r`; elsewhere
only `note` lines and the final line are written, so a CI log holds the outcome and not the ticks.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Mapping
from typing import IO

_CLEAR_TO_END = "\x1b[K"


def counted(count: int, noun: str) -> str:
    """`1 call`, `2 calls`: a count and its noun, for the lines people read."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def on_terminal(stream: IO[str], env: Mapping[str, str] | None = None) -> bool:
    env = os.environ if env is None else env
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty()) and not env.get("CI")


class ProgressLine:
    """Thread-safe: the capture proxy updates it from its own thread while the main thread waits."""

    def __init__(self, stream: IO[str] | None = None, live: bool | None = None, shared: bool = False) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.live = on_terminal(self.stream) if live is None else live
        # shared: another program writes to the same terminal meanwhile (capture's command), so each
        # drawn line is ended at once and its output never lands on the end of ours.
        self.shared = shared
        self._lock = threading.Lock()
        self._drawn = False

    def update(self, text: str) -> None:
        """Redraw the progress line (terminal only)."""
        if not self.live:
            return
        with self._lock:
            self._write("\r" + text + _CLEAR_TO_END + ("\n" if self.shared else ""))
            self._drawn = not self.shared

    def note(self, text: str) -> None:
        """A line that stays, written everywhere; on a terminal it does not overwrite the progress."""
        with self._lock:
            self._end_drawn_line()
            self._write(text + "\n")

    def finish(self, text: str) -> None:
        """The final line, written everywhere (it replaces the progress line on a terminal)."""
        with self._lock:
            prefix = "\r" if self._drawn else ""
            self._write(prefix + text + (_CLEAR_TO_END if self._drawn else "") + "\n")
            self._drawn = False

    def _end_drawn_line(self) -> None:
        if self._drawn:
            self._write("\n")
            self._drawn = False

    def _write(self, text: str) -> None:
        self.stream.write(text)
        self.stream.flush()
