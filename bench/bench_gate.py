"""The gate on a big run: load + validate a 20,000-test report, evaluate the policy, render the summary.

Each figure is compared with a baseline measured in the same run on the same file: a plain
`json.load`, the least any reader of the report must do. Target: under 1 s for each step.

    python bench/bench_gate.py [--tests 20000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from attest_toolkit.github.links import blob_links
from attest_toolkit.report.build import build_report, load_report
from attest_toolkit.report.policy import evaluate, parse_policy
from attest_toolkit.report.summary import render

COMMENT_LIMIT = 65_536  # GitHub's limit for one comment
MISS = "replay miss: system prompt changed (hash a1b2c3d→e4f5a6b); re-record with `attest capture --refresh inc-{i}`"
POLICY = {
    "max_live_calls": 10,
    "max_live_cost_usd": 1.0,
    "overrides": [
        {"paths": ["tests/live/**"], "max_live_calls": 100, "misses": "allow"},
        {"paths": ["tests/unit_*.py"], "require_egress": "guard"},
    ],
}


def make_tests(count: int) -> list[dict[str, Any]]:
    """Mixed outcomes, most tests passing, as a large real suite would be."""
    tests = []
    for i in range(count):
        kind = i % 20
        file = f"tests/live/test_{i % 50}.py" if kind == 7 else f"tests/unit_{i % 400}.py"
        test: dict[str, Any] = {
            "id": f"{file}::test_case_{i}",
            "file": file,
            "line": 1 + i % 300,
            "outcome": "passed",
            "duration": 0.01,
            "message": None,
            "replay": {
                "fixtures": [f"tests/attest/fixtures/f{i % 100}.attest.json"],
                "mode": "strict",
                "replayed": 2,
                "live": 0,
                "misses": 0,
            },
        }
        if kind == 1:
            test.update(outcome="failed", message=f"AssertionError: assert {i} == 0\n  where {i} = total()")
        elif kind == 2:
            test["outcome"] = "failed"
            test["message"] = MISS.format(i=i)
            test["replay"].update(
                misses=1,
                miss={
                    "message": MISS.format(i=i),
                    "component": "system",
                    "location": {"file": "agent/run.py", "line": 10 + i % 90},
                },
            )
        elif kind == 3:
            test.update(outcome="not_evaluated", reason="replay_miss")
        elif kind == 4:
            test.update(outcome="skipped", reason="needs the sandbox")
        elif kind == 5:
            test["outcome"] = "xfailed"
        elif kind == 7:
            test["replay"].update(live=1, live_cost_usd=0.0004)
        tests.append(test)
    return tests


def best_of(repeat: int, fn: Callable[[], object]) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    egress = {"mode": "none", "isolation_verified": True, "probe": "connect failed", "strategy": "userns"}
    report = build_report(make_tests(args.tests), egress=egress)
    policy = parse_policy(POLICY)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "attest-report.json"
        path.write_text(json.dumps(report), encoding="utf-8")
        size = path.stat().st_size

        def plain_load() -> object:
            with path.open(encoding="utf-8") as fh:
                return json.load(fh)

        baseline = best_of(args.repeat, plain_load)
        figures = {
            "load_report (parse + schema)": best_of(args.repeat, lambda: load_report(path)),
            "policy evaluate": best_of(args.repeat, lambda: evaluate(report, policy)),
            "summary render (markdown, trimmed)": best_of(
                args.repeat,
                lambda: render(
                    report,
                    "markdown",
                    links=blob_links("o/r", "0" * 40),
                    max_chars=COMMENT_LIMIT,
                    verdict=evaluate(report, policy),
                ),
            ),
            "summary render (text, full)": best_of(args.repeat, lambda: render(report, "text")),
        }
    print(f"report: {args.tests} tests, {size / 1e6:.1f} MB; best of {args.repeat}")
    print(f"{'baseline: json.load':38} {baseline * 1000:8.1f} ms")
    for name, seconds in figures.items():
        verdict = "ok" if seconds < 1.0 else "OVER 1 s"
        print(f"{name:38} {seconds * 1000:8.1f} ms  {seconds / baseline:6.1f}x baseline  {verdict}")


if __name__ == "__main__":
    main()
