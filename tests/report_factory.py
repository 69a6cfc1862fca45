"""Schema-valid report-v2 documents for tests of anything that reads reports (policy, summary, GitHub).

    from report_factory import make_report, make_test

    make_report()                                   # one test of every outcome, a clean isolated run
    make_report([make_test("tests/a.py::t", "failed", message="boom")])
    make_report(egress={"mode": "off", "isolation_verified": False}, replay={"live": 2})

Summary overrides replace the computed value of a summary key; for a key whose value is an object
(replay, egress, usage, environment) the given keys are merged into it.
"""

from __future__ import annotations

from typing import Any

from attest_toolkit.report.build import summarize, validate_report

FIXTURE = "tests/attest/fixtures/inc-1042.attest.json"
MISS_MESSAGE = (
    "replay miss: system prompt changed (hash a1b2c3d→e4f5a6b); "
    "re-record with `attest capture --refresh inc-1042`"
)
ISOLATED = {
    "mode": "none",
    "isolation_verified": True,
    "probe": "connect to 1.1.1.1:443 failed: Network is unreachable",
    "strategy": "userns",
}
# Two faults a test ran with (`--fault`): a 429 on its first model request, pacing on its third.
FAULTS = [
    {"call": 1, "fault": "status=429,retry-after=1", "kind": "status"},
    {"call": 3, "fault": "every:pace=20", "kind": "pace"},
]
ENVIRONMENT = {
    "toolkit_version": "0.1.0",
    "commit": "0123456789abcdef0123456789abcdef01234567",
    "python": "3.11.7",
    "platform": "linux",
    "runner": "pytest",
}


def replay_facts(
    replayed: int = 1,
    *,
    live: int = 0,
    misses: int = 0,
    mode: str = "strict",
    cost: float | None = None,
    unpriced: int | None = None,
    miss: dict[str, Any] | None = None,
    fixtures: list[str] | None = None,
    faults: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    facts: dict[str, Any] = {
        "fixtures": list(fixtures) if fixtures is not None else [FIXTURE],
        "mode": mode,
        "replayed": replayed,
        "live": live,
        "misses": misses,
    }
    if cost is not None:
        facts["live_cost_usd"] = cost
    if unpriced is not None:
        facts["unpriced"] = unpriced
    if miss is not None:
        facts["miss"] = miss
    if faults:
        facts["faults"], facts["fault_list"] = len(faults), faults
    return facts


def make_miss(
    message: str = MISS_MESSAGE,
    component: str = "system",
    file: str = "agent/refund.py",
    line: int | None = 42,
) -> dict[str, Any]:
    return {
        "message": message,
        "component": component,
        "fixture": FIXTURE,
        "location": {"file": file, "line": line},
    }


def make_test(
    test_id: str,
    outcome: str = "passed",
    *,
    line: int | None = 10,
    duration: float = 0.25,
    message: str | None = None,
    reason: str | None = None,
    replay: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A test row; its file is the part of the id before `::`."""
    test: dict[str, Any] = {
        "id": test_id,
        "file": test_id.split("::", 1)[0],
        "line": line,
        "outcome": outcome,
        "duration": duration,
        "message": message,
    }
    if reason is not None:
        test["reason"] = reason
    if replay is not None:
        test["replay"] = replay
    return test


def every_outcome() -> list[dict[str, Any]]:
    """One test of each outcome, with the replay facts such a test has."""
    return [
        make_test("tests/test_refund.py::test_passes", line=5, replay=replay_facts(3)),
        make_test(
            "tests/test_refund.py::test_strict_miss",
            "failed",
            line=12,
            message=MISS_MESSAGE,
            replay=replay_facts(1, misses=1, miss=make_miss()),
        ),
        make_test(
            "tests/test_refund.py::test_errors",
            "error",
            line=20,
            message="RuntimeError: fixture setup failed",
        ),
        make_test("tests/test_tools.py::test_skipped", "skipped", line=3, reason="needs the sandbox"),
        make_test(
            "tests/test_tools.py::test_xfailed",
            "xfailed",
            line=8,
            reason="known bug #12",
            replay=replay_facts(2),
        ),
        make_test("tests/test_tools.py::test_xpassed", "xpassed", line=14, replay=replay_facts(1)),
        make_test(
            "tests/live/test_auto.py::test_not_evaluated",
            "not_evaluated",
            line=7,
            reason="replay_miss",
            replay=replay_facts(0, misses=1, mode="auto", miss=make_miss(component="messages", line=30)),
        ),
    ]


def make_report(tests: list[dict[str, Any]] | None = None, **summary_overrides: Any) -> dict[str, Any]:
    """A schema-valid report-v2 of `tests` (default: `every_outcome()`), from an isolated run."""
    rows = every_outcome() if tests is None else tests
    summary = summarize(rows, dict(ISOLATED), dict(ENVIRONMENT), duration=sum(t["duration"] for t in rows))
    for key, value in summary_overrides.items():
        current = summary.get(key)
        summary[key] = (
            {**current, **value} if isinstance(current, dict) and isinstance(value, dict) else value
        )
    return validate_report({"version": 2, "tests": rows, "summary": summary})
