"""Run every benchmark and print one markdown table: ours against a baseline measured in the same run.

    python bench/run.py                  # everything (a few minutes on 2 cores)
    python bench/run.py --quick          # a smoke run with small sizes (about a minute)
    python bench/run.py --only lookup,startup
    python bench/run.py --fail-on-miss   # exit 1 when a target is missed
    python bench/run.py --chart bench/results.svg   # also draw the table: ratio per row, targets

Benchmarks: per_call, per_test, lookup, startup, load, providers, node_suite (this directory, one module
each; node_suite drives the Node suite in bench/node, whose dependencies `make bench` installs), then the
selection and gate benchmarks (bench_select.py, bench_gate.py) when they are present.
"""

from __future__ import annotations

import argparse
import importlib
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import BENCH, Row, clean_env

BENCHMARKS = ("per_call", "per_test", "lookup", "startup", "load", "providers", "node_suite")
# Benchmarks with their own command line: (script, arguments for --quick, arguments for a full run).
SCRIPTS = {
    "select": ("bench_select.py", ["--tests", "1000", "--fixtures", "400", "--runs", "2"], []),
    "gate": ("bench_gate.py", [], []),
}


def table(rows: list[Row]) -> str:
    lines = [
        "| benchmark | measure | attest | baseline | ratio | target | verdict |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        cells = (r.benchmark, r.measure, r.ours, r.baseline, r.ratio, r.target, r.verdict)
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines)


def run_module(name: str, workdir: Path, quick: bool) -> tuple[list[Row], float]:
    module = importlib.import_module(name)
    start = time.perf_counter()
    (workdir / name).mkdir()
    rows = module.run(workdir / name, quick=quick)
    return rows, time.perf_counter() - start


def run_script(name: str, quick: bool) -> str:
    script, quick_args, full_args = SCRIPTS[name]
    path = BENCH / script
    if not path.exists():
        return f"### {script}\n\nnot present in this checkout\n"
    argv = [sys.executable, str(path), *(quick_args if quick else full_args)]
    proc = subprocess.run(argv, capture_output=True, text=True, env=clean_env(), timeout=600, check=False)
    out = (proc.stdout + (proc.stderr if proc.returncode else "")).rstrip()
    return f"### {script} (exit {proc.returncode})\n\n```\n{out}\n```\n"


def chosen(only: str | None) -> list[str]:
    names = list(BENCHMARKS) + list(SCRIPTS)
    if not only:
        return names
    wanted = [n.strip() for n in only.split(",") if n.strip()]
    unknown = [n for n in wanted if n not in names]
    if unknown:
        raise SystemExit(
            f"bench/run.py: unknown benchmark {', '.join(unknown)} (choose from {', '.join(names)})"
        )
    return wanted


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run the attest benchmarks and print a markdown table.")
    parser.add_argument("--quick", action="store_true", help="small sizes: a smoke run of about a minute")
    parser.add_argument(
        "--fail-on-miss",
        action="store_true",
        help="exit 1 when a target is missed (the table says so anyway)",
    )
    parser.add_argument(
        "--only", metavar="NAMES", help="comma-separated: " + ", ".join(BENCHMARKS + tuple(SCRIPTS))
    )
    parser.add_argument("--chart", type=Path, metavar="SVG", help="also write the table as an SVG chart")
    args = parser.parse_args(argv)
    names = chosen(args.only)
    rows: list[Row] = []
    extra: list[str] = []
    timings: list[str] = []
    with tempfile.TemporaryDirectory(prefix="attest-bench-") as tmp:
        for name in names:
            if name in SCRIPTS:
                extra.append(run_script(name, args.quick))
                continue
            print(f"running {name} ...", file=sys.stderr, flush=True)
            found, seconds = run_module(name, Path(tmp), args.quick)
            rows += found
            timings.append(f"{name} {seconds:.0f} s")
    print(
        f"attest benchmarks{' (--quick)' if args.quick else ''}: Python {platform.python_version()}, "
        f"{os.cpu_count()} CPUs, {platform.system()} {platform.machine()}; median of several runs; "
        f"ratios are ours / baseline, measured in the same run"
    )
    print()
    if rows:
        print(table(rows))
        print()
        print("time taken: " + ", ".join(timings))
    for block in extra:
        print()
        print(block)
    if args.chart is not None:
        from chart import write

        write(args.chart, rows)
    missed = [r for r in rows if r.met is False]
    return 1 if missed and args.fail_on_miss else 0


if __name__ == "__main__":
    sys.exit(main())
