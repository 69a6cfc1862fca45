"""The re-record command a miss names: the one that fits how its fixture was made.

`attest capture --refresh NAME` re-runs a recorded command, so it fits only a fixture `attest capture`
recorded from one (`source.command`). A fixture a test recorded, one imported from cassettes, and a
test's fixture that does not exist yet are re-recorded from the test itself: `pytest
--attest-record=new NODEID` replays what still matches and records only what missed (a missing fixture
is recorded whole). The engine fits the hint of each miss it diagnoses (it is told the node id when a
test opens its session), and the pytest plugin fits the lines it builds itself.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any

_REFRESH = re.compile(r"re-record with `attest capture --refresh [^`]*`")
RECORD_FLAG = "--attest-record=new"


def by_command(source: Mapping[str, Any]) -> bool:
    """True when `attest capture` recorded the fixture of this `source` from a command (not a test,
    not an import)."""
    return bool(source.get("command")) and not source.get("test") and not source.get("imported_from")


def made_by_command(fixture: Path) -> bool:
    """`by_command` for the fixture file at `fixture`; False when it is missing or unreadable."""
    try:
        source = json.loads(fixture.read_text(encoding="utf-8"))["source"]
    except (OSError, ValueError, KeyError, TypeError):  # missing or unreadable: replay said why already
        return False
    return isinstance(source, dict) and by_command(source)


def _printable(text: str) -> str:
    """Control characters escaped, so a hint stays one line and cannot drive a terminal."""
    return "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii") for ch in text)


def pytest_hint(nodeid: str | None) -> str:
    """`pytest --attest-record=new NODEID` in backticks; without a node id, said in words."""
    if not nodeid:
        return f"`pytest {RECORD_FLAG}` on the test that replays it"
    return f"`pytest {RECORD_FLAG} {_printable(shlex.quote(nodeid))}`"


def for_test(message: str, nodeid: str | None) -> str:
    """`message` with its `attest capture --refresh` hint replaced by the pytest one."""
    return _REFRESH.sub(lambda _m: f"re-record with {pytest_hint(nodeid)}", message)


def fitted(message: str, fixture: Path | None, nodeid: str) -> str:
    """`message` with the re-record command that fits `fixture` (None: the test has no fixture yet)."""
    if fixture is not None and made_by_command(fixture):
        return message
    return for_test(message, nodeid)
