"""The gate's facts as any forge publishes them: the policy's verdict on a report, the step outputs a
run ends with, whether a run has anything to tell a reviewer, and the report as one HTML page.

`github/publish.py` puts them in a comment, a check run and a job summary; the HTML page step writes
the page another step uploads. Neither ever decides the gate: a failure there is a warning.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import AttestError
from ..fixtures.document import atomic_write
from ..report.build import Report, load_report
from ..report.html import render_html
from ..report.policy import Verdict, default_policy_path, evaluate, load_policy
from ..report.summary import report_summary_line
from .changes import fixture_changes
from .step import Step


def policy_verdict(report: Report, policy: Path | None) -> Verdict | None:
    """The policy's verdict when a policy is named or the default one exists; else none is shown."""
    if policy is None and default_policy_path() is None:
        return None
    return evaluate(report, load_policy(policy))


def run_outputs(report: Report, verdict: Verdict, comment_url: str = "") -> dict[str, str]:
    """What the gate tells the steps after it: the replay counts, the verdict and the summary line."""
    replay = report["summary"]["replay"]
    cost = f"{replay['live_cost_usd']:.6f}".rstrip("0").rstrip(".")
    return {
        "replayed": str(replay["replayed"]),
        "live": str(replay["live"]),
        "cost": cost,
        "misses": str(replay["misses"]),
        "verdict": verdict.verdict,
        "comment-url": comment_url,
        "summary": report_summary_line(report),
    }


def worth_telling(report: Report, verdict: Verdict, changes: list[dict[str, Any]] | None) -> bool:
    """Something a reviewer must see: a verdict other than pass, a miss, a failure, a test not
    evaluated, a live call, drift, an unused recording, or a re-recorded fixture."""
    replay = report["summary"]["replay"]
    counts = ("misses", "live", "tool_live", "drift", "unused", "not_evaluated")
    failed = any(t["outcome"] in ("failed", "error") for t in report["tests"])
    return verdict.verdict != "pass" or failed or any(replay.get(k) for k in counts) or bool(changes)


@dataclass(frozen=True)
class PageInputs:
    report: Path
    page: Path
    policy: Path | None = None
    base: str | None = None  # show what the change re-recorded since this revision
    fixtures_dir: Path = Path("tests/attest/fixtures")


def write_page(inputs: PageInputs) -> None:
    report = load_report(inputs.report)
    changes = fixture_changes(inputs.base, inputs.fixtures_dir)
    verdict = policy_verdict(report, inputs.policy)
    atomic_write(
        inputs.page,
        render_html(report, root=Path.cwd(), verdict=verdict, fixture_changes=changes),
        mode=0o644,
    )


def page_step(inputs: PageInputs, step: Step) -> int:
    """The HTML page for the upload step (output `page`); a page that cannot be written is a warning."""
    try:
        write_page(inputs)
    except AttestError as exc:
        print(f"attest: {exc}", file=sys.stderr, flush=True)
        step.warning(
            f"the HTML report could not be written (exit {exc.exit_code}); the gate's verdict is unchanged"
        )
        return 0
    step.outputs({"page": str(inputs.page)})
    return 0
