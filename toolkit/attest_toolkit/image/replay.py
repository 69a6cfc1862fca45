"""`attest replay --image`: an agent's container image run against the replay engine, no route outside.

The engine runs on the host, in this process, but listens only on a socket made inside a fresh
network namespace (netns); the container joins that namespace, so the engine's loopback address
is the only thing it can reach. Both channels come from the fixture, strictly: an image replay
never goes live, whatever CI says.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..replay.modes import Mode
from ..replay.runner import EXIT_PASS, ReplayRun, exit_code
from ..replay.server import Engine
from ..report.outcome import print_outcome
from ..report.replay_run import run_row, write_run_report
from ..sandbox.egress import Egress, egress_record
from .container import ImageRun
from .netns import LoopbackNamespace

STRATEGY = "container"


@dataclass(frozen=True)
class ImageReplay:
    """The run's exit code and summary (as for a command), and the namespace's egress record."""

    run: ReplayRun
    egress: Egress
    duration: float


def namespace_egress(ns: LoopbackNamespace) -> Egress:
    """`mode: none`, verified by the probe the holder ran in the namespace the container joins."""
    probe = ns.probe
    described = (
        f"{probe['describe']}; the container joins this namespace with the capabilities to leave it dropped"
    )
    return egress_record("none", bool(probe["isolated"]), described, STRATEGY)


def run_image(
    target: ImageRun, fixtures: list[Path], match: str = "strict", faults: Sequence[str] = ()
) -> ImageReplay:
    """Run the image against a strict replay session of `fixtures` whose model requests meet
    `faults`; never goes live."""
    binary = target.ready()
    started = time.monotonic()
    with LoopbackNamespace() as ns:
        engine = Engine(env={})  # no provider key: nothing can be forwarded, whatever the session asks
        engine.start(sock=ns.sockets[0])
        try:
            sid, session_env = engine.open_session(list(fixtures), Mode.STRICT, True, match, (), faults)
            returncode = target.run(binary, ns.path, session_env)
            summary = engine.close_session(sid)
        finally:
            engine.stop()
        egress = namespace_egress(ns)
    return ImageReplay(ReplayRun(returncode, summary), egress, time.monotonic() - started)


def report_row(target: ImageRun, fixtures: list[Path], result: ImageReplay, code: int) -> dict[str, Any]:
    """The run as report-v2's one test row: passed, or failed with the first miss (or the exit code)."""
    failed = f"the agent's container exited {result.run.returncode}" if code != EXIT_PASS else None
    return run_row(f"image:{target.image}", fixtures, result.run.summary, failed, result.duration)


def replay_image(
    target: ImageRun,
    fixtures: list[Path],
    match: str = "strict",
    report: Path | None = None,
    faults: Sequence[str] = (),
) -> int:
    """Replay the image, print the misses and the summary line, write the report; the exit code."""
    result = run_image(target, fixtures, match, faults)
    print_outcome(result.run.summary)
    verified = "verified" if result.egress["isolation_verified"] else "NOT verified"
    print(
        f"attest replay: image {target.image}, network none (its own namespace), isolation {verified}",
        file=sys.stderr,
    )
    code = exit_code(result.run)
    if report is not None:
        row = report_row(target, fixtures, result, code)
        write_run_report(row, dict(result.egress), "image", result.duration, report)
    return code
