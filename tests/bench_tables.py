"""The benchmark tables the documentation shows (docs/benchmarks.md), read back as the rows bench/run.py
printed, and bench/chart.py to draw them: what tests/unit/test_readme_chart.py and
tests/system/test_bench_chart.py compare."""

from __future__ import annotations

import importlib
import sys
from types import ModuleType
from typing import Any

from conftest import REPO

BENCH = REPO / "bench"
NODE_CHART = BENCH / "results" / "node-suite.svg"
BENCHMARKS_PAGE = REPO / "docs" / "benchmarks.md"


def bench_module(name: str) -> ModuleType:
    """A module of bench/ (not a package: its modules import each other by name)."""
    sys.path.insert(0, str(BENCH))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(BENCH))


def page_rows(benchmark: str | None = None) -> list[Any]:
    """Every results-table row of the Benchmarks page (those of `benchmark` only, when given), as the
    `common.Row`s they were printed from."""
    rows = bench_module("chart").table_rows(BENCHMARKS_PAGE.read_text(encoding="utf-8"))
    return [row for row in rows if benchmark is None or row.benchmark == benchmark]
