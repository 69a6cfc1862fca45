"""report-v2: building, reading, writing and merging test-run reports (JUnit XML: `report/junit.py`).

The contract is `schemas/report-v2.schema.json`. A report holds every test with its outcome and replay
facts, and the run's totals. Reports come from the pytest plugin (`build_report`), from the JUnit XML
of any other runner (`attest_toolkit.report.junit`), or from several CI shards (`merge_reports`).
"""

from __future__ import annotations

import json
import os
import platform
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, TypeVar, cast, get_args

from .. import __version__
from ..credentials.names import is_secret_env_name
from ..credentials.scan import Secrets, environment_secrets, is_env_secret
from ..errors import AttestError, read_text
from ..fixtures.catalog import age_days
from ..fixtures.catalog import models as fixture_models
from ..fixtures.document import atomic_write
from ..fixtures.sequence import recorded_path
from ..fixtures.validation import first_error
from . import model

VERSION = 2
# Written once, in the schema: the generated model names each set of values.
OUTCOMES: tuple[model.TestOutcome, ...] = get_args(model.TestOutcome)
FAILED_OUTCOMES = frozenset({"failed", "error"})
# From the strongest network isolation to the weakest; a merged run is only as isolated as its weakest shard.
EGRESS_MODES: tuple[model.SummaryEgressMode, ...] = get_args(model.SummaryEgressMode)
# Counts only some runs have: tool-channel requests served from fixtures and live, model requests
# served despite a change under lenient matching (drift), and faults injected (`--fault`). Absent when
# zero, so older reports read the same.
ToolCount = Literal["tool_replayed", "tool_live", "drift", "faults"]
ReplayCount = Literal["replayed", "live", "misses", "unpriced", "unused"]
TOOL_COUNTS: tuple[ToolCount, ...] = ("tool_replayed", "tool_live", "drift", "faults")
REPLAY_COUNTS: tuple[ReplayCount, ...] = ("replayed", "live", "misses", "unpriced", "unused")
# What a summary's replay totals must cover of its rows' sums. Literal keys, so the types follow them.
SUMMED: tuple[Literal[ReplayCount, "live_cost_usd"], ...] = (*REPLAY_COUNTS, "live_cost_usd")
COUNTS: tuple[Literal[ReplayCount, ToolCount], ...] = (*REPLAY_COUNTS, *TOOL_COUNTS)

# The report's types are generated from its schema (`report/model.py`); these names are what the
# rest of the package imports.
Report = model.Report
Test = model.Test
# A test row as a runner builds it, before `build_report` redacts and validates it into a Test.
Row = dict[str, Any]
_Rows = TypeVar("_Rows", Test, Row)


def replay_of(test: Test | Mapping[str, Any]) -> model.Replay | Mapping[str, Any]:
    """A test's replay facts; empty for a test that replayed nothing (the key is optional)."""
    return test.get("replay") or {}


def miss_of(test: Test | Mapping[str, Any]) -> model.ReplayMiss | Mapping[str, Any]:
    """The first miss a test's replay met; empty when it met none."""
    return replay_of(test).get("miss") or {}


def fault_words(fault: model.ReplayFaultList | Mapping[str, Any]) -> str:
    """One injected fault as the comment, the HTML page and JUnit name it: its SPEC and the request it met."""
    return f"{fault['fault']} (request {fault['call']})"


class ReportError(AttestError):
    """A report is missing, malformed, of another version, or fails validation."""


# --- validation ------------------------------------------------------------------------------------


def validate_report(report: Any, path: str | Path | None = None) -> Report:
    """Raise ReportError naming the first schema violation; return the report unchanged otherwise."""
    if not isinstance(report, dict):
        raise ReportError("not an attest report (expected a JSON object)", path)
    version = report.get("version")
    if isinstance(version, int) and not isinstance(version, bool) and version != VERSION:
        newer = "; upgrade attest-toolkit" if version > VERSION else ""
        raise ReportError(
            f"report version {version} is not the version this toolkit reads ({VERSION}){newer}", path
        )
    problem = first_error("report-v2.schema.json", report)
    if problem:
        raise ReportError(problem, path)
    return cast(Report, report)  # the schema the type is generated from has just accepted it


def load_report(path: str | Path) -> Report:
    """Read and validate a report-v2 file; any problem is one ReportError naming the file (exit 3)."""
    path = Path(path)
    text = read_text(path, ReportError, "report file")
    try:
        report = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ReportError(
            f"not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})", path
        ) from None
    return validate_report(report, path)


