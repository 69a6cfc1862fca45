"""The verdict file: the policy's verdict on one run, worked out once and read by every step after it.

`attest ci policy` writes it (`schemas/verdict.schema.json`); the HTML page, publishing and the gate's
last step read it instead of judging the report again, so the gate's outputs never depend on
publishing, and a forge other than GitHub reads the same file. `judge` is the one place the policy is
evaluated: the policy step calls it, and so does the one path that must judge again, a fork's report
published with the base repository's policy (`attest github publish --from-artifact`), which writes
the same file.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ..errors import AttestError, UsageError, read_text
from ..fixtures.document import atomic_write
from ..fixtures.validation import first_error
from ..report.build import Report
from ..report.policy import Policy, evaluate
from ..report.summary import report_summary_line

VERSION = 1
SCHEMA = "verdict.schema.json"
FILE_NAME = "attest-verdict.json"
ERROR = "error"  # the verdict of a run the policy could not be evaluated on (a bad report or policy)
# What the step outputs carry for a run whose report could not be read.
NO_COUNTS = {"replayed": "", "live": "", "cost": "", "misses": ""}


def default_path(env: Mapping[str, str]) -> Path:
    """Where the steps of one job find the file: the runner's temporary directory, which no checkout
    holds, else the working directory."""
    return Path(env.get("RUNNER_TEMP") or ".") / FILE_NAME


@dataclass(frozen=True)
class Counts:
    """The run's replay counts, as the gate's outputs give them."""

    replayed: int
    live: int
    cost_usd: float
    misses: int

    @classmethod
    def of(cls, report: Report) -> Counts:
        replay = report["summary"]["replay"]
        return cls(replay["replayed"], replay["live"], replay["live_cost_usd"], replay["misses"])

    def outputs(self) -> dict[str, str]:
        cost = f"{self.cost_usd:.6f}".rstrip("0").rstrip(".")
        return {
            "replayed": str(self.replayed),
            "live": str(self.live),
            "cost": cost,
            "misses": str(self.misses),
        }


@dataclass(frozen=True)
class GateVerdict:
    """One run's verdict as the file holds it. `policy` is the policy's source, as a policy Verdict
    names it, so the summary and the HTML page show either alike (`to_dict`)."""

    verdict: str
    exit_code: int
    policy: str
    rules: tuple[dict[str, Any], ...] = ()
    counts: Counts | None = None
    summary_line: str = ""
    report: str = ""
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The verdict as the summary and `attest policy evaluate --json` show it."""
        return {
            "verdict": self.verdict,
            "exit_code": self.exit_code,
            "policy": self.policy,
            "rules": list(self.rules),
        }

    def judged(self) -> GateVerdict:
        """This verdict, or the error that kept the policy step from reaching one: what is published
        must have a verdict to show."""
        if self.verdict == ERROR:
            raise _NotJudged(self.error or "the policy step could not evaluate the policy", self.exit_code)
        return self

    def outputs(self) -> dict[str, str]:
        """The counts, the verdict and the summary line, as step outputs carry them."""
        counts = self.counts.outputs() if self.counts else NO_COUNTS
        return {**counts, "verdict": self.verdict, "summary": self.summary_line}

    def to_json(self) -> dict[str, Any]:
        counts = self.counts
        return {
            "version": VERSION,
            "verdict": self.verdict,
            "exit_code": self.exit_code,
            "error": self.error,
            "policy_source": self.policy,
            "report": self.report,
            "rules": list(self.rules),
            "counts": None if counts is None else asdict(counts),
            "summary_line": self.summary_line,
        }

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> GateVerdict:
        counts = doc["counts"]
        return cls(
            verdict=doc["verdict"],
            exit_code=doc["exit_code"],
            policy=doc["policy_source"],
            rules=tuple(doc["rules"]),
            counts=None if counts is None else Counts(**counts),
            summary_line=doc["summary_line"],
            report=doc.get("report") or "",
            error=doc.get("error"),
        )


class _NotJudged(AttestError):
    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def judge(report: Report, policy: Policy, report_path: str = "") -> GateVerdict:
    """The policy's verdict on `report`, with the counts and the summary line the gate ends with."""
    verdict = evaluate(report, policy)
    return GateVerdict(
        verdict=verdict.verdict,
        exit_code=verdict.exit_code,
        policy=verdict.policy,
        rules=tuple(r.to_dict() for r in verdict.rules),
        counts=Counts.of(report),
        summary_line=report_summary_line(report),
        report=report_path,
    )


def not_judged(exc: AttestError, report_path: str = "") -> GateVerdict:
    """The verdict of a run whose report or policy could not be read."""
    return GateVerdict(ERROR, exc.exit_code, "", report=report_path, error=str(exc))


def write_verdict(path: Path, verdict: GateVerdict) -> None:
    atomic_write(path, json.dumps(verdict.to_json(), indent=2, ensure_ascii=False) + "\n", mode=0o644)


def read_verdict(path: Path) -> GateVerdict:
    """The file as the policy step wrote it; a missing or malformed one is a usage error naming it."""
    missing = "no verdict file (the policy step, `attest ci policy`, writes it)"
    text = read_text(path, UsageError, "verdict file", missing)
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"malformed verdict JSON: {exc.msg} at line {exc.lineno}", path) from None
    problem = first_error(SCHEMA, doc)
    if problem:
        raise UsageError(f"malformed verdict file: {problem}", path)
    return GateVerdict.from_json(doc)
