"""`attest fixture import|show|verify`: bring vcrpy cassettes in, read a fixture, check fixtures."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from .. import ctxmesh, fixture_verify, importer
from .. import fixture as fx
from ..errors import AttestError
from ..fixture_view import describe
from ..progress import ProgressLine
from . import command_group

EXIT_OK, EXIT_BAD_FIXTURE = 0, 3

CASSETTES = typer.Argument(
    ...,
    help="vcrpy / pytest-recording cassettes (YAML or JSON), imported in order; or one ctxmesh fixture "
    "file or directory of its blobs.",
)
MCP_ENV = typer.Option(
    "MCP_URL", "--mcp-env", help="ctxmesh: the variable the agent reads its MCP endpoint from."
)
NAME = typer.Option(..., "--name", "-n", help="The fixture's name: <fixtures-dir>/<name>.attest.json.")
FIXTURES_DIR = typer.Option(
    None, "--fixtures-dir", help="Where fixtures live (default tests/attest/fixtures)."
)
FORCE = typer.Option(False, "--force", help="Overwrite an existing fixture.")
SHOWN = typer.Argument(..., help="A fixture name, or the path of a fixture file.")
PATHS = typer.Argument(..., help="Fixture files to check.")


def import_(
    cassettes: list[Path] = CASSETTES,
    name: str = NAME,
    fixtures_dir: Path | None = FIXTURES_DIR,
    force: bool = FORCE,
    mcp_env: str = MCP_ENV,
) -> int:
    """Import vcrpy cassettes, or a ctxmesh fixture, into one fixture (ids templated, credentials
    redacted; a ctxmesh credential refuses the import)."""
    line = ProgressLine()
    if len(cassettes) == 1 and ctxmesh.is_ctxmesh(cassettes[0]):
        path, model, tools = ctxmesh.import_ctxmesh(
            cassettes[0], name, fixtures_dir, mcp_env=mcp_env, force=force
        )
        line.finish(
            f"attest fixture import: {model} model call(s), {tools} tool message(s) from ctxmesh → {path}"
        )
        return EXIT_OK

    def progress(done: int, total: int) -> None:
        line.update(f"attest fixture import: {done}/{total} interactions")

    result = importer.import_cassettes(cassettes, name, fixtures_dir, force=force, progress=progress)
    line.finish(
        f"attest fixture import: {result.interactions} interaction(s) from {result.cassettes} cassette(s)"
        f" → {result.path}"
    )
    return EXIT_OK


def resolve(name_or_path: str, fixtures_dir: Path | None) -> Path:
    """A fixture by name (under the fixtures directory), or by path when given a file."""
    candidate = Path(name_or_path)
    if name_or_path.endswith(fx.SUFFIX) or (candidate.is_file() and fixtures_dir is None):
        return candidate
    return fx.fixture_path(name_or_path, fixtures_dir)


def show(
    name: str = SHOWN,
    fixtures_dir: Path | None = FIXTURES_DIR,
) -> int:
    """Print a readable summary of a fixture's interactions."""
    path = resolve(name, fixtures_dir)
    print(describe(fx.read_fixture(path), path))
    return EXIT_OK


def verify(paths: list[Path] = PATHS) -> int:
    """Validate, scan and check fixtures: `ok` per sound file, one error line per bad one (exit 3)."""
    failed = 0
    for path in paths:
        try:
            result = fixture_verify.verify_fixture(path)
        except AttestError as exc:
            failed += 1
            print(f"attest: {exc}", file=sys.stderr)
            continue
        print(f"ok {path} ({result.interactions} interaction(s), {result.digest[:19]}…)")
    return EXIT_BAD_FIXTURE if failed else EXIT_OK


def register(app: typer.Typer) -> None:
    fixture_app = command_group(
        "fixture", "Import vcrpy cassettes as fixtures, show a fixture, verify fixtures."
    )
    fixture_app.command("import")(import_)
    fixture_app.command("show")(show)
    fixture_app.command("verify")(verify)
    app.add_typer(fixture_app, name="fixture")