def contradiction(report: Report) -> str | None:
    """What in the summary its own test rows contradict, or None.

    The counts and outcomes must be the rows'; replay totals may exceed the rows' sums (calls made
    outside any test are counted in the summary only) but never fall short of them.
    """
    summary, tests = report["summary"], report["tests"]
    if summary["tests"] != len(tests):
        return f"summary.tests is {summary['tests']} but the report has {len(tests)} test rows"
    counts = outcome_counts(tests)
    for outcome, count in counts.items():
        if summary["outcomes"].get(outcome, 0) != count:
            return (
                f"summary.outcomes.{outcome} is {summary['outcomes'].get(outcome, 0)} but {count} rows say so"
            )
    replay, own = summary["replay"], _test_totals(tests)
    for key in SUMMED:
        if replay[key] < own[key] - 1e-6:
            return f"summary.replay.{key} is {replay[key]} but the test rows add up to {own[key]:g}"
    if replay["not_evaluated"] != counts["not_evaluated"]:
        return f"summary.replay.not_evaluated is {replay['not_evaluated']} but {counts['not_evaluated']} rows say so"
    return None


def dumps(report: Report) -> str:
    return json.dumps(report, indent=2, ensure_ascii=False) + "\n"


def write_report(report: Report, path: str | Path) -> Path:
    """Validate and write atomically; a report is not secret, so it is world-readable (0644)."""
    path = Path(path)
    validate_report(report, path)
    atomic_write(path, dumps(report), mode=0o644)
    return path


# --- building ------------------------------------------------------------------------------------


def run_secrets() -> Secrets:
    """Secret values a report must not carry: `.env` secrets and this process's credential variables
    (named like `*_API_KEY`, `*_TOKEN`, `*PASSWORD*`; see secret_names)."""
    extra = [v for k, v in os.environ.items() if is_secret_env_name(k) and is_env_secret(k, v)]
    return environment_secrets(extra=extra)


# A failure message is kept to this many characters in a report (the pytest helper's and the runners').
MESSAGE_CHARS = 4000


def redacted_clip(text: str, limit: int, secrets: Secrets | None = None, *, keep_end: bool = False) -> str:
    """`text` redacted, then cut to `limit` characters (its start, or its end with `keep_end`). Never
    the other way round: a credential across the cut would lose the part that lets redaction see it
    (its prefix, or the end of a `.env` value) and keep the rest."""
    text = (secrets if secrets is not None else run_secrets()).redact(text)
    if len(text) <= limit:
        return text
    return text[-limit:] if keep_end else text[:limit]


def redact_tests(
    tests: list[_Rows], secrets: Secrets | None = None, message_chars: int = MESSAGE_CHARS
) -> list[_Rows]:
    """Copies of `tests` without credentials in any string: ids (parametrize ids quote their
    arguments), paths, messages, skip reasons, fixture names, miss messages; each message then cut
    to `message_chars`."""
    secrets = secrets if secrets is not None else run_secrets()
    rows: list[_Rows] = [secrets.redact_all(t) for t in tests]
    for row in rows:
        message = row.get("message")
        if isinstance(message, str):
            row["message"] = message[:message_chars]
    return rows


def redact_report(report: Report, secrets: Secrets | None = None) -> Report:
    """`report` with every string redacted: what publishing reads, whoever wrote the file."""
    secrets = secrets if secrets is not None else run_secrets()
    return secrets.redact_all(report)


def default_environment(runner: str | None = None) -> dict[str, Any]:
    return {
        "toolkit_version": __version__,
        "commit": os.environ.get("GITHUB_SHA") or None,
        "python": platform.python_version(),
        "platform": sys.platform,
        "runner": runner,
    }


def _test_totals(tests: Iterable[Test | Row]) -> dict[str, float]:
    totals: dict[str, float] = dict.fromkeys((*REPLAY_COUNTS, *TOOL_COUNTS), 0)
    totals["live_cost_usd"] = 0.0
    for test in tests:
        replay = test.get("replay")
        if replay:
            for key in COUNTS:
                totals[key] += replay.get(key, 0)
            totals["live_cost_usd"] += replay.get("live_cost_usd", 0.0)
    return totals


def _replay_block(totals: dict[str, float], not_evaluated: int) -> dict[str, Any]:
    block: dict[str, Any] = {key: int(totals[key]) for key in REPLAY_COUNTS}
    # Sums of binary floats drift (0.1 + 0.2); costs are shown to the cent, kept to a micro-dollar.
    block["live_cost_usd"] = round(totals["live_cost_usd"], 6)
    block["not_evaluated"] = not_evaluated
    for key in TOOL_COUNTS:  # only runs with a tool channel carry them, so older reports read the same
        if totals.get(key):
            block[key] = int(totals[key])
    return block


