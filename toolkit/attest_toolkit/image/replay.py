"""`attest replay --image`: an agent's container image run against the replay engine, no route outside.

The engine runs on the host, in this process, but listens only on a socket made inside a fresh
network namespace (netns); the container joins that namespace, so the engine's loopback address
is the only thing it can reach. Both channels come from the fixture, strictly: an image replay
never goes live, whatever CI says.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..replay.runner import EXIT_COMMAND_FAILED, EXIT_DIVERGED, EXIT_PASS, ReplayRun, exit_code
from ..replay.server import Engine
from ..report.build import build_report, default_environment, replay_facts, write_report
from ..report.outcome import print_outcome
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


def run_image(target: ImageRun, fixtures: list[Path], match: str = "strict") -> ImageReplay:
    """Run the image against a strict replay session of `fixtures`; never goes live."""
    binary = target.ready()
    started = time.monotonic()
    with LoopbackNamespace() as ns:
        engine = Engine(env={})  # no provider key: nothing can be forwarded, whatever the session asks
        engine.start(sock=ns.sockets[0])
        try:
            sid, session_env = engine.open_session(list(fixtures), "strict", True, match)
            returncode = target.run(binary, ns.path, session_env)
            summary = engine.close_session(sid)
        finally:
            engine.stop()
        egress = namespace_egress(ns)
    return ImageReplay(ReplayRun(returncode, summary), egress, time.monotonic() - started)


def _shown(path: Path) -> str:
    """A fixture's path as a report names it: relative to the working directory when inside it."""
    try:
        return path.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return path.as_posix()


def report_row(target: ImageRun, fixtures: list[Path], result: ImageReplay, code: int) -> dict[str, Any]:
    """The run as report-v2's one test row: passed, or failed with the first miss (or the exit code)."""
    facts = replay_facts([result.run.summary], (_shown(p) for p in fixtures))
    if "miss" in facts:
        facts["miss"].pop("not_evaluated", None)
    message = None
    if code == EXIT_DIVERGED:
        message = facts["miss"]["message"]
    elif code == EXIT_COMMAND_FAILED:
        message = f"the agent's container exited {result.run.returncode}"
    return {
        "id": f"image:{target.image}",
        "file": _shown(fixtures[0]),
        "line": None,
        "outcome": "passed" if code == EXIT_PASS else "failed",
        "duration": round(result.duration, 3),
        "message": message,
        "replay": facts,
    }


def replay_image(
    target: ImageRun, fixtures: list[Path], match: str = "strict", report: Path | None = None
) -> int:
    """Replay the image, print the misses and the summary line, write the report; the exit code."""
    result = run_image(target, fixtures, match)
    print_outcome(result.run.summary)
    verified = "verified" if result.egress["isolation_verified"] else "NOT verified"
    print(
        f"attest replay: image {target.image}, network none (its own namespace), isolation {verified}",
        file=sys.stderr,
    )
    code = exit_code(result.run)
    if report is not None:
        row = report_row(target, fixtures, result, code)
        built = build_report(
            [row],
            egress=result.egress,
            environment=default_environment("image"),
            duration=result.duration,
        )
        write_report(built, report)
    return code
