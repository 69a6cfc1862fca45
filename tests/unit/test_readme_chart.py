"""The Node suite's chart the Benchmarks page (docs/benchmarks.md) shows is the page's Node table drawn
by bench/chart.py: the picture and the figures cannot disagree. `python bench/run.py --only node_suite
--chart bench/results/node-suite.svg` prints the table and writes the chart of the same run, and
`make docs-pictures` takes the page's picture of that chart (docs/gen/pictures.py)."""

from __future__ import annotations

from bench_tables import BENCHMARKS_PAGE, NODE_CHART, bench_module, page_rows
from test_docs_site import pictures


def test_the_page_shows_the_node_chart_under_its_table_as_drawn_now() -> None:
    page = BENCHMARKS_PAGE.read_text(encoding="utf-8")
    section = page[page.index("## Node (Vitest)") :]
    assert "](img/node-suite.png)" in section
    taken = (BENCHMARKS_PAGE.parent / "img" / "node-suite.png").read_bytes()
    assert pictures().source_of(taken) == pictures().digest(NODE_CHART.read_text(encoding="utf-8"))


def test_the_node_chart_is_the_page_table_drawn() -> None:
    rows = page_rows("node")
    assert len(rows) == 22  # the suite's rows, each once
    assert NODE_CHART.read_text(encoding="utf-8") == bench_module("chart").svg(rows)
