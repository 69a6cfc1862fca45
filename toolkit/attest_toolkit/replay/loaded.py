"""Fixtures an engine holds loaded, told to its runner: a test whose fixtures are among them opens its
session without waiting for the engine's answer.

A session's open is a round trip on the control pipe, and an engine that sat idle while the test ran
answers it slowly (its processor wakes, its caches are cold): it was most of what a test's open cost.
Yet when the engine holds a test's fixtures loaded, the answer is known before it is asked: the open
cannot fail, and the session's variables differ from any other plain session's by its id alone (only
a fixture that declares tool servers, or needs a Google token, changes them). So a runner that asks
(`"plain": true` on its control lines) is told, with each answer, the plain fixtures the engine has
loaded since it was last told, by stamp (`stamp`), and once a plain session's variables with the id
left out. For an open of such fixtures alone, the runner makes the session's id, sends the open and
goes on; it reads the answer (the hit table) when the test's first call needs it, or at the close.

A fixture rewritten since it was told of has another stamp: its open waits, as every open did, and a
broken one fails there with its one-line error. A rewrite that lands between the runner's look and the
engine's (a few microseconds) fails the test at its close, on one line.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

Stamp = tuple[int, int, int, int]
KEPT = 8192  # stamps a runner keeps (an engine reads at most 2,000 fixtures ahead a run)
# Where the id stands in a session's variables (`.../r/<id>/openai/v1`), kept without it: what a
# runner substitutes (here, and for the sessions it opens from a template, replay.ahead).
ID_SLOT = "\u0000"


def stamp(st: os.stat_result) -> Stamp:
    """What tells a loaded fixture from its rewrite: device and inode (fixtures are written to a new
    file renamed into place, so a rewrite within the filesystem's clock tick, same size and all, is
    still another file), size and modification time."""
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns


def without_id(env: dict[str, str], sid: str) -> dict[str, str] | None:
    """`env` with the session's URL id taken out; None when the id shows anywhere else."""
    kept = {name: value.replace(f"/r/{sid}/", f"/r/{ID_SLOT}/") for name, value in env.items()}
    return None if any(sid in value for value in kept.values()) else kept


def with_id(kept: dict[str, str], sid: str) -> dict[str, str]:
    """A session's variables from `kept` (`without_id`)."""
    return {name: value.replace(f"/r/{ID_SLOT}/", f"/r/{sid}/") for name, value in kept.items()}


class Telling:
    """The engine's side: the plain fixtures loaded since its runner was last told."""

    def __init__(self) -> None:
        self.asked = False  # by a runner that reads what it is told: until then nothing is kept
        self.stamps: list[Stamp] = []
        self.env_told = False

    def loaded(self, fixture_stamp: Stamp, plain: bool) -> None:
        if self.asked and plain and len(self.stamps) < KEPT:
            self.stamps.append(fixture_stamp)

    def tell(self, plain_env: Callable[[str], dict[str, str]]) -> dict[str, Any]:
        """What the runner is told with an answer; `plain_env`: a plain session's variables, by id."""
        told: dict[str, Any] = {"fixtures": self.stamps}
        self.stamps = []
        if not self.env_told:
            self.env_told = True
            sid = "0" * 16  # any id: it is taken out again
            told["env"] = without_id(plain_env(sid), sid)
        return told


class Told:
    """The runner's side: what its engine told it."""

    def __init__(self) -> None:
        self.env: dict[str, str] | None = None
        self.stamps: dict[Stamp, None] = {}  # in the order told: the oldest go first past KEPT

    def learn(self, answer: dict[str, Any]) -> None:
        told = answer.get("plain")
        if not isinstance(told, dict):
            return
        if isinstance(told.get("env"), dict):
            self.env = told["env"]
        for item in told.get("fixtures", ()):
            self.stamps[tuple(item)] = None  # type: ignore[index]
        while len(self.stamps) > KEPT:
            del self.stamps[next(iter(self.stamps))]

    def variables(self, fixtures: Sequence[str]) -> Callable[[str], dict[str, str]] | None:
        """A session's variables by id, when the engine holds every one of `fixtures` loaded as it is
        on disk now; else None (the open waits for the engine's answer)."""
        kept = self.env
        if kept is None:
            return None
        for path in fixtures:
            try:
                if stamp(os.stat(path)) not in self.stamps:
                    return None
            except OSError:
                return None
        return lambda sid: with_id(kept, sid)
