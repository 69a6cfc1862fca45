"""The benchmark code runs: a quick lookup benchmark prints its table (timings are not asserted)."""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

RUN = Path(__file__).resolve().parents[2] / "bench" / "run.py"
PROVIDER_VARS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL", "CI")


def test_the_quick_lookup_benchmark_prints_a_table_row_per_measure(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in PROVIDER_VARS}
    chart = tmp_path / "results.svg"
    proc = subprocess.run(
        [sys.executable, str(RUN), "--quick", "--only", "lookup", "--chart", str(chart)],
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
    # The chart: one bar per row of the table, and a target line for each row that has a target.
    drawn = ET.parse(chart).getroot()
    bars = drawn.findall("{http://www.w3.org/2000/svg}rect")
    targets = [
        line for line in drawn.iter("{http://www.w3.org/2000/svg}line") if line.get("class") == "target"
    ]
    # A growth row has no ratio column: its own figure (ours) is the ratio plotted.
    plotted = [row.split(" | ")[4] or row.split(" | ")[2] for row in rows]
    assert [bar.findtext("{http://www.w3.org/2000/svg}title") for bar in bars] == plotted
    assert len(targets) == sum(1 for row in rows if "<=" in row)
