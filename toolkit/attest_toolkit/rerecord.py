"""The re-record command a miss in pytest names: the one that fits how its fixture was made.

The engine's miss line ends with `attest capture --refresh NAME`, right for a fixture `attest capture`
recorded from a command. A fixture a test recorded, one imported from cassettes, and a test's fixture
that does not exist yet are re-recorded from the test itself: `pytest --attest-record=new NODEID`
replays what still matches and records only what missed (a missing fixture is recorded whole).
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

_REFRESH = re.compile(r"re-record with `attest capture --refresh [^`]*`")


def made_by_command(fixture: Path) -> bool:
    """True when `attest capture` recorded the fixture from a command (not a test, not an import)."""
    try:
        source = json.loads(fixture.read_text(encoding="utf-8"))["source"]
    except (OSError, ValueError, KeyError, TypeError):  # missing or unreadable: replay said why already
        return False
    return bool(source.get("command")) and not source.get("test") and not source.get("imported_from")


def fitted(message: str, fixture: Path | None, nodeid: str) -> str:
    """`message` with the re-record command that fits `fixture` (None: the test has no fixture yet)."""
    if fixture is not None and made_by_command(fixture):
        return message
    return _REFRESH.sub(f"re-record with `pytest --attest-record=new {shlex.quote(nodeid)}`", message)
