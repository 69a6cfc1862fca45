"""Reading ahead: the fixtures beside the ones a run opens, loaded while the engine has nothing to do.

A suite opens one fixture per test, most of them from one directory, and loading a fixture (reading
it, checking its digest, scanning it for credentials, building each recording's bytes) is most of
what a test's open waits for. Once a run has opened two fixtures of a directory, the engine loads
that directory's other fixtures, one between each turn of its loop, so a later test's open finds its
fixture loaded. A run of one test reads nothing ahead.

A fixture read ahead is loaded exactly as an open loads it, into the same cache (`FixtureStore`, keyed
by the file's stamp, `loaded.stamp`, so a fixture rewritten since is loaded again when opened). One
that fails to load is left alone: its open loads it again and fails with the same one-line error.
Large fixtures are left to their open (one load delays the requests that arrive meanwhile), and a run
reads at most `MAX_FILES` fixtures or `MAX_BYTES` ahead.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from collections import deque
from collections.abc import Iterable
from pathlib import Path

from ..fixtures.document import fixture_files
from .index import FixtureStore

MAX_FILE_BYTES = 1024 * 1024  # a larger fixture is loaded when a session opens it
MAX_FILES = 2000
MAX_BYTES = 64 * 1024 * 1024  # of files: loaded, a fixture takes a few times its size in memory
OPENED_FIRST = 2  # fixtures a run opens from a directory before the rest of it is read ahead


class ReadAhead:
    """Loads the fixtures beside those opened into `store`, on the running loop, one per turn."""

    def __init__(self, store: FixtureStore, lock: threading.Lock) -> None:
        self.store, self.lock = store, lock
        self.opened: dict[Path, set[Path]] = {}  # a directory -> its fixtures opened so far
        self.queue: deque[Path] = deque()
        self.files = self.bytes = 0
        self.running = False

    def opened_now(self, paths: Iterable[Path]) -> None:
        """Note fixtures a session just opened; a directory of which this makes `OPENED_FIRST` is
        queued. Called on the engine's loop: with no loop running (a library caller), nothing is read."""
        for path in paths:
            seen = self.opened.setdefault(path.parent, set())
            if len(seen) < OPENED_FIRST:
                seen.add(path)
                if len(seen) == OPENED_FIRST:
                    self.queue.extend(p for p in fixture_files(path.parent) if p not in seen)
        if self.queue and not self.running:
            with contextlib.suppress(RuntimeError):  # no running loop
                asyncio.get_running_loop().call_soon(self._step)
                self.running = True

    def _step(self) -> None:
        while self.queue and not self._load(self.queue.popleft()):
            pass  # skipped without loading: take the next one in this turn
        if self.queue and self.files < MAX_FILES and self.bytes < MAX_BYTES:
            asyncio.get_running_loop().call_soon(self._step)
        else:
            self.queue.clear()
            self.running = False

    def _load(self, path: Path) -> bool:
        """Load `path` unless it is loaded, too large or gone; whether it was read."""
        try:
            size = os.stat(path).st_size
        except OSError:
            return False
        if size > MAX_FILE_BYTES or self.store.holds(path):
            return False
        self.files += 1
        self.bytes += size
        with self.lock, contextlib.suppress(Exception):  # its open fails with the error, on one line
            self.store.get(path)
        return True
