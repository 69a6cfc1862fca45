"""A session's consumption of its tool recordings, and its tool misses.

Identical calls consume successive recordings in order; a miss is diagnosed against the next unused
recording of the same call.
"""

from __future__ import annotations

from ..tools.match import CallKey, ToolRecording
from . import diagnose
from .diagnose import Miss


class ToolChannel:
    """One session's tool recordings: looked up by key, each consumed once, in order."""

    def __init__(self, recordings: tuple[ToolRecording, ...]) -> None:
        self.recordings = recordings
        self.by_key: dict[str, list[int]] = {}
        self.by_call: dict[tuple[str, str], list[int]] = {}
        for position, rec in enumerate(recordings):
            self.by_key.setdefault(rec.call.key, []).append(position)
            self.by_call.setdefault((rec.call.server, rec.call.label), []).append(position)
        self._taken: dict[str, int] = {}
        self.used = bytearray(len(recordings))

    def lookup(self, call: CallKey, fixture: str) -> ToolRecording | Miss:
        positions = self.by_key.get(call.key, [])
        taken = self._taken.get(call.key, 0)
        if taken < len(positions):
            self._taken[call.key] = taken + 1
            self.used[positions[taken]] = 1
            return self.recordings[positions[taken]]
        if positions:
            return diagnose.tool_duplicate(fixture)
        return self._diagnose(call, fixture)

    def _diagnose(self, call: CallKey, fixture: str) -> Miss:
        same = self.by_call.get((call.server, call.label), [])
        unused = [p for p in same if not self.used[p]]
        if unused:
            rec = self.recordings[unused[0]]
            return diagnose.tool_unrecorded(call.display, rec.call.hash, call.hash, rec.fixture)
        if same:
            return diagnose.tool_overflow(len(same), fixture)
        return diagnose.tool_unrecorded(call.display, None, call.hash, fixture)

    @property
    def unused(self) -> int:
        return len(self.used) - sum(self.used)
