"""The benchmark code runs: a quick lookup benchmark prints its table (timings are not asserted)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

RUN = Path(__file__).resolve().parent.parent / "bench" / "run.py"
PROVIDER_VARS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL", "CI")


def test_the_quick_lookup_benchmark_prints_a_table_row_per_measure():
    env = {k: v for k, v in os.environ.items() if k not in PROVIDER_VARS}
    proc = subprocess.run(
        [sys.executable, str(RUN), "--quick", "--only", "lookup"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    rows = [line for line in proc.stdout.splitlines() if line.startswith("| lookup |")]
    measures = [row.split(" | ")[1] for row in rows]
    assert measures == [
        "hit, 10 recorded: ours vs vcrpy",
        "hit, 1,000 recorded: ours vs vcrpy",
        "hit: growth from 10 to 1,000 recorded (ours vs vcrpy)",
        "miss, 10 recorded: ours vs vcrpy",
        "miss, 1,000 recorded: ours vs vcrpy",
        "miss: growth from 10 to 1,000 recorded (ours vs vcrpy)",
        "load, 10 recorded: fixture vs vcrpy cassette",
        "load, 1,000 recorded: fixture vs vcrpy cassette",
    ]
    verdicts = [row.rstrip(" |").rsplit(" | ", 1)[-1] for row in rows if "growth" in row]
    assert all(v in ("met", "MISSED") for v in verdicts), rows
