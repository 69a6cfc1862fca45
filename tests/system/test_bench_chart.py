"""Benchmark charts (bench/chart.py) opened in a real browser (tests/browser.py): every row's label ends
before its bar begins, no label runs off the picture, and every bar and target line is inside it. The
charts: the Node suite's, committed and shown on the Benchmarks page (docs/benchmarks.md), and one of
every results row the page has (the longest labels there are)."""

from __future__ import annotations

from pathlib import Path

import pytest
from bench_tables import NODE_CHART, bench_module, page_rows

pytest_plugins = ["browser"]  # the browser fixture

LAYOUT = """() => {
  const svg = document.querySelector('svg');
  const box = (el) => el.getBBox();
  return {
    width: svg.width.baseVal.value,
    height: svg.height.baseVal.value,
    labels: [...svg.querySelectorAll('text.label')].map((t) => ({ right: box(t).x + box(t).width, y: box(t).y })),
    bars: [...svg.querySelectorAll('rect.ratio')].map((r) => ({ x: box(r).x, right: box(r).x + box(r).width })),
    targets: [...svg.querySelectorAll('line.target')].map((l) => box(l).x),
  };
}"""


def layout(browser, chart: Path) -> dict:
    page = browser.new_page()
    page.goto(chart.as_uri())
    drawn = page.evaluate(LAYOUT)
    page.close()
    return drawn


@pytest.mark.parametrize("which", ["node suite (committed)", "every row of the Benchmarks page"])
def test_labels_clear_their_bars_and_everything_is_inside(browser, tmp_path: Path, which: str) -> None:
    if which == "every row of the Benchmarks page":
        chart = tmp_path / "all.svg"
        chart.write_text(bench_module("chart").svg(page_rows()), encoding="utf-8")
    else:
        chart = NODE_CHART
    drawn = layout(browser, chart)
    assert drawn["labels"] and len(drawn["labels"]) == len(drawn["bars"])
    pairs = enumerate(zip(drawn["labels"], drawn["bars"], strict=True))
    overlapping = [i for i, (label, bar) in pairs if label["right"] >= bar["x"]]
    assert overlapping == []
    assert max(bar["right"] for bar in drawn["bars"]) < drawn["width"]
    assert all(0 < x < drawn["width"] for x in drawn["targets"])
    assert max(label["y"] for label in drawn["labels"]) < drawn["height"]
