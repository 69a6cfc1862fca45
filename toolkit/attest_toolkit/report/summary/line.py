"""The summary line (`4 replayed · 0 live model calls · $0.00`) and the lines a test run ends with."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ...pricing.cost import price_note
from ...progress import counted
from ..build import FAILED_OUTCOMES, Report, Row, Test, replay_of

# What the summary line opens with wherever a person reads it (a terminal, the comment, the job summary).
LINE_PREFIX = "attest replay: "


def summary_line(
    replayed: int,
    live: int,
    live_cost_usd: float,
    unpriced: int = 0,
    tools: tuple[int, int] = (0, 0),
    unused: int = 0,
    missed: int = 0,
    failed: int = 0,
    faults: int = 0,
) -> str:
    """`4 replayed · 0 live model calls · $0.00`, with `(+N unpriced)` when some live calls had no price,
    `· N missed` and `· N failed` when a request matched no recording or a test (the command) failed,
    `· 3 tool calls replayed · 0 live tool calls` when the run had a tool channel, and
    `· N recordings unused` when the agent did not make every recorded call (a call that went around
    the proxy, to a provider directly, leaves its recording unused), and `· N faults injected` when
    `--fault` injected some (a fault is not a miss). Callers pass `unused` only for a replay without
    misses: a miss already says why a recording went unused."""
    # The wording is fixed, "1 live model calls" included, so that logs and checks can match it.
    line = f"{replayed} replayed · {live} live model calls · {money(live_cost_usd)}"
    line = f"{line} (+{unpriced} unpriced)" if unpriced else line
    line += f" · {missed} missed" if missed else ""
    line += f" · {failed} failed" if failed else ""
    if any(tools):
        line += f" · {tools[0]} tool calls replayed · {tools[1]} live tool calls"
    line = f"{line} · {counted(unused, 'recording')} unused" if unused else line
    return f"{line} · {counted(faults, 'fault')} injected" if faults else line


def money(usd: float) -> str:
    """Dollars as every line shows them: to the cent (`$0.00`, `$0.03`)."""
    return f"${usd:.2f}"


def call_cost(usd: float | None) -> str:
    """A cost that may be a fraction of a cent, to the millionth of a dollar without trailing zeros
    (`$0.0012`, `$0.000042`, `$0.75`, `$0.00`), or `unpriced`."""
    if usd is None:
        return "unpriced"
    digits = f"{usd:.6f}".rstrip("0")
    whole, _, cents = digits.partition(".")
    return f"${whole}.{cents.ljust(2, '0')}"


def tool_counts(counts: Mapping[str, Any]) -> tuple[int, int]:
    return int(counts.get("tool_replayed", 0)), int(counts.get("tool_live", 0))


def replay_line(counts: Mapping[str, Any], failed: int = 0) -> str:
    """`attest replay: 4 replayed · 0 live model calls · $0.00`, from a replay's counts."""
    return LINE_PREFIX + summary_line(
        counts["replayed"],
        counts["live"],
        counts["live_cost_usd"],
        counts["unpriced"],
        tool_counts(counts),
        _unused(counts),
        int(counts.get("misses", 0)),
        failed,
        int(counts.get("faults", 0)),
    )


def run_end_lines(
    tests: Iterable[Test | Row], totals: Mapping[str, Any], skip_reasons: bool = True
) -> list[str]:
    """What a test run ends with, in pytest and Vitest alike: why each not-evaluated test was not
    evaluated (unless the runner already prints skip reasons), each call that went live, the price
    table when there were some, then the summary line with the run's misses and failed tests."""
    tests = list(tests)
    lines = [f"not evaluated: {t['id']}: {_miss_text(t)}" for t in tests if t["outcome"] == "not_evaluated"]
    lines = lines if skip_reasons else []
    for test in tests:
        for call in replay_of(test).get("live_calls", []):
            lines.append(
                f"went live: {test['id']} → {call['model'] or 'unknown model'}, {call_cost(call['cost_usd'])}"
            )
    if totals.get("live"):
        lines.append(price_note())
    failed = sum(1 for t in tests if t["outcome"] in FAILED_OUTCOMES)
    return [*lines, replay_line(totals, failed)]


def _miss_text(test: Test | Row) -> str:
    miss = replay_of(test).get("miss")
    return str(miss["message"]) if miss else str(test.get("message") or "replay_miss")


def _unused(counts: Mapping[str, Any]) -> int:
    return 0 if counts.get("misses") else int(counts.get("unused", 0))


def report_summary_line(report: Report) -> str:
    replay = report["summary"]["replay"]
    return summary_line(
        replay["replayed"],
        replay["live"],
        replay["live_cost_usd"],
        replay["unpriced"],
        tool_counts(replay),
        _unused(replay),
        replay["misses"],
        sum(report["summary"]["outcomes"].get(o, 0) for o in FAILED_OUTCOMES),
        replay.get("faults", 0),
    )
