"""`attest-engine`: the engine commands the seed names.

attest-engine replay --name N -- CMD    run CMD against the replay proxy; exit 1 on a miss or a failing command
attest-engine replay --image IMAGE --name N   the same for a container image, with no route outside (exit 0/1/2/3)
attest-engine replay --serve --name N   the helpers' protocol: {"env"} out, serve until "stop", {"summary"} out
attest-engine serve                     many sessions, opened and closed by JSON lines on stdin (a test runner)
attest-engine serve --socket PATH       the same lines from the first connection to a Unix socket (Vitest's plugin)
attest-engine report -o PATH            report-v2 from another runner's test rows on stdin (the Vitest reporter)
"""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from ..errors import UsageError
from ..replay import runner
from ..replay.claimed import serve_socket
from ..replay.faults import parse_faults
from ..replay.runner import run_command, serve_control
from ..report.outcome import print_outcome
from .command import command_group, run
from .replay import (
    COMMAND,
    ENGINE,
    FAULT,
    FIXTURE,
    FIXTURES_DIR,
    IMAGE,
    MODE,
    NAME,
    NO_LIVE,
    REPORT,
    check_image_only,
    replay_image,
    resolve_fixtures,
    resolve_mode,
)

app = command_group("attest-engine", "The attest replay engine.")


@app.callback()
def root() -> None:
    """The attest replay engine."""


@app.command("replay", context_settings={"allow_interspersed_args": False})
def replay(
    command: list[str] = COMMAND,
    name: list[str] = NAME,
    fixture: list[Path] = FIXTURE,
    mode: str | None = MODE,
    no_live: bool = NO_LIVE,
    fixtures_dir: Path | None = FIXTURES_DIR,
    serve: bool = typer.Option(
        False, "--serve", help="Serve for an SDK helper instead of running a command."
    ),
    image: str | None = IMAGE,
    engine_name: str | None = ENGINE,
    report: Path | None = REPORT,
    fault: list[str] = FAULT,
) -> int:
    """Replay a fixture for a command or an image (--image), or serve it to a helper over stdin/stdout."""
    check_image_only(image, engine_name)
    if image is None and report is not None:
        raise UsageError(
            "attest-engine replay writes --report with --image only (attest replay: any command)"
        )
    parse_faults(fault)
    if image is not None and serve:
        raise UsageError("--serve serves a helper; --image runs an image: give one of them")
    fixtures = resolve_fixtures(name, fixture, fixtures_dir)
    if image is not None:
        return replay_image(
            image,
            command or [],
            fixtures,
            mode=mode,
            engine_name=engine_name,
            match="strict",
            report=report,
            faults=fault,
        )
    if serve:
        summary = runner.serve(fixtures, resolve_mode(mode), no_live)
        return 1 if summary["misses"] else 0
    result = run_command(command or [], fixtures, resolve_mode(mode), no_live, faults=fault)
    print_outcome(result.summary, failed=result.returncode not in (0, None))
    if result.returncode is None:
        return 3
    return 1 if result.diverged or result.returncode != 0 else 0


SOCKET = typer.Option(
    None,
    "--socket",
    help="Serve the first connection to this Unix socket instead of stdin (the Vitest plugin's engine).",
)


@app.command("serve")
def serve(socket: str | None = SOCKET) -> int:
    """Serve many replay sessions for a test runner: {"open": ...} and {"close": id} lines on stdin
    (or on the first connection to --socket)."""
    if socket:
        return serve_socket(socket)
    serve_control()
    return 0


REPORT_OUTPUT = typer.Option(..., "--output", "-o", help="Where to write the report-v2 JSON.")


@app.command("report")
def report(output: Path = REPORT_OUTPUT) -> int:
    """Write report-v2 from a test runner's rows on stdin: {"runner": ..., "guard": ..., "tests": [...]};
    print the lines the run ends with (the summary line last)."""
    from ..report.runner_rows import write_from_rows

    for line in write_from_rows(sys.stdin, output):
        print(line)
    return 0


def main() -> None:
    sys.exit(run(app, prog="attest-engine"))


if __name__ == "__main__":
    main()
