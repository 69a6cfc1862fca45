"""`attest replay --name N -- CMD`: run a command against the replay proxy."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import typer

from ..errors import UsageError
from ..replay.faults import parse_faults
from ..replay.modes import MATCHES, Match, spelled
from ..replay.repeat import divergence
from ..replay.runner import (
    EXIT_DIVERGED,
    ReplayRun,
    exit_code,
    resolve_fixtures,
    resolve_mode,
    run_command,
)
from ..report.outcome import print_outcome

NAME = typer.Option(
    [],
    "--name",
    "-n",
    metavar="NAME",
    help="Fixture name: tests/attest/fixtures/<name>.attest.json. Repeatable.",
)
FIXTURE = typer.Option([], "--fixture", metavar="PATH", help="A fixture file by path. Repeatable.")
MODE = typer.Option(
    None,
    "--mode",
    metavar="[strict|auto|off]",
    help="What a request with no recording gets (default: ATTEST_REPLAY, else strict when CI is set, auto otherwise).",
)
NO_LIVE = typer.Option(False, "--no-live", help="Never forward a miss to a provider, whatever keys are set.")
FIXTURES_DIR = typer.Option(
    None, "--fixtures-dir", help="Where fixtures live (default tests/attest/fixtures)."
)
MATCH = typer.Option(
    "strict",
    "--match",
    metavar="[strict|lenient]",
    help="strict: requests match recordings by content; lenient (ctxmesh's semantics): model calls are "
    "served by position and a changed request is served and reported as drift. Tool calls and more "
    "calls than recorded miss either way.",
)
COMMAND = typer.Argument(None, metavar="-- CMD", help="The command to run, after `--`.", show_default=False)
REPEAT = typer.Option(
    1,
    "--repeat",
    min=1,
    metavar="N",
    help="Replay the command N times, each against a fresh session, and exit 2 when the runs sent different "
    "sequences of requests (a flaky agent), naming the first call that differs.",
)
NETWORK = typer.Option(
    "off",
    "--network",
    metavar="[none|guard|off]",
    help="none: run the engine and CMD in a fresh network namespace with only loopback up, verified, or exit 3; "
    "guard: the in-process egress guard for pytest (ATTEST_EGRESS=block) and no live calls; off: as it is.",
)


IMAGE = typer.Option(
    None,
    "--image",
    metavar="IMAGE",
    help="Run this container image (its entrypoint and command unchanged; ARGS after `--` replace the "
    "command) with no route outside: strict, both channels from the fixture.",
)
ENGINE = typer.Option(None, "--engine", metavar="[podman|docker]", help="With --image: the container engine.")
REPORT = typer.Option(
    None, "--report", metavar="FILE", help="Write report-v2 for the run (the command's or the image's)."
)
FAULT = typer.Option(
    [],
    "--fault",
    metavar="SPEC",
    help="Inject a fault into the replayed model requests: [call=N:|every:]KIND[,PARAM=VALUE], KIND one of "
    "status=CODE (429, 500, 502, 503, 504, 529; retry-after=SECONDS), timeout, disconnect, cut=K, latency=MS, "
    "pace=MS. Repeatable. A fault is not a miss: the run passes when the agent recovers.",
)


def replay_image(
    image: str,
    command: list[str],
    fixtures: list[Path],
    *,
    mode: str | None,
    engine_name: str | None,
    match: str,
    report: Path | None,
    faults: list[str],
) -> int:
    """`--image`: refused with a live mode (as ctxmesh refuses --provider real with --replay)."""
    from ..image.container import ImageRun
    from ..image.replay import replay_image as run

    if mode not in (None, "strict"):
        raise UsageError(
            f"--image replays strictly (both channels from the fixture): --mode {mode} is refused"
        )
    return run(ImageRun(image, command, engine_name or "podman"), fixtures, match, report, faults)


def check_image_only(image: str | None, engine_name: str | None) -> None:
    if image is None and engine_name:
        raise UsageError("--engine goes with --image")


def inner_argv(
    command: list[str],
    fixtures: list[Path],
    mode: str,
    no_live: bool,
    match: str = "strict",
    repeat: int = 1,
    faults: list[str] | None = None,
    report: Path | None = None,
) -> list[str]:
    """This replay again, for running inside the sandbox with the network already off."""
    from ..sandbox.strategy import boot_argv  # not `python -m`: the working directory may hold a look-alike

    argv = [*boot_argv("attest_toolkit.cli"), "replay", "--mode", mode, "--network", "off"]
    argv += ["--match", match] if match != "strict" else []
    argv += ["--repeat", str(repeat)] if repeat > 1 else []
    argv += [arg for spec in faults or [] for arg in ("--fault", spec)]
    argv += ["--report", str(report.resolve())] if report is not None else []
    for path in fixtures:
        argv += ["--fixture", str(path)]
    return argv + (["--no-live"] if no_live else []) + ["--", *command]


def replay_isolated(
    command: list[str],
    fixtures: list[Path],
    mode: str,
    no_live: bool,
    match: str = "strict",
    repeat: int = 1,
    faults: list[str] | None = None,
    report: Path | None = None,
) -> int:
    from ..sandbox import run_isolated

    argv = inner_argv(command, fixtures, mode, no_live, match, repeat, faults, report)
    result = run_isolated(argv, network="none")
    egress = result.egress
    verified = "verified" if egress["isolation_verified"] else "NOT verified"
    print(f"attest replay: network none ({egress.get('strategy')}), isolation {verified}", file=sys.stderr)
    return result.returncode


def replay(
    command: list[str] = COMMAND,
    name: list[str] = NAME,
    fixture: list[Path] = FIXTURE,
    mode: str | None = MODE,
    no_live: bool = NO_LIVE,
    fixtures_dir: Path | None = FIXTURES_DIR,
    network: str = NETWORK,
    match: str = MATCH,
    repeat: int = REPEAT,
    image: str | None = IMAGE,
    engine_name: str | None = ENGINE,
    report: Path | None = REPORT,
    fault: list[str] = FAULT,
) -> int:
    """Run CMD against recorded model traffic. Exit 0 pass, 1 the command failed, 2 replay diverged, 3 could not run.

    With --image IMAGE, run the image instead, in a network namespace that holds only the replay
    engine (exit 1 then means the agent's container failed)."""
    check_image_only(image, engine_name)
    parse_faults(fault)  # a bad SPEC is one line before anything starts
    fixtures = resolve_fixtures(name, fixture, fixtures_dir)
    if match not in MATCHES:
        raise UsageError(f"--match must be {spelled(Match)}, not {match!r}")
    if network not in ("none", "guard", "off"):
        raise UsageError(f"--network must be none, guard or off, not {network!r}")
    if image is not None:
        if network == "guard":
            raise UsageError("--image always runs with the network off: --network guard does not apply")
        return replay_image(
            image,
            command or [],
            fixtures,
            mode=mode,
            engine_name=engine_name,
            match=match,
            report=report,
            faults=fault,
        )
    chosen = resolve_mode(mode)
    if not command:
        raise UsageError("no command given; put it after `--`")
    if network == "none":
        resolved = [p.resolve() for p in fixtures]
        return replay_isolated(command, resolved, chosen, no_live, match, repeat, fault, report)
    env = dict(os.environ)
    if network == "guard":
        env["ATTEST_EGRESS"], no_live = "block", True
    runs = []
    for _ in range(repeat):
        started = time.monotonic()
        runs.append(run_command(command, fixtures, chosen, no_live, env, match, fault))
        print_outcome(runs[-1].summary, failed=runs[-1].returncode not in (0, None))
        if report is not None:
            write_command_report(command, fixtures, runs[-1], time.monotonic() - started, network, report)
    code = max(exit_code(run) for run in runs)
    if repeat == 1:
        return code
    flaky = divergence([run.summary.get("keys", []) for run in runs])
    if flaky is None:
        print(f"attest replay: repeated {repeat} times: the same requests in every run")
        return code
    print(f"attest replay: flaky: {flaky}", file=sys.stderr)
    return max(code, EXIT_DIVERGED)


def write_command_report(
    command: list[str], fixtures: list[Path], run: ReplayRun, duration: float, network: str, path: Path
) -> None:
    """`--report` for a command: the run as report-v2's one test row (a repeated run's last)."""
    from ..report.replay_run import run_row, write_run_report
    from ..report.runner_rows import egress_facts

    failed = None if run.returncode == 0 else f"the command exited {run.returncode}"
    row = run_row(f"command:{' '.join(command)}", fixtures, run.summary, failed, duration)
    write_run_report(row, egress_facts(network == "guard"), "command", duration, path)


def register(app: typer.Typer) -> None:
    app.command("replay", context_settings={"allow_interspersed_args": False})(replay)
