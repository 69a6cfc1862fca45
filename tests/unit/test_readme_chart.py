"""The Node suite's chart the README shows is the README's Node table drawn by bench/chart.py: the
picture and the figures cannot disagree. `python bench/run.py --only node_suite --chart
bench/results/node-suite.svg` prints the table and writes the chart of the same run."""

from __future__ import annotations

from bench_tables import NODE_CHART, bench_module, readme_rows
from conftest import REPO


def test_the_readme_shows_the_node_chart_under_its_table() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("### Node (Vitest)") :]
    assert f"]({NODE_CHART.relative_to(REPO).as_posix()})" in section[: section.index("\n## ")]


def test_the_node_chart_is_the_readme_table_drawn() -> None:
    rows = readme_rows("node")
    assert len(rows) == 19  # the suite's rows, each once
    assert NODE_CHART.read_text(encoding="utf-8") == bench_module("chart").svg(rows)
