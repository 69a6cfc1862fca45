"""The lines a replayed command ends with on the terminal: each miss and drift, the price note, the
summary line. Printed by whoever ran the command (`attest replay`, `attest-engine replay`, an image
replay), never by the engine: the engine serves, and what a run's end looks like is the report's.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

from ..pricing.cost import price_note


def print_outcome(summary: Mapping[str, Any], failed: bool = False) -> None:
    """Each miss on standard error, then the summary line (with `· 1 failed` when the command
    failed) on standard output."""
    from .summary import replay_line  # loaded when a run ends, not to start serving

    for drift in summary.get("drift_list", []):
        sys.stderr.write(drift["message"] + "\n")
    for miss in summary["miss_list"]:
        sys.stderr.write(miss["message"] + "\n")
    for note in summary.get("fault_notes", []):
        sys.stderr.write(note + "\n")
    if summary["live"]:
        sys.stderr.write(price_note() + "\n")
    print(replay_line(summary, int(failed)), flush=True)
