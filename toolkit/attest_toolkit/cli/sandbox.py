"""`attest sandbox`: run a command with the network off (or under the egress guard)."""

from __future__ import annotations

from enum import Enum
from pathlib import Path

import typer

from ..sandbox import run_isolated, write_egress


class Network(str, Enum):
    none = "none"
    guard = "guard"


COMMAND = typer.Argument(..., metavar="-- CMD ...", help="The command to run, after `--`.")
NETWORK = typer.Option(
    Network.none,
    "--network",
    help="none: a fresh network namespace with only loopback up, verified, or exit 3. "
    "guard: no namespace; the in-process egress guard (ATTEST_EGRESS=block), reported unverified.",
)
REPORT_EGRESS = typer.Option(
    None, "--report-egress", help="Write the egress record (report-v2 summary.egress) here as JSON."
)


def sandbox(
    command: list[str] = COMMAND, network: Network = NETWORK, report_egress: Path | None = REPORT_EGRESS
) -> int:
    """Run CMD in a fresh network namespace with only loopback up, and prove no route leaves it.

    Tries, in order: already isolated, root `unshare --net`, `sudo -n unshare --net` (dropping back to
    you), an unprivileged user namespace. CMD's exit code is passed through; 3 if it could not run.
    """
    result = run_isolated(list(command), network=network.value)
    if report_egress is not None:
        write_egress(report_egress, result.egress)
    return result.returncode


def register(app: typer.Typer) -> None:
    app.command("sandbox", context_settings={"allow_interspersed_args": False})(sandbox)
