"""`attest tool stdio NAME -- SERVER_CMD`: what an agent's MCP configuration runs instead of a stdio server."""

from __future__ import annotations

import typer

from ..errors import UsageError

tool_app = typer.Typer(
    name="tool", help="The agent's tool servers under capture and replay.", no_args_is_help=True
)
COMMAND = typer.Argument(
    None, metavar="-- SERVER_CMD", help="The server's command, after `--`.", show_default=False
)


@tool_app.command("stdio", context_settings={"allow_interspersed_args": False})
def stdio(
    name: str = typer.Argument(..., help="The server's name in the fixture and in miss messages."),
    command: list[str] = COMMAND,
) -> int:
    """Run a stdio MCP server, recorded under `attest capture`, answered from the fixture under replay.

    Under capture it starts SERVER_CMD and records each message; under replay it answers from the
    fixture and starts nothing; otherwise it runs SERVER_CMD unchanged. The MCP client must pass the
    ATTEST_TOOL_CAPTURE_URL / ATTEST_TOOL_REPLAY_URL variables on to it (most pass the whole
    environment when given env=os.environ).
    """
    from ..tools.stdio import run

    command = command[1:] if command and command[0] == "--" else command  # click keeps `--` in a group
    if not command:
        raise UsageError("no server command given; put it after `--`")
    return run(name, command)


def register(app: typer.Typer) -> None:
    app.add_typer(tool_app)
