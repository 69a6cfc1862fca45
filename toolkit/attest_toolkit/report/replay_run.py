"""report-v2 for one `attest replay` run (a command, or an image): the run is the report's one test row."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .build import build_report, default_environment, replay_facts, write_report


def shown(path: Path) -> str:
    """A fixture's path as a report names it: relative to the working directory when inside it."""
    try:
        return path.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return path.as_posix()


def run_row(
    test_id: str, fixtures: Sequence[Path], summary: dict[str, Any], failed: str | None, duration: float
) -> dict[str, Any]:
    """The run as a test row: failed with its first miss (a divergence wins, as in the exit code),
    else with `failed` (what exited non-zero, None when nothing did), else passed."""
    facts = replay_facts([summary], (shown(p) for p in fixtures))
    if "miss" in facts:
        facts["miss"].pop("not_evaluated", None)
    message = facts["miss"]["message"] if "miss" in facts else failed
    return {
        "id": test_id,
        "file": shown(fixtures[0]),
        "line": None,
        "outcome": "passed" if message is None else "failed",
        "duration": round(duration, 3),
        "message": message,
        "replay": facts,
    }


def write_run_report(
    row: dict[str, Any], egress: dict[str, Any], runner: str, duration: float, path: Path
) -> None:
    built = build_report([row], egress=egress, environment=default_environment(runner), duration=duration)
    write_report(built, path)
