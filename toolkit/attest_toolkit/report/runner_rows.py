"""report-v2 for test runners in other languages (the Vitest reporter): test rows in, the report out.

The runner sends its rows on standard input as `{"runner": NAME, "guard": BOOL, "tests": [...]}`, a
row that replayed with the engine's summaries of its sessions as they are (`sessions`, and where its
miss was made, `miss_location`): the row's facts are computed here by `report.build.replay_facts`, the
function the pytest helper uses, so no runner keeps a copy of it. This side also adds what only the
toolkit knows (the run's egress, probed in the runner's own network namespace; the environment),
redacts secrets in the free-text fields and validates the whole report, so a Vitest run's report is
the pytest helper's report, checked by the same code.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import IO, Any

from ..errors import UsageError
from .build import build_report, default_environment, replay_facts, row_miss, write_report
from .summary import run_end_lines


def egress_facts(guard: bool) -> dict[str, Any]:
    """What protected this run: a network namespace (probed again here, it sends nothing), or the guard."""
    from ..sandbox import current_egress

    egress = current_egress()
    if egress["mode"] == "off" and guard:
        egress = {**egress, "mode": "guard", "isolation_verified": False}
    return egress


def write_from_rows(source: IO[str], output: Path) -> list[str]:
    """Read a runner's rows from `source` and write a validated report-v2 to `output`; return the
    lines the run ends with (`report.summary.run_end_lines`), none when no test replayed."""
    try:
        doc = json.load(source)
    except ValueError as exc:
        raise UsageError(f"standard input: not JSON: {exc}") from exc
    if not isinstance(doc, dict) or not isinstance(doc.get("tests"), list):
        raise UsageError('standard input: expected {"runner": ..., "guard": ..., "tests": [...]}')
    runner = doc.get("runner") if isinstance(doc.get("runner"), str) else None
    built = build_report(
        [with_facts(row) for row in doc["tests"]],
        egress=egress_facts(bool(doc.get("guard"))),
        environment=default_environment(runner),
        duration=doc.get("duration") if isinstance(doc.get("duration"), (int, float)) else None,
    )
    write_report(built, output)
    if not any("replay" in t for t in built["tests"]):
        return []
    return run_end_lines(built["tests"], built["summary"]["replay"])


def with_facts(row: Any) -> Any:
    """The row with its sessions' summaries turned into its `replay` facts (a row without them is
    left as it came: the report's validation judges it)."""
    if not isinstance(row, dict) or "sessions" not in row:
        return row
    row = dict(row)
    sessions, location = row.pop("sessions"), row.pop("miss_location", None)
    try:
        facts = replay_facts(sessions, (s["fixture"] for s in sessions))
    except (KeyError, TypeError, IndexError) as exc:
        raise UsageError(
            f"standard input: test {row.get('id')!r}: sessions are not the engine's summaries"
        ) from exc
    if "miss" in facts:
        facts["miss"] = row_miss(facts["miss"], location)
    return {**row, "replay": facts}
