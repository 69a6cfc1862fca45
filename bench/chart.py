"""The results table as a chart: one bar per row with a ratio (ours / baseline, same run), the
baseline at 1x, and each row's target drawn as a line across its bar. Plain SVG, no plotting library."""

from __future__ import annotations

import os
import re
import tempfile
from html import escape
from pathlib import Path

from common import Row

BAR, GAP, PLOT, PAD = 18, 8, 360, 12
# Pixels per character a label gets, at 12 px sans-serif: room for wider fonts than Chromium's default
# on Debian (at most 5.4 for the Benchmarks page's labels; tests/system/test_bench_chart.py checks none meets its bar).
CHAR = 7.0
_RATIO = re.compile(r"^([0-9.]+)x$")
_TARGET = re.compile(r"<=\s*([0-9.]+)x")


def number(text: str, pattern: re.Pattern[str]) -> float | None:
    found = pattern.search(text.strip())
    return float(found.group(1)) if found else None


def plotted(row: Row) -> float | None:
    """The row's ratio; for a growth row (no ratio column) its own figure, which is already a ratio."""
    ratio = number(row.ratio, _RATIO)
    return ratio if ratio is not None else number(row.ours, _RATIO)


def svg(rows: list[Row]) -> str:
    shown = [(r, plotted(r), number(r.target, _TARGET)) for r in rows]
    shown = [(r, ratio, target) for r, ratio, target in shown if ratio is not None]
    top = max([1.0, *(v for _, ratio, target in shown for v in (ratio, target) if v is not None)]) * 1.1
    scale = PLOT / top
    height = PAD * 2 + 20 + len(shown) * (BAR + GAP)
    labels = [f"{r.benchmark}: {r.measure}" for r, _, _ in shown]
    x0 = PAD + round(max((len(label) for label in labels), default=0) * CHAR) + PAD
    width = x0 + PLOT + 80
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" '
        'font-size="12">',
        f'<text x="{PAD}" y="{PAD + 10}">ratio to the same-run baseline (shorter is faster); '
        "red line: the row's target</text>",
    ]
    base = x0 + scale
    parts.append(
        f'<line class="baseline" x1="{base:.1f}" y1="{PAD + 16}" x2="{base:.1f}" y2="{height - PAD}" '
        'stroke="#888" stroke-dasharray="3,3"/>'
    )
    for i, ((row, ratio, target), label) in enumerate(zip(shown, labels, strict=True)):
        y = PAD + 20 + i * (BAR + GAP)
        colour = "#c0392b" if row.met is False else "#2e86c1"
        parts.append(f'<text class="label" x="{PAD}" y="{y + BAR - 5}">{escape(label)}</text>')
        parts.append(
            f'<rect class="ratio" x="{x0}" y="{y}" width="{ratio * scale:.1f}" height="{BAR}" '
            f'fill="{colour}"><title>{ratio:.2f}x</title></rect>'
        )
        parts.append(f'<text x="{x0 + ratio * scale + 4:.1f}" y="{y + BAR - 5}">{ratio:.2f}x</text>')
        if target is not None:
            tx = x0 + target * scale
            parts.append(
                f'<line class="target" x1="{tx:.1f}" y1="{y - 2}" x2="{tx:.1f}" y2="{y + BAR + 2}" '
                f'stroke="#e74c3c" stroke-width="2"><title>target {escape(row.target)}</title></line>'
            )
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def table_rows(markdown: str) -> list[Row]:
    """The results rows of the tables in `markdown` (the Benchmarks page, docs/benchmarks.md), as the
    `Row`s bench/run.py printed them from: what `svg` draws again."""
    rows = []
    for line in markdown.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")] if line.startswith("| ") else []
        if len(cells) != 7 or cells[0] in ("benchmark", "---") or cells[4] == "ratio":
            continue
        met = None if not cells[6] else cells[6] == "met"
        rows.append(Row(*cells[:6], met))
    return rows


def write(path: Path, rows: list[Row]) -> None:
    """Written whole or not at all: a reader never sees half a chart."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(svg(rows))
    os.replace(tmp, path)
