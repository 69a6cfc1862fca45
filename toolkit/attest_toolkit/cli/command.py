"""The project's conventions for every command: how a command group is made and how it is run (usage
errors exit 3, an `AttestError` is one line and its own exit code). The command modules and the
package's entry point share them from here.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

import typer
from typer._click.exceptions import NoArgsIsHelpError

from ..errors import AttestError


def command_group(name: str, help: str) -> typer.Typer:
    """A command or group with the project's conventions: help with no subcommand (exit 0), and plain
    help text, so `[default: ...]` stays and flags show no `<bool>` (rich markup would eat both)."""
    return typer.Typer(
        name=name,
        help=help,
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        rich_markup_mode=None,
    )


def run(command: typer.Typer, argv: Sequence[str] | None = None, prog: str = "attest") -> int:
    """Run a typer app with the project's error contract: one line on stderr, documented exit code."""
    group = typer.main.get_command(command)
    try:
        result = group.main(
            args=list(argv) if argv is not None else None, prog_name=prog, standalone_mode=False
        )
    except typer.Exit as exc:
        return exc.exit_code
    except NoArgsIsHelpError as exc:  # a group with no subcommand: its help is the answer, not an error
        print(exc.ctx.get_help())
        return 0
    except typer.TyperException as exc:  # click's exceptions, vendored by typer
        ctx = getattr(exc, "ctx", None)
        hint = f" (see `{ctx.command_path} --help`)" if ctx is not None else ""
        print(f"{prog}: {exc.format_message()}{hint}", file=sys.stderr)
        return 3 if exc.exit_code == 2 else exc.exit_code  # click's 2 is a usage error: ours is 3
    except typer.Abort:
        print(f"{prog}: aborted", file=sys.stderr)
        return 3
    except AttestError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
    return result if isinstance(result, int) else 0
