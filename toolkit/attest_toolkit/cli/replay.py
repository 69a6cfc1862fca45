"""`attest replay --name N -- CMD`: run a command against the replay proxy."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import typer

from .. import engine
from ..engine.runner import print_outcome
from ..errors import UsageError
from ..fixture import fixture_path

EXIT_PASS, EXIT_COMMAND_FAILED, EXIT_DIVERGED, EXIT_COULD_NOT_RUN = 0, 1, 2, 3


def resolve_fixtures(names: list[str], paths: list[Path], fixtures_dir: Path | None) -> list[Path]:
    found = [fixture_path(n, fixtures_dir) for n in names] + list(paths)
    if not found:
        raise UsageError("name a fixture with --name (or --fixture PATH)")
    return found


def resolve_mode(mode: str | None) -> engine.Mode:
    """--mode, else ATTEST_REPLAY (as pytest and Vitest read it), else the default for CI or not."""
    from_env = os.environ.get("ATTEST_REPLAY")
    chosen = mode or from_env or engine.default_mode()
    if chosen not in engine.MODES:
        where = "--mode" if mode else "ATTEST_REPLAY"
        raise UsageError(f"{where} must be strict, auto or off, not {chosen!r}")
    return chosen  # type: ignore[return-value]


def exit_code(run: engine.ReplayRun) -> int:
    if run.returncode is None:
        return EXIT_COULD_NOT_RUN
    if run.diverged:
        return EXIT_DIVERGED
    return EXIT_COMMAND_FAILED if run.returncode != 0 else EXIT_PASS


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
NETWORK = typer.Option(
    "off",
    "--network",
    metavar="[none|guard|off]",
    help="none: run the engine and CMD in a fresh network namespace with only loopback up, verified, or exit 3; "
    "guard: the in-process egress guard for pytest (ATTEST_EGRESS=block) and no live calls; off: as it is.",
)


def inner_argv(
    command: list[str], fixtures: list[Path], mode: str, no_live: bool, match: str = "strict"
) -> list[str]:
    """This replay again, for running inside the sandbox with the network already off."""
    from ..sandbox.strategy import boot_argv  # not `python -m`: the working directory may hold a look-alike

    argv = [*boot_argv("attest_toolkit.cli"), "replay", "--mode", mode, "--network", "off"]
    argv += ["--match", match] if match != "strict" else []
    for path in fixtures:
        argv += ["--fixture", str(path)]
    return argv + (["--no-live"] if no_live else []) + ["--", *command]


def replay_isolated(
    command: list[str], fixtures: list[Path], mode: str, no_live: bool, match: str = "strict"
) -> int:
    from ..sandbox import run_isolated

    result = run_isolated(inner_argv(command, fixtures, mode, no_live, match), network="none")
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
) -> int:
    """Run CMD against recorded model traffic. Exit 0 pass, 1 the command failed, 2 replay diverged, 3 could not run."""
    fixtures, chosen = resolve_fixtures(name, fixture, fixtures_dir), resolve_mode(mode)
    if match not in engine.MATCHES:
        raise UsageError(f"--match must be strict or lenient, not {match!r}")
    if network not in ("none", "guard", "off"):
        raise UsageError(f"--network must be none, guard or off, not {network!r}")
    if not command:
        raise UsageError("no command given; put it after `--`")
    if network == "none":
        return replay_isolated(command, [p.resolve() for p in fixtures], chosen, no_live, match)
    env = dict(os.environ)
    if network == "guard":
        env["ATTEST_EGRESS"], no_live = "block", True
    run = engine.run_command(command, fixtures, chosen, no_live, env, match)
    print_outcome(run.summary, failed=run.returncode not in (0, None))
    return exit_code(run)


def register(app: typer.Typer) -> None:
    app.command("replay", context_settings={"allow_interspersed_args": False})(replay)
