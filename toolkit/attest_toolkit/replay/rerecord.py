"""The re-record command a miss names: the one that fits how its fixture was made and is replayed.

`attest capture --refresh NAME` re-runs a recorded command, so it fits only a fixture `attest capture`
recorded from one (`source.command`). A fixture a test recorded, one imported from cassettes, and a
test's fixture that does not exist yet are re-recorded from the test itself: `pytest
--attest-record=all NODEID` records the test's fixture anew, so a changed prompt leaves no old
recording beside the new one (`new` would keep it, unused, for every later replay to report). A
fixture no test replays (imported, and replayed by `attest replay --name NAME -- CMD`) is recorded
from that command: `attest capture --name NAME -- CMD`. The engine fits the hint of each miss it
diagnoses (it is told the node id when a test opens its session), and the pytest plugin fits the
lines it builds itself.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..fixtures.document import fixture_files, name_of

_REFRESH = re.compile(r"re-record with `attest capture --refresh [^`]*`")
RECORD_FLAG = "--attest-record=all"


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
    """`pytest --attest-record=all NODEID` in backticks; without a node id, said in words."""
    if not nodeid:
        return f"`pytest {RECORD_FLAG}` on the test that replays it"
    return f"`pytest {RECORD_FLAG} {_printable(shlex.quote(nodeid))}`"


def capture_hint(name: str, fixtures_dir: str | None = None) -> str:
    """`attest capture --name NAME -- CMD`: a fixture replayed by a command is recorded from it."""
    flag = f" --fixtures-dir {shlex.quote(fixtures_dir)}" if fixtures_dir else ""
    return f"`attest capture --name {_printable(name + flag)} -- CMD`"


def for_test(message: str, nodeid: str | None) -> str:
    """`message` with its `attest capture --refresh` hint replaced by the pytest one."""
    return _REFRESH.sub(lambda _m: f"re-record with {pytest_hint(nodeid)}", message)


def for_command(message: str, name: str, fixtures_dir: str | None = None) -> str:
    """`message` with its `attest capture --refresh` hint replaced by a new capture's."""
    return _REFRESH.sub(lambda _m: f"re-record with {capture_hint(name, fixtures_dir)}", message)


def fitted(message: str, fixture: Path | None, nodeid: str) -> str:
    """`message` with the re-record command that fits `fixture` (None: the test has no fixture yet)."""
    if fixture is not None and made_by_command(fixture):
        return message
    return for_test(message, nodeid)


def missing_for_test(path: Path, nodeid: str) -> str:
    """Why a test's fixture cannot be replayed when there is no such file: how a pytest user records
    it, and the nearest name when the name looks mistyped."""
    import difflib  # a missing fixture's hint only: the engine starts without it

    name = name_of(path)
    near = difflib.get_close_matches(name, [name_of(p) for p in fixture_files(path.parent)], n=1)
    meant = f" (did you mean {_printable(repr(near[0]))}?)" if near else ""
    record = f"`pytest --attest-record=once {_printable(shlex.quote(nodeid))}`"
    return f"{path}: no such fixture{meant}; record it with {record}"