def replay_facts(sessions: list[dict[str, Any]], fixtures: Iterable[str]) -> dict[str, Any]:
    """A test row's `replay` block from the summaries of the replay sessions it ran (the engine's
    `close` answers); the first miss is the one shown, without where the agent made the call."""
    misses = [m for s in sessions for m in s["miss_list"]]
    facts: dict[str, Any] = {
        "fixtures": sorted(set(fixtures)),
        "mode": sessions[-1]["mode"],
        "replayed": sum(s["replayed"] for s in sessions),
        "live": sum(s["live"] for s in sessions),
        "live_cost_usd": round(sum(s["live_cost_usd"] for s in sessions), 6),
        "unpriced": sum(s["unpriced"] for s in sessions),
        "unused": sum(s.get("unused", 0) for s in sessions),
        "misses": len(misses),
    }
    for key in TOOL_COUNTS:  # only a test with a tool channel (or drift) carries them
        if any(s.get(key) for s in sessions):
            facts[key] = sum(s.get(key, 0) for s in sessions)
    injected = [f for s in sessions for f in s.get("fault_list", [])]
    if injected:  # which faults the test ran with, for the comment
        facts["fault_list"] = injected
    live_calls = [c for s in sessions for c in s.get("live_list", [])]
    if live_calls:
        facts["live_calls"] = live_calls
    drifts = [d for s in sessions for d in s.get("drift_list", [])]
    if drifts:
        facts["drift_message"] = drifts[0]["message"]
        paths = [p for d in drifts for p in d.get("paths", [])]
        if paths:
            facts["drift_paths"] = list(dict.fromkeys(paths))
    if misses:
        first = misses[0]
        facts["miss"] = {key: first[key] for key in ("message", "component", "fixture", "not_evaluated")}
        if first.get("paths"):
            facts["miss"]["paths"] = first["paths"]
    return facts


def row_miss(miss: dict[str, Any], location: dict[str, Any] | None = None) -> dict[str, Any]:
    """A miss as a test row keeps it: without the runner's own `not_evaluated` flag (the row's outcome
    says it), with where the agent made the call when it is known."""
    kept = {key: value for key, value in miss.items() if key != "not_evaluated"}
    if location:
        kept["location"] = location
    return kept


def outcome_counts(tests: Iterable[Test | Row]) -> dict[str, int]:
    counts: dict[str, int] = dict.fromkeys(OUTCOMES, 0)
    for test in tests:
        counts[test["outcome"]] = counts.get(test["outcome"], 0) + 1
    return counts


def summarize(
    tests: Sequence[Test | Row],
    egress: Mapping[str, Any],
    environment: Mapping[str, Any] | None = None,
    *,
    usage: Mapping[str, Any] | None = None,
    duration: float | None = None,
) -> dict[str, Any]:
    """The summary block of a report, computed from its test rows."""
    counts = outcome_counts(tests)
    summary: dict[str, Any] = {
        "tests": len(tests),
        "outcomes": counts,
        "replay": _replay_block(_test_totals(tests), counts["not_evaluated"]),
        "usage": dict(usage) if usage else {"calls": 0, "cost_usd": 0.0},
        "egress": dict(egress),
        "environment": dict(environment) if environment else default_environment(),
    }
    if duration is not None:
        summary["duration"] = max(0.0, float(duration))
    return summary


def build_report(
    tests: list[Row],
    *,
    egress: dict[str, Any],
    environment: dict[str, Any] | None = None,
    usage: dict[str, Any] | None = None,
    duration: float | None = None,
) -> Report:
    """A schema-valid report-v2 from test rows; free-text fields are redacted on the way in."""
    rows = redact_tests(tests)
    summary = summarize(rows, egress, environment, usage=usage, duration=duration)
    recorded = fixture_facts(rows)
    if recorded:
        summary["fixtures"] = recorded
    return validate_report({"version": VERSION, "tests": rows, "summary": summary})


def fixture_facts(tests: Sequence[Test | Row], root: Path | None = None) -> dict[str, dict[str, Any]]:
    """When each fixture the tests replayed was recorded and which models answered, by its
    repository-relative path, so the policy's age rule and the comment need no fixture files (the
    publish workflow has none). A fixture that cannot be read here is left out."""
    facts: dict[str, dict[str, Any]] = {}
    missed = {p for t in tests if replay_of(t).get("misses") for p in replay_of(t)["fixtures"]}
    for path in sorted({p for t in tests for p in replay_of(t).get("fixtures") or []}):
        relative = Path(path)
        if relative.is_absolute() or ".." in relative.parts:
            continue
        try:
            doc = json.loads((root or Path.cwd()).joinpath(relative).read_text(encoding="utf-8"))
            recorded_at = (doc.get("source") or {}).get("recorded_at")
            facts[path] = {
                # only a time that reads as one: the file was not scanned, so nothing else is copied
                "recorded_at": recorded_at if age_days(recorded_at) is not None else None,
                "models": fixture_models(doc),
                # a missed fixture's recorded calls: the comment draws how far the agent got
                **({"path": recorded_path(doc)} if path in missed else {}),
            }
        except (OSError, ValueError, AttributeError, KeyError, TypeError):
            continue
    return facts


