"""`attest replay --name N -- CMD`: run a command against the replay proxy."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from .. import engine
from ..errors import UsageError
from ..fixture import fixture_path

EXIT_PASS, EXIT_COMMAND_FAILED, EXIT_DIVERGED, EXIT_COULD_NOT_RUN = 0, 1, 2, 3


def resolve_fixtures(names: list[str], paths: list[Path], fixtures_dir: Path | None) -> list[Path]:
    found = [fixture_path(n, fixtures_dir) for n in names] + list(paths)
    if not found:
        raise UsageError("name a fixture with --name (or --fixture PATH)")
    return found


def resolve_mode(mode: str | None) -> engine.Mode:
    chosen = mode or engine.default_mode()
    if chosen not in engine.MODES:
        raise UsageError(f"--mode must be strict, auto or off, not {chosen!r}")
    return chosen  # type: ignore[return-value]


def exit_code(run: engine.ReplayRun) -> int:
    if run.returncode is None:
        return EXIT_COULD_NOT_RUN
    if run.diverged:
        return EXIT_DIVERGED
    return EXIT_COMMAND_FAILED if run.returncode != 0 else EXIT_PASS


NAME = typer.Option(
    [], "--name", "-n", help="Fixture name: tests/attest/fixtures/<name>.attest.json. Repeatable."
)
FIXTURE = typer.Option([], "--fixture", help="A fixture file by path. Repeatable.")
MODE = typer.Option(
    None, "--mode", help="strict, auto or off (default: strict when CI is set, auto otherwise)."
)
NO_LIVE = typer.Option(False, "--no-live", help="Never forward a miss to a provider, whatever keys are set.")
FIXTURES_DIR = typer.Option(
    None, "--fixtures-dir", help="Where fixtures live (default tests/attest/fixtures)."
)
COMMAND = typer.Argument(None, help="The command to run, after `--`.", show_default=False)


def replay(
    command: list[str] = COMMAND,
    name: list[str] = NAME,
    fixture: list[Path] = FIXTURE,
    mode: str | None = MODE,
    no_live: bool = NO_LIVE,
    fixtures_dir: Path | None = FIXTURES_DIR,
) -> int:
    """Run CMD against recorded model traffic. Exit 0 pass, 1 the command failed, 2 replay diverged, 3 could not run."""
    run = engine.run_command(
        command or [], resolve_fixtures(name, fixture, fixtures_dir), resolve_mode(mode), no_live
    )
    engine.runner.report_misses(run.summary)
    print(engine.line_of(run.summary))
    sys.stdout.flush()
    return exit_code(run)


def register(app: typer.Typer) -> None:
    app.command("replay", context_settings={"allow_interspersed_args": False})(replay)
