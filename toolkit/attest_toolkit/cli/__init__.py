"""The `attest` command line: a thin typer layer that parses arguments and calls the library.

Each command group lives in its own module exposing `register(app)`. Usage errors exit 3, not click's
default 2, so that 2 always means what SPEC.md's exit-code table says.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

import typer

from .. import __version__
from .command import command_group, run

__all__ = ["app", "command_group", "main", "run"]


app = command_group(
    "attest", "Capture an agent's model traffic once, replay it offline, and gate pull requests on it."
)


def _version(value: bool) -> None:
    if value:
        from ..replay.pricing import table_date  # live calls are priced from it: its age matters

        print(f"attest-toolkit {__version__} (model prices of {table_date()})")
        raise typer.Exit(0)


@app.callback()
def root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version."
    ),
) -> None:
    """Capture an agent's model traffic once, replay it offline, and gate pull requests on it."""


def _register_all() -> None:
    from . import capture, ci, fixture, github, init, policy, replay, report, sandbox, select, tool

    for module in (init, capture, replay, fixture, sandbox, select, policy, report, github, ci, tool):
        module.register(app)


def main(argv: Sequence[str] | None = None) -> None:
    _register_all()
    sys.exit(run(app, argv))
