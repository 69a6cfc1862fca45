"""The report's shape as TypedDicts, generated from schemas/report-v2.schema.json (do not edit).

Regenerate after changing a schema: `python -m attest_toolkit.report.modelgen`
(tests/integration/test_report_model.py fails while this file is stale).
"""

from __future__ import annotations

from typing import Any, Literal, TypedDict

TestOutcome = Literal["passed", "failed", "error", "skipped", "xfailed", "xpassed", "not_evaluated"]
ReplayMode = Literal["strict", "auto", "off"]
ReplayFaultListKind = Literal["status", "timeout", "disconnect", "cut", "latency", "pace"]
ReplayMissComponent = Literal[
    "system",
    "messages",
    "tools",
    "params",
    "model",
    "endpoint",
    "overflow",
    "duplicate",
    "tool",
    "bypass",
    "plain_http",
]
SummaryEgressMode = Literal["none", "guard", "off"]


class ReplayFaultList(TypedDict):
    call: int
    fault: str
    kind: ReplayFaultListKind


class ReplayLiveCall(TypedDict):
    model: str | None
    cost_usd: float | None


class Location(TypedDict):
    file: str
    line: int | None


class _ReplayMissRequired(TypedDict):
    message: str
    component: ReplayMissComponent


class ReplayMiss(_ReplayMissRequired, total=False):
    fixture: str
    paths: list[str]
    location: Location


class _ReplayRequired(TypedDict):
    fixtures: list[str]
    mode: ReplayMode
    replayed: int
    live: int
    misses: int


class Replay(_ReplayRequired, total=False):
    live_cost_usd: float
    unpriced: int
    unused: int
    tool_replayed: int
    tool_live: int
    drift: int
    drift_message: str
    flaky: str
    drift_paths: list[str]
    faults: int
    fault_list: list[ReplayFaultList]
    live_calls: list[ReplayLiveCall]
    miss: ReplayMiss


class _TestRequired(TypedDict):
    id: str
    file: str
    line: int | None
    outcome: TestOutcome
    duration: float


class Test(_TestRequired, total=False):
    reason: str | None
    message: str | None
    replay: Replay


class _SummaryFixturePathRequired(TypedDict):
    actor: str
    call: str
    change: str


class SummaryFixturePath(_SummaryFixturePathRequired, total=False):
    args: str
    asks: list[dict[str, Any]]
    note: str


class _SummaryFixtureRequired(TypedDict):
    recorded_at: str | None
    models: list[str]


class SummaryFixture(_SummaryFixtureRequired, total=False):
    path: list[SummaryFixturePath]


class _SummaryReplayRequired(TypedDict):
    replayed: int
    live: int
    misses: int
    live_cost_usd: float
    unpriced: int


class SummaryReplay(_SummaryReplayRequired, total=False):
    unused: int
    not_evaluated: int
    otlp_requests: int
    tool_replayed: int
    tool_live: int
    drift: int
    faults: int


class _SummaryUsageRequired(TypedDict):
    calls: int
    cost_usd: float


class SummaryUsage(_SummaryUsageRequired, total=False):
    """only the model calls attest itself makes (judges and embeddings)"""

    input_tokens: int
    output_tokens: int


class _SummaryEgressRequired(TypedDict):
    mode: SummaryEgressMode
    isolation_verified: bool


class SummaryEgress(_SummaryEgressRequired, total=False):
    probe: str | None
    strategy: str | None


class _SummaryEnvironmentRequired(TypedDict):
    toolkit_version: str


class SummaryEnvironment(_SummaryEnvironmentRequired, total=False):
    commit: str | None
    python: str | None
    platform: str | None
    runner: str | None
    shards: int | None


class _SummaryRequired(TypedDict):
    tests: int
    outcomes: dict[str, int]
    replay: SummaryReplay
    usage: SummaryUsage
    egress: SummaryEgress
    environment: SummaryEnvironment


class Summary(_SummaryRequired, total=False):
    duration: float
    fixtures: dict[str, SummaryFixture]


class Report(TypedDict):
    """One test run: every test with its outcome and replay facts, and the run's totals."""

    version: Literal[2]
    tests: list[Test]
    summary: Summary
