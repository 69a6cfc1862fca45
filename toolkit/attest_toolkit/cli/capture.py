"""`attest capture --name N -- CMD` and `attest capture --refresh N`: record a real run once, safely."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import typer

from ..capture import spend
from ..capture.refresh import check_overwrite, confirm_refresh, plan_refresh
from ..capture.refresh import refresh as run_refresh
from ..capture.run import capture as run_capture
from ..errors import UsageError
from ..fixtures import document as fx

NAME = typer.Option(
    None, "--name", "-n", help="Fixture name: writes tests/attest/fixtures/<name>.attest.json."
)
REFRESH = typer.Option(
    None,
    "--refresh",
    metavar="NAME",
    help="Re-run the command recorded in fixture NAME, with its recorded flags.",
)
ONLY_MISSES = typer.Option(
    False,
    "--only-misses",
    help="With --refresh: replay the calls the fixture still matches, go live only for the misses, and "
    "keep every unchanged interaction byte for byte; recordings the run did not use are dropped. "
    "Prints what the live calls cost.",
)
YES = typer.Option(
    False, "--yes", "-y", help="With --refresh: re-run without asking (required without a terminal)."
)
EXPECT_FAIL = typer.Option(
    False, "--expect-fail", help="Record a run that must fail: CMD has to exit non-zero."
)
FIXTURES_DIR = typer.Option(
    None, "--fixtures-dir", help="Where fixtures live (default tests/attest/fixtures)."
)
TOOL = typer.Option(
    [],
    "--tool",
    metavar="VAR[=URL]",
    help="A tool server the agent reads from VAR (e.g. WEATHER_MCP_URL): recorded through the proxy. "
    "URL is the real server, default VAR's value. Repeatable.",
)
MAX_COST = typer.Option(
    None,
    "--max-cost-usd",
    metavar="USD",
    help="A spend ceiling: with --refresh, refuse to start when the fixture's recorded usage, priced from "
    "the built-in table, is over it (or cannot be priced); in any capture, let no call go live once the "
    "calls out may have reached it, each counted at the most it can cost (its request and output cap "
    "priced) until its answer prices it (a call that cannot be priced stops it too), print what the live "
    "calls cost, and write nothing (exit 1).",
)
IMAGE = typer.Option(
    None,
    "--image",
    metavar="IMAGE",
    help="Record this container image's run instead of a command (ARGS after `--` replace its command); "
    "only the recorder reaches the network, and your keys never enter the container.",
)
FORCE = typer.Option(
    False, "--force", help="Replace fixture NAME even if it was recorded from another command (or by a test)."
)
COMMAND = typer.Argument(None, metavar="-- CMD", help="The command to run, after `--`.", show_default=False)


def check_usage(
    command: list[str],
    name: str | None,
    refresh: str | None,
    yes: bool,
    expect_fail: bool,
    tools: list[str] | None = None,
    only_misses: bool = False,
) -> None:
    if bool(name) == bool(refresh):
        raise UsageError("give either --name N -- CMD (a new capture) or --refresh N (re-run a recorded one)")
    if refresh and command:
        raise UsageError("--refresh re-runs the command recorded in the fixture; give no command")
    if refresh and tools:
        raise UsageError("--refresh uses the tool servers recorded in the fixture; drop --tool")
    if refresh and expect_fail:
        raise UsageError("--refresh uses the flags recorded in the fixture; drop --expect-fail")
    if name and yes:
        raise UsageError("--yes only applies to --refresh")
    if name and only_misses:
        raise UsageError("--only-misses only applies to --refresh")


def capture(
    command: list[str] = COMMAND,
    name: str | None = NAME,
    refresh: str | None = REFRESH,
    only_misses: bool = ONLY_MISSES,
    yes: bool = YES,
    expect_fail: bool = EXPECT_FAIL,
    fixtures_dir: Path | None = FIXTURES_DIR,
    tool: list[str] = TOOL,
    max_cost_usd: str | None = MAX_COST,
    image: str | None = IMAGE,
    force: bool = FORCE,
) -> int:
    """Run CMD against the real providers through a recording proxy and write its fixture.

    CMD gets every base-URL variable the common SDKs and frameworks read (OPENAI_BASE_URL,
    OPENAI_API_BASE, ANTHROPIC_BASE_URL, ANTHROPIC_API_URL, ANTHROPIC_API_BASE) and
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT pointed at the proxy; its calls go upstream with its own keys.
    Each --tool VAR is pointed at the proxy too, which records the tool channel (MCP over HTTP, plain
    HTTP); `attest tool stdio` records stdio servers. Secrets and request headers are never stored.

    The upstream is ATTEST_OPENAI_UPSTREAM / ATTEST_ANTHROPIC_UPSTREAM if set, else your own base URL
    from those variables (Azure, a LiteLLM proxy, vLLM, a company gateway; with or without /v1), else
    api.openai.com / api.anthropic.com.
    The fixture (mode 0600) is written only if CMD exits 0 (non-zero with --expect-fail), made at
    least one model call, and no call failed on the way; otherwise the old fixture stays as it was.
    A fixture recorded from another command (or by a test) is not replaced without --force.

    --refresh N prints the recorded command and its flags, asks to confirm (--yes without a
    terminal), re-runs it with those flags and replaces the fixture only if the run ended as expected.
    A fixture recorded by a test (pytest --attest-record) is refreshed by re-running that test.
    With --only-misses, calls that still match are replayed and only the misses go live: unchanged
    interactions stay byte for byte, unused recordings are dropped, and the live calls' cost is printed.

    Exit codes: 0 fixture written; 1 the command did not end as expected (wrong exit status, no model
    calls, a call failed upstream), nothing written; 3 could not run (usage error, bad or missing
    fixture, credential found, refresh not confirmed).
    """
    if image is not None:
        if refresh or only_misses or yes or not name:
            raise UsageError(
                "--image records a new run: give --name N, without --refresh, --only-misses or --yes"
            )
        return capture_image(image, command or [], name, fixtures_dir, expect_fail, tool)
    check_usage(command or [], name, refresh, yes, expect_fail, tool, only_misses)
    ceiling = spend.parse_ceiling(max_cost_usd)
    env = {**os.environ, **({spend.VARIABLE: repr(ceiling)} if ceiling is not None else {})}
    if refresh:
        plan = plan_refresh(refresh, fixtures_dir)
        if ceiling is not None:
            spend.check_estimate(fx.read_fixture(plan.path), ceiling, str(plan.path))
        confirm_refresh(plan, yes, sys.stdin, sys.stderr, only_misses)
        run_refresh(plan, only_misses=only_misses, env=env)
    else:
        if not force:
            check_overwrite(command or [], name or "", fixtures_dir)
        run_capture(
            command or [], name or "", fixtures_dir=fixtures_dir, expect_fail=expect_fail, tools=tool, env=env
        )
    return 0


def capture_image(
    image: str,
    args: list[str],
    name: str,
    fixtures_dir: Path | None,
    expect_fail: bool,
    tools: list[str],
) -> int:
    from ..image.capture import capture_image as run
    from ..image.container import ImageRun

    run(ImageRun(image, args), name, fixtures_dir=fixtures_dir, expect_fail=expect_fail, tools=tools)
    return 0


def register(app: typer.Typer) -> None:
    app.command("capture", context_settings={"allow_interspersed_args": False})(capture)
