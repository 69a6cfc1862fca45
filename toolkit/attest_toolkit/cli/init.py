"""`attest init`: scaffold a project's first replayed test, its policy and its workflows."""

from __future__ import annotations

from pathlib import Path

import typer

DIRECTORY = typer.Argument(Path("."), help="The project to set up (default: the working directory).")


def init(directory: Path = DIRECTORY) -> None:
    """Write the fixtures directory with a bundled example fixture, a first test that replays it,
    .attest/policy.yml with every default, and the pull-request workflows pinned to this version.
    Files that exist are left as they are; running it again changes nothing."""
    from ..starter import init as scaffold
    from ..starter import report_lines

    for line in report_lines(scaffold(directory)):
        typer.echo(line)


def register(app: typer.Typer) -> None:
    app.command("init")(init)