# --- merging shards ------------------------------------------------------------------------------


def merge_reports(reports: list[Report]) -> Report:
    """One report from CI shards: tests concatenated and de-duplicated by id, the last run kept.

    Totals are recomputed from the kept tests, plus what each shard counted outside any test (calls
    made before the first test, for example), so nothing a shard saw is lost. The merged run is only
    as isolated as its weakest shard.
    """
    if not reports:
        raise ReportError("nothing to merge: give at least one report")
    kept: dict[str, Test] = {}
    for report in reports:
        for test in report["tests"]:
            kept[test["id"]] = test
    tests = list(kept.values())
    summaries = [r["summary"] for r in reports]
    summary = summarize(
        tests,
        _merge_egress([s["egress"] for s in summaries]),
        _merge_environment([s["environment"] for s in summaries]),
        usage=_merge_usage([s["usage"] for s in summaries]),
        duration=max((s["duration"] for s in summaries if "duration" in s), default=None),
    )
    _add_unattributed(summary["replay"], reports)
    recorded = {path: facts for s in summaries for path, facts in (s.get("fixtures") or {}).items()}
    if recorded:
        summary["fixtures"] = dict(sorted(recorded.items()))
    return validate_report({"version": VERSION, "tests": tests, "summary": summary})


def _add_unattributed(replay: model.SummaryReplay, reports: list[Report]) -> None:
    for report in reports:
        add_unattributed(replay, report["tests"], report["summary"]["replay"])
    otlp = [
        r["summary"]["replay"]["otlp_requests"] for r in reports if "otlp_requests" in r["summary"]["replay"]
    ]
    if otlp:
        replay["otlp_requests"] = sum(otlp)


def add_unattributed(
    replay: model.SummaryReplay, tests: Sequence[Test | Row], counted: Mapping[str, Any]
) -> None:
    """Add to `replay` what a run `counted` beyond the sum of its `tests` (calls outside any test)."""
    own = _test_totals(tests)
    for key in REPLAY_COUNTS:
        replay[key] += max(0, int(counted.get(key, 0)) - int(own[key]))
    for tool_key in TOOL_COUNTS:
        extra = max(0, int(counted.get(tool_key, 0)) - int(own[tool_key]))
        if extra:
            replay[tool_key] = replay.get(tool_key, 0) + extra
    extra_cost = float(counted.get("live_cost_usd", 0.0)) - own["live_cost_usd"]
    if extra_cost > 1e-9:
        replay["live_cost_usd"] = round(replay["live_cost_usd"] + extra_cost, 6)


def _merge_egress(blocks: list[model.SummaryEgress]) -> model.SummaryEgress:
    weakest = max((b["mode"] for b in blocks), key=EGRESS_MODES.index)
    merged: model.SummaryEgress = {
        "mode": weakest,
        "isolation_verified": all(b["isolation_verified"] for b in blocks),
    }
    probes, strategies = {b.get("probe") for b in blocks}, {b.get("strategy") for b in blocks}
    if len(probes) == 1 and None not in probes:  # kept only when every shard says the same
        merged["probe"] = probes.pop()
    if len(strategies) == 1 and None not in strategies:
        merged["strategy"] = strategies.pop()
    return merged


def _merge_environment(blocks: list[model.SummaryEnvironment]) -> model.SummaryEnvironment:
    merged: model.SummaryEnvironment = {"toolkit_version": blocks[0]["toolkit_version"]}
    for key in ("commit", "python", "platform"):
        merged[key] = next((b[key] for b in blocks if b.get(key)), None)
    merged["runner"] = "merge"
    # A report that was itself merged from shards counts as that many shards.
    merged["shards"] = sum(b.get("shards") or 1 for b in blocks)
    return merged


def _merge_usage(blocks: list[model.SummaryUsage]) -> dict[str, Any]:
    # A plain dict: the cost is written last, which a TypedDict (requiring it from the start) cannot.
    merged: dict[str, Any] = {"calls": sum(b["calls"] for b in blocks)}
    tokens: tuple[Literal["input_tokens", "output_tokens"], ...] = ("input_tokens", "output_tokens")
    for key in tokens:
        if any(key in b for b in blocks):
            merged[key] = sum(b.get(key, 0) for b in blocks)
    merged["cost_usd"] = round(sum(b["cost_usd"] for b in blocks), 6)
    return merged


__all__ = [
    "EGRESS_MODES",
    "FAILED_OUTCOMES",
    "OUTCOMES",
    "ReportError",
    "build_report",
    "dumps",
    "load_report",
    "merge_reports",
    "redact_report",
    "redact_tests",
    "redacted_clip",
    "summarize",
    "validate_report",
    "write_report",
]
