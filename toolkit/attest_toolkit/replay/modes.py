"""The replay modes, match rules and egress modes, and the mode a run gets by default.

Each vocabulary is one `str` enum (as vcrpy's `RecordMode`), which every option check and error message
spells from; `modes.json` beside this module holds the same words for the Vitest package, which copies
it at build (tests/contract/modes.json runs both sides' checks on the same cases, and a test keeps the
file and the enums in step). Their own module, importing nothing of the package: the pytest plugin reads
them at every pytest start, replay or not, and must not pay for the engine's modules to do so.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from enum import Enum
from typing import TypeVar


class Word(str, Enum):
    """A word of a closed vocabulary: equal to its string, and printed as it."""

    def __str__(self) -> str:
        return str(self.value)


class Mode(Word):
    """What a request with no recording gets."""

    STRICT = "strict"  # a miss, and the test fails
    AUTO = "auto"  # a live call with the engine's key, else a miss the test is not judged on
    OFF = "off"  # no replay: the provider is called


class Match(Word):
    """How a call finds its recording."""

    STRICT = "strict"  # by request key (the default)
    # ctxmesh's semantics: model calls by position, a changed request served anyway and reported as
    # drift; more calls than recorded still miss.
    LENIENT = "lenient"


class Egress(Word):
    """What the egress guard refuses."""

    BLOCK = "block"  # connections to known provider hosts
    BLOCK_ALL = "block-all"  # and every host but loopback and the allowed ones
    OFF = "off"


W = TypeVar("W", bound=Word)

MODES: tuple[str, ...] = tuple(m.value for m in Mode)
MATCHES: tuple[str, ...] = tuple(m.value for m in Match)
EGRESS: tuple[str, ...] = tuple(m.value for m in Egress)


def spelled(kind: type[Word]) -> str:
    """The words of `kind` as an error names them: `strict, auto or off`."""
    words = [w.value for w in kind]
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} or {words[-1]}"


def word_of(kind: type[W], value: str) -> W | None:
    """The word `value` is, or None when it is none of `kind`'s."""
    return next((w for w in kind if w.value == value), None)


def in_ci(env: Mapping[str, str] = os.environ) -> bool:
    """CI is set to anything but an empty or false value (as GitHub Actions and most runners set it)."""
    return env.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def default_mode(env: Mapping[str, str] = os.environ) -> Mode:
    """strict when CI is set, so a pull-request check never goes live by accident; auto locally."""
    return Mode.STRICT if in_ci(env) else Mode.AUTO
