"""The `attest` command line: a thin typer layer that parses arguments and calls the library.

Each command group lives in its own module exposing `register(app)`. Usage errors exit 3, not click's
default 2, so that 2 always means what SPEC.md's exit-code table says.

A command's module (and with it the library it calls) is imported only when that command runs:
`attest --version` and `attest --help` read `COMMANDS` alone, so they start in the time of typer.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Sequence
from types import ModuleType

import typer
from typer._click import Command, Context, HelpFormatter
from typer._click.utils import make_default_short_help
from typer.core import TyperGroup

from .. import __version__
from .command import command_group, run

__all__ = ["COMMANDS", "app", "command_group", "main", "run"]

# Each top-level command: its module, imported only when the command runs (a literal name each, so the
# import-graph test sees which), and its line in `attest --help` (tests/integration/test_light_start.py
# holds each line equal to the command's own first sentence).
COMMANDS: dict[str, tuple[Callable[[], ModuleType], str]] = {
    "init": (
        lambda: importlib.import_module(".init", __name__),
        "Write the fixtures directory with a bundled example fixture, a first test that replays it, "
        ".attest/policy.yml with every default, and the forge's CI files pinned to this version (GitHub's "
        "pull-request workflows, or with --forge gitlab a .gitlab-ci.yml).",
    ),
    "capture": (
        lambda: importlib.import_module(".capture", __name__),
        "Run CMD against the real providers through a recording proxy and write its fixture.",
    ),
    "replay": (
        lambda: importlib.import_module(".replay", __name__),
        "Run CMD against recorded model traffic.",
    ),
    "sandbox": (
        lambda: importlib.import_module(".sandbox", __name__),
        "Run CMD in a fresh network namespace with only loopback up, and prove no route leaves it.",
    ),
    "select": (
        lambda: importlib.import_module(".select", __name__),
        "Print the tests affected by the changes between BASE and HEAD.",
    ),
    "fixture": (
        lambda: importlib.import_module(".fixture", __name__),
        "Import vcrpy cassettes and ctxmesh runs as fixtures; show, list, verify, diff, seal and rebase "
        "fixtures; keep them in an object store pinned by digest (push, pull: their --help names the "
        "store's settings).",
    ),
    "policy": (lambda: importlib.import_module(".policy", __name__), "The policy gate."),
    "report": (
        lambda: importlib.import_module(".report", __name__),
        "Reports: PR summary, shard merge, JUnit XML, GitLab Code Quality.",
    ),
    "github": (
        lambda: importlib.import_module(".github", __name__),
        "Publish a report to GitHub: sticky PR comment, job summary, annotations, check run, outputs.",
    ),
    "ci": (
        lambda: importlib.import_module(".ci", __name__),
        "The steps of a CI job that gates a change: pull, select, run, policy, html, publish, gate, in "
        "that order.",
    ),
    "tool": (
        lambda: importlib.import_module(".tool", __name__),
        "The agent's tool servers under capture and replay.",
    ),
}


def load(name: str) -> Command:
    """The click command `name`, from its module's `register` (the module is imported here)."""
    module = COMMANDS[name][0]()
    scratch = command_group(name, "")  # the root's conventions: plain help, usage errors exit 3
    scratch.callback()(lambda: None)  # a group even when the module registers one command
    module.register(scratch)
    group = typer.main.get_command(scratch)
    assert isinstance(group, TyperGroup)
    return group.commands[name]


class LazyCommands(TyperGroup):
    """The root group: lists `COMMANDS` and loads one only when it is asked for."""

    def list_commands(self, ctx: Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: Context, cmd_name: str) -> Command | None:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            self.add_command(load(cmd_name), cmd_name)
        return self.commands.get(cmd_name)

    def format_commands(self, ctx: Context, formatter: HelpFormatter) -> None:
        limit = formatter.width - 6 - max(map(len, COMMANDS))
        rows = [(name, make_default_short_help(line, limit)) for name, (_, line) in COMMANDS.items()]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


app = command_group(
    "attest", "Capture an agent's model traffic once, replay it offline, and gate pull requests on it."
)
app.info.cls = LazyCommands


def _version(value: bool) -> None:
    if value:
        from ..pricing.table import table_date  # live calls are priced from it: its age matters

        print(f"attest-toolkit {__version__} (model prices of {table_date()})")
        raise typer.Exit(0)


@app.callback()
def root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version."
    ),
) -> None:
    """Capture an agent's model traffic once, replay it offline, and gate pull requests on it."""


def main(argv: Sequence[str] | None = None) -> None:
    sys.exit(run(app, argv))
