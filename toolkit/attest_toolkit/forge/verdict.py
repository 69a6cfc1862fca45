"""The policy step and the last step: the verdict, and the exit code the whole gate ends with.

The policy decides the gate; publishing (comment, check run, HTML page) never does: the policy step
writes the verdict file (`verdict_file`), and the last step ends the gate with it and takes its
outputs from it, whatever publishing did. A run that ran no
tests still ends with a verdict: pass when the change affects none of them, not evaluated (exit 2, as
`attest policy evaluate` reports a run it cannot judge) when a fork is given no pinned fixtures.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from ..errors import AttestError
from ..report.build import load_report
from ..report.policy import load_policy
from ..report.policy_paths import DEFAULT_PATHS
from ..report.summary import render_verdict
from .gate import run_outputs
from .step import Step
from .verdict_file import GateVerdict, judge, not_judged, read_verdict, write_verdict


def policy_to_use(given: str) -> str | None:
    """The policy file the gate reads: the default path may be absent (built-in defaults, or another
    default name), a path the user names must exist."""
    if Path(given).is_file() or Path(given) != DEFAULT_PATHS[0]:
        return given
    return None


def policy_step(report: Path, policy: str, verdict_file: Path, step: Step) -> int:
    """Evaluate, print the verdict, write the verdict file the later steps read and tell them; the step
    itself passes (0): the last step ends the gate with the verdict's exit code."""
    chosen = policy_to_use(policy)
    try:
        verdict = judge(load_report(report), load_policy(chosen), str(report))
    except AttestError as exc:
        print(f"attest: {exc}", file=sys.stderr, flush=True)
        verdict = not_judged(exc, str(report))
    else:
        print(render_verdict(verdict, "text"), end="", flush=True)
    write_verdict(verdict_file, verdict)
    step.outputs({"verdict": verdict.verdict, "exit-code": str(verdict.exit_code), "policy": chosen or ""})
    return 0


@dataclass(frozen=True)
class GateInputs:
    ran: bool
    reason: str = ""  # why nothing ran, from the select step
    fixtures_available: bool = True
    summary: bool = True  # write the summary line to the run's summary page when nothing ran
    verdict: Path | None = None  # the policy step's verdict file, when the tests ran
    comment_url: str = ""  # where publishing commented, passed on as it is


@dataclass(frozen=True)
class Ending:
    verdict: str
    exit_code: int
    line: str
    outputs: dict[str, str]


def ending(inputs: GateInputs) -> Ending:
    if not inputs.ran:
        return _nothing_ran(inputs)
    found = _read(inputs.verdict)
    outputs = {**run_outputs(found, inputs.comment_url), "report": found.report}
    return Ending(found.verdict, found.exit_code, found.summary_line, outputs)


def _read(path: Path | None) -> GateVerdict:
    """The policy step's verdict; none to read is the verdict error (exit 3), and says why."""
    try:
        if path is None:
            raise AttestError("no verdict file given (--verdict): the policy step writes one")
        return read_verdict(path)
    except AttestError as exc:
        print(f"attest: {exc}", file=sys.stderr, flush=True)
        return not_judged(exc)


def _nothing_ran(inputs: GateInputs) -> Ending:
    if not inputs.fixtures_available:
        line = f"attest: not evaluated: {inputs.reason} (the object store's secrets are not given to forks)"
        verdict, code = "not_evaluated", 2
    else:
        line, verdict, code = f"attest: nothing to run: {inputs.reason}", "pass", 0
    zeros = {"replayed": "0", "live": "0", "cost": "0", "misses": "0"}
    outputs = {**zeros, "verdict": verdict, "comment-url": "", "summary": line, "report": ""}
    return Ending(verdict, code, line, outputs)


def gate_step(inputs: GateInputs, step: Step) -> int:
    """The gate's last step: its outputs, and the exit code the gate ends with."""
    end = ending(inputs)
    if not inputs.ran:
        print(end.line, flush=True)
        if inputs.summary:
            step.summary(end.line)
    step.outputs(end.outputs)
    print(f"attest: verdict {end.verdict} (exit {end.exit_code})", flush=True)
    return end.exit_code
