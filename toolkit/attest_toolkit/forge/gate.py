"""The gate's facts as any forge publishes them: the policy's verdict on a report (outside the gate, where
no verdict file was written), the step outputs a run ends with, whether a run has anything to tell a
reviewer, and the report as one HTML page.

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
from ..report.policy import load_policy
from ..report.policy_paths import default_policy_path
from .changes import fixture_changes
from .step import Step
from .verdict_file import GateVerdict, judge, read_verdict


def policy_verdict(report: Report, policy: Path | None) -> GateVerdict | None:
    """The policy's verdict when a policy is named or the default one exists; else none is shown."""
    if policy is None and default_policy_path() is None:
        return None
    return judge(report, load_policy(policy))


def run_outputs(verdict: GateVerdict, comment_url: str = "") -> dict[str, str]:
    """What the gate tells the steps after it: the replay counts, the verdict, where publishing
    commented and the summary line."""
    outputs = verdict.outputs()
    summary = outputs.pop("summary")
    return {**outputs, "comment-url": comment_url, "summary": summary}


def worth_telling(report: Report, verdict: GateVerdict, changes: list[dict[str, Any]] | None) -> bool:
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
    verdict: Path | None = None  # the policy step's verdict file, shown as it is: nothing is judged again
    judge: bool = True  # without a verdict file, judge the report by the policy (`attest report html`)


def _page_verdict(inputs: PageInputs, report: Report) -> GateVerdict | None:
    if inputs.verdict is not None:
        return read_verdict(inputs.verdict).judged()
    return policy_verdict(report, inputs.policy) if inputs.judge else None


def write_page(inputs: PageInputs) -> None:
    report = load_report(inputs.report)
    changes = fixture_changes(inputs.base, inputs.fixtures_dir)
    verdict = _page_verdict(inputs, report)
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
