"""Capture: run a command against the recording proxy and keep what the providers answered as a fixture.

The fixture is written only when the run can be replayed as it happened: the command ended as
expected (exit 0, or non-zero with --expect-fail), at least one model call was recorded, and no call
failed on the way (a provider that could not be reached, a stream cut off mid-way, an answer the
command did not wait for). Otherwise nothing is written and an existing fixture stays byte for byte.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..credentials.scan import Secrets, environment_secrets
from ..errors import AttestError, UsageError
from ..fixtures.document import (
    Fixture,
    fixture_path,
    locked,
    model_interactions,
    new_fixture,
    new_source,
    plain_interactions,
    read_fixture,
    write_fixture,
)
from ..normalize.headers import steady
from ..normalize.volatile import numbered_in_order
from ..progress import ProgressLine, counted
from ..providers import PROVIDERS
from ..providers.env import CREDENTIAL_VARS, check_upstreams
from ..tools.declare import declarations, parse_tools
from .only_misses import ReplayFirst
from .proxy import RecordingApp, RecordingProxy
from .spend import LiveCost


class CaptureFailed(AttestError):
    """The run did not end as expected, so no fixture was written."""

    exit_code = 1


@dataclass(frozen=True)
class Captured:
    path: Path
    calls: int
    otlp_requests: int
    returncode: int


def capture_secrets(env: Mapping[str, str], cwd: Path | None = None) -> Secrets:
    """The working directory's .env values and this process's own provider keys, never to be stored."""
    return environment_secrets(cwd, extra=[env.get(var, "") for var in CREDENTIAL_VARS])


def run_child(argv: Sequence[str], env: Mapping[str, str], cwd: Path | None) -> int:
    try:
        return subprocess.run(list(argv), env=dict(env), cwd=cwd, check=False).returncode
    except OSError as exc:
        raise AttestError(f"cannot run {argv[0]!r}: {exc.strerror or exc}") from None


def describe_exit(returncode: int) -> str:
    if returncode < 0:
        try:
            return f"was killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"was killed by signal {-returncode}"
    return f"exited {returncode}"


def why_not_written(app: RecordingApp, returncode: int, expect_fail: bool) -> str | None:
    """Why this run must not become a fixture, or None when it can."""
    if app.failures:
        count = len(app.failures)
        calls = f"{count} model call{'s' if count != 1 else ''}"
        return f"{calls} failed on the way (see above), so replay could not reproduce the run"
    if expect_fail and returncode == 0:
        return "the command exited 0 but --expect-fail says it must fail"
    if not expect_fail and returncode != 0:
        hint = "use --expect-fail to record a run that is meant to fail"
        return f"the command {describe_exit(returncode)} ({hint})"
    if not app.model_channel() and not app.plain:
        return (
            "the command made no model calls through the capture proxy (a client built with a "
            "hard-coded base_url bypasses it)"
        )
    return None


def capture(
    argv: Sequence[str],
    name: str,
    *,
    fixtures_dir: str | Path | None = None,
    expect_fail: bool = False,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    progress: ProgressLine | None = None,
    tools: Sequence[str] = (),
    only_misses: bool = False,
) -> Captured:
    """Run `argv` against a recording proxy and write the fixture if the run ended as expected.

    `tools` are `VAR[=URL]` declarations of the agent's HTTP tool servers (see `tools.declare`).
    `only_misses`: replay what the existing fixture still matches and record only the rest (`capture.only_misses`).
    Raises CaptureFailed (exit 1) when it did not, leaving any existing fixture untouched.
    """
    if not argv:
        raise UsageError("no command given; put it after `--`")
    path = fixture_path(name, fixtures_dir)
    env = dict(os.environ if env is None else env)
    check_providers(env)
    declared = parse_tools(tools, env)
    check_upstreams(env)
    secrets = capture_secrets(env, cwd)
    base = ReplayFirst(path, secrets) if only_misses else None
    with RecordingProxy(secrets, env, progress, declared, base) as proxy:
        returncode = run_child(argv, {**env, **proxy.app.child_env()}, cwd)
    source = new_source(portable_command(argv), expect_fail=expect_fail, exit_code=returncode)
    return conclude(proxy.app, source, name, path, returncode, expect_fail)


def check_providers(env: Mapping[str, str]) -> None:
    """Refuse (exit 3) before the command starts when a provider the environment selects could not be
    recorded here, instead of failing each of its calls."""
    for provider in PROVIDERS.values():
        problem = provider.capture_needs(env) if provider.capture_needs is not None else None
        if problem is not None:
            raise UsageError(problem)


# When and with which toolkit a run was recorded: a re-record that changed nothing else keeps the file.
_STAMPS = ("recorded_at", "toolkit_version")


def unchanged(path: Path, doc: Fixture) -> bool:
    """True when `path` already holds `doc` but for when and by which version it was recorded, the
    header values that change from call to call (a date, a timing) and how its placeholders are
    numbered, so a scheduled refresh that found nothing new leaves the file byte for byte (and opens no
    pull request), even after a partial refresh numbered its new values after the old ones."""
    try:
        old = read_fixture(path, Secrets.of([]))
    except AttestError:  # missing or unreadable: write the new one
        return False

    def content(fixture: Fixture) -> str:
        source = {k: v for k, v in fixture["source"].items() if k not in _STAMPS}
        channels = {**fixture["channels"], "model": [steady(i) for i in model_interactions(fixture)]}
        kept = {**{k: v for k, v in fixture.items() if k != "digest"}, "source": source, "channels": channels}
        return numbered_in_order(json.dumps(kept, sort_keys=True, ensure_ascii=False))

    return content(old) == content(doc)


def conclude(
    app: RecordingApp, source: dict, name: str, path: Path, returncode: int, expect_fail: bool
) -> Captured:
    """Write the fixture of a finished run, or raise CaptureFailed and leave `path` as it was.

    Writers of the same fixtures directory take turns (see `fixtures.document.locked`), so two pytest workers
    never write over each other, and a partial refresh never merges into a file changed meanwhile."""
    with locked(path):
        problem = why_not_written(app, returncode, expect_fail)
        if problem is None and app.base is not None and not app.base.still_on_disk():
            problem = "the fixture changed while this refresh ran, so the merge would lose that change"
        if problem is not None:
            if app.ceiling is not None:
                note_live_cost(app)
            app.progress.finish(f"{app.count_line()}; nothing written")
            kept = "; the existing fixture is unchanged" if path.exists() else ""
            raise CaptureFailed(f"{problem}; nothing written{kept}", path)
        return _write(app, source, name, path, returncode)


def _write(app: RecordingApp, source: dict, name: str, path: Path, returncode: int) -> Captured:
    recorder = app.tools
    servers = declarations(list(recorder.tools.values()), recorder.stdio, app.secrets)
    # A partial refresh keeps the plain HTTP the fixture had, the test's new calls follow (see plain_http).
    plain = [*(plain_interactions(app.base.doc) if app.base is not None else []), *app.plain]
    doc = new_fixture(name, source, app.model_channel(), recorder.interactions, servers, plain)
    captured = Captured(path, len(app.interactions), app.otlp_requests, returncode)
    if app.base is not None or app.ceiling is not None:  # what a partial refresh or a ceiling is told
        note_live_cost(app)
    dropped = (
        f", {counted(app.base.dropped, 'unused recording')} dropped" if app.base and app.base.dropped else ""
    )
    nothing_new = not app.interactions and not app.plain
    if unchanged(path, doc) or (app.base is not None and nothing_new and not app.base.dropped):
        app.progress.finish(f"{app.count_line()}{dropped}; {path} unchanged")
        return captured
    try:
        write_fixture(path, doc, app.scan_secrets())
    except AttestError:
        app.progress.finish(f"{app.count_line()}; nothing written")
        raise
    app.progress.finish(f"{app.count_line()}{dropped}; wrote {path}")
    return captured


def note_live_cost(app: RecordingApp) -> None:
    if app.cost.calls:
        app.progress.note(f"attest capture: live calls: {live_cost_line(app.cost, app.ceiling)}")


def live_cost_line(cost: LiveCost, ceiling: float | None = None) -> str:
    """`2 live model calls · $0.0012` and the price table they were priced from (a partial refresh
    costs fractions of a cent, which two decimals would hide: shown as the run's live calls are)."""
    from ..report.summary import call_cost, price_note

    usd = call_cost(cost.usd) + (f" (+{cost.unpriced} unpriced)" if cost.unpriced else "")
    under = f" under --max-cost-usd {ceiling:g}" if ceiling is not None else ""
    table = price_note().removeprefix("attest replay: live calls ")
    return f"{counted(cost.calls, 'live model call')} · {usd}{under}, {table}"


_PYTHON = re.compile(r"python[0-9.]*(\.exe)?")


def portable_command(argv: Sequence[str]) -> list[str]:
    """The command as a fixture stores it: an interpreter named by its absolute path (a virtualenv's,
    this machine's) is stored as `python`, which `--refresh` runs on any machine."""
    command = list(argv)
    if command and os.path.isabs(command[0]) and _PYTHON.fullmatch(Path(command[0]).name):
        command[0] = "python"
    return command
