"""What a test's replays leave on its item for the plugin's report hooks: their summaries, the
handles still running, and what they recorded.

Its own module, light: the hooks read these keys on every test, and a run in which no test replays must
not import the handles' engine client and SDK patches to do so.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import pytest

if TYPE_CHECKING:
    from ..capture.proxy import RecordingApp
    from ..capture.rebase import Rebaser


class Replay(Protocol):
    """A running replay as the hooks see it (`handle.ReplayHandle`)."""

    name: str
    path: Path

    def stop(self) -> None: ...


REPLAYS = pytest.StashKey[list[dict[str, Any]]]()
HANDLES = pytest.StashKey[list[Replay]]()
RECORDINGS = pytest.StashKey[list[tuple[Replay, "RecordingApp | Rebaser"]]]()
