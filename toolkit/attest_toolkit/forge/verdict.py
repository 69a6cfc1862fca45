"""The policy step and the last step: the verdict, and the exit code the whole gate ends with.

The policy decides the gate; publishing (comment, check run, HTML page) never does. A run that ran no
tests still ends with a verdict: pass when the change affects none of them, not evaluated (exit 2, as
`attest policy evaluate` reports a run it cannot judge) when a fork is given no pinned fixtures.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from ..errors import AttestError
from ..report.build import load_report
from ..report.policy import DEFAULT_PATHS, evaluate, load_policy
from ..report.summary import render_verdict
from .step import Step

ERROR = "error"  # the verdict of a run the policy could not be evaluated on (a bad report or policy)


def policy_to_use(given: str) -> str | None:
    """The policy file the gate reads: the default path may be absent (built-in defaults, or another
    default name), a path the user names must exist."""
    if Path(given).is_file() or Path(given) != DEFAULT_PATHS[0]:
        return given
    return None


def policy_step(report: Path, policy: str, step: Step) -> int:
    """Evaluate, print the verdict and tell the later steps; the step itself passes (0): the last step
    ends the gate with the verdict's exit code."""
    chosen = policy_to_use(policy)
    try:
        verdict = evaluate(load_report(report), load_policy(chosen))
    except AttestError as exc:
        print(f"attest: {exc}", file=sys.stderr, flush=True)
        name, code = ERROR, exc.exit_code
    else:
        print(render_verdict(verdict, "text"), end="", flush=True)
        name, code = verdict.verdict, verdict.exit_code
    step.outputs({"verdict": name, "exit-code": str(code), "policy": chosen or ""})
    return 0


@dataclass(frozen=True)
class GateInputs:
    ran: bool
    reason: str = ""  # why nothing ran, from the select step
    fixtures_available: bool = True
    summary: bool = True  # write the summary line to the run's summary page when nothing ran
    verdict: str = ""  # the policy step's, when the tests ran
    exit_code: str = ""
    report: str = ""
    # what the publish step counted and where it commented
    replayed: str = ""
    live: str = ""
    cost: str = ""
    misses: str = ""
    comment_url: str = ""
    line: str = ""


@dataclass(frozen=True)
class Ending:
    verdict: str
    exit_code: int
    line: str
    outputs: dict[str, str]


def ending(inputs: GateInputs) -> Ending:
    if not inputs.ran:
        return _nothing_ran(inputs)
    code = int(inputs.exit_code) if inputs.exit_code.isdigit() else 3
    verdict = inputs.verdict or ERROR
    counts = {"replayed": inputs.replayed, "live": inputs.live, "cost": inputs.cost, "misses": inputs.misses}
    return Ending(
        verdict, code, inputs.line, _outputs(counts, verdict, inputs.comment_url, inputs.line, inputs.report)
    )


def _nothing_ran(inputs: GateInputs) -> Ending:
    if not inputs.fixtures_available:
        line = f"attest: not evaluated: {inputs.reason} (the object store's secrets are not given to forks)"
        verdict, code = "not_evaluated", 2
    else:
        line, verdict, code = f"attest: nothing to run: {inputs.reason}", "pass", 0
    zeros = {"replayed": "0", "live": "0", "cost": "0", "misses": "0"}
    return Ending(verdict, code, line, _outputs(zeros, verdict, "", line, ""))


def _outputs(
    counts: dict[str, str], verdict: str, comment_url: str, line: str, report: str
) -> dict[str, str]:
    return {**counts, "verdict": verdict, "comment-url": comment_url, "summary": line, "report": report}


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
