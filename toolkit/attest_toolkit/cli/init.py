"""`attest init`: scaffold a project's first replayed test, its policy and its workflows."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

DIRECTORY = typer.Argument(Path("."), help="The project to set up (default: the working directory).")


class Forge(str, Enum):
    github = "github"
    gitlab = "gitlab"


ForgeOpt = typer.Option(
    "--forge", help="github: the pull-request workflows; gitlab: .gitlab-ci.yml, the merge-request job."
)


def init(directory: Path = DIRECTORY, forge: Annotated[Forge, ForgeOpt] = Forge.github) -> None:
    """Write the fixtures directory with a bundled example fixture, a first test that replays it,
    .attest/policy.yml with every default, and the forge's CI files pinned to this version (GitHub's
    pull-request workflows, or with --forge gitlab a .gitlab-ci.yml). Files that exist are left as
    they are; running it again changes nothing."""
    from ..starter import init as scaffold
    from ..starter import report_lines

    for line in report_lines(scaffold(directory, forge.value)):
        typer.echo(line)


def register(app: typer.Typer) -> None:
    app.command("init")(init)
