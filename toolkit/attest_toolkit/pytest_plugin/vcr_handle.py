"""The replay of a `@pytest.mark.vcr` test (see `vcr`): loaded with the first marked test that replays."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .handle import ReplayHandle
from .stash import RECORDINGS


class VcrHandle(ReplayHandle):
    """The replay of a vcr-marked test: its own fixture plus the extra cassettes' fixtures that exist.
    It records only its own fixture, and only when the test made a call."""

    extra: list[Path]

    def fixtures(self) -> list[Path]:
        return [p for p in (self.path, *self.extra) if p.exists()]

    def _stop_recording(self, recorder: Any) -> None:
        super()._stop_recording(recorder)
        # Nothing went live, model call or plain HTTP: nothing to write, as vcrpy saves no cassette.
        if not recorder.interactions and not getattr(recorder, "plain", None):
            self.item.stash[RECORDINGS].pop()
