"""Capture: run a command against a recording proxy and keep what the providers answered as a fixture.

The proxy listens on loopback, forwards each model call to the real provider (or to
ATTEST_OPENAI_UPSTREAM / ATTEST_ANTHROPIC_UPSTREAM) with the caller's own credentials, streams the
answer back as it arrives, and hands every finished exchange to one Templater for the whole run, so a
response id the agent echoes later gets the same placeholder. Request headers are never stored.

The fixture is written only when the run can be replayed as it happened: the command ended as
expected (exit 0, or non-zero with --expect-fail), at least one model call was recorded, and no call
failed on the way (a provider that could not be reached, a stream cut off mid-way, an answer the
command did not wait for). Otherwise nothing is written and an existing fixture stays byte for byte.
A real error status from the provider (a 429, a 500) is an answer like any other and is recorded,
since replay must reproduce it.
"""

from __future__ import annotations

import asyncio
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import aiohttp
from aiohttp import web

from .. import providers
from ..credentials.names import is_secret_key
from ..credentials.scan import Secrets, environment_secrets
from ..errors import AttestError, FixtureError, UsageError
from ..fixtures.document import (
    Fixture,
    Interaction,
    dumps,
    fixture_path,
    locked,
    new_fixture,
    new_source,
    plain_interactions,
    read_fixture,
    write_fixture,
)
from ..normalize import Exchange, Templater, parse_body, request_content
from ..providers import RECORDED, error_body, error_headers, route
from ..proxy import listeners
from ..proxy.background import BackgroundServer
from ..proxy.env import CREDENTIAL_VARS, PLACEHOLDER_KEY, placeholder_credentials, proxy_env
from ..proxy.http import MAX_REQUEST_BYTES
from ..proxy.live import LiveForwarder, reason_of
from ..report.progress import ProgressLine, counted
from ..tools.declare import HttpTool, declarations, parse_tools, specs_of
from ..tools.record import ToolRecorder
from . import spend
from .only_misses import ReplayFirst

PROVIDERS = RECORDED
_STARTED = web.RequestKey("attest_capture_started", bool)  # set once the response headers have gone out
_SHUTDOWN_TIMEOUT = 5.0


class CaptureFailed(AttestError):
    """The run did not end as expected, so no fixture was written."""

    exit_code = 1


@dataclass(frozen=True)
class Captured:
    path: Path
    calls: int
    otlp_requests: int
    returncode: int


@dataclass
class LiveCost:
    """What the calls that went to a provider cost, priced from the built-in table."""

    calls: int = 0
    usd: float = 0.0
    unpriced: int = 0

    def add(self, cost: float | None) -> None:
        self.calls += 1
        if cost is None:
            self.unpriced += 1
        else:
            self.usd += cost


# --- the recording proxy ---------------------------------------------------------------------------


def offline_env(base_url: str, env: Mapping[str, str]) -> dict[str, str]:
    """The variables that point a command's clients at a listener of ours at `base_url`, with a
    placeholder key where the user has none (the SDKs refuse to build a client without one)."""
    return {
        **proxy_env(base_url),
        **listeners.handed_out(base_url, env),
        **placeholder_credentials(env, PLACEHOLDER_KEY),
    }


def bad_gateway(provider: str, message: str) -> web.Response:
    """A provider-shaped 502 the official SDKs do not retry: the upstream will not answer a retry either."""
    body = error_body(provider, 502, message)
    headers = {"x-should-retry": "false", **error_headers(provider, 502)}
    return web.json_response(body, status=502, headers=headers)


def unreachable(upstream: str, exc: BaseException) -> str:
    """ "cannot resolve HOST" when the name does not resolve, else "cannot reach URL (reason)"."""
    if isinstance(exc, aiohttp.ClientConnectorError) and isinstance(exc.os_error, socket.gaierror):
        return f"cannot resolve {exc.host}"
    return f"cannot reach {upstream} ({reason_of(exc)})"


async def mark_started(request: web.Request, _response: web.StreamResponse) -> None:
    request[_STARTED] = True


def model_of(request: web.Request, raw: bytes) -> str | None:
    """The model a call asked for, to price it."""
    content = request_content(raw, request.headers.get("content-encoding"))
    body = parse_body(content, request.headers.get("content-type")).get("json")
    return providers.model_of("/" + request.match_info.get("tail", ""), body)


class RecordingApp:
    """The proxy's handlers and what they recorded (touched only from the proxy's loop thread)."""

    def __init__(
        self,
        secrets: Secrets,
        env: Mapping[str, str],
        progress: ProgressLine,
        tools: Sequence[HttpTool] = (),
        base: ReplayFirst | None = None,
        live: LiveForwarder | None = None,
    ) -> None:
        self.secrets = secrets
        self.templater = Templater(secrets)
        self.live = live or LiveForwarder(env)
        self.progress = progress
        self.interactions: list[Interaction] = []
        # Plain HTTP the recording test sent from its own process (see `plain_http`): a command's own
        # process is not ours to watch, so `attest capture` keeps none.
        self.plain: list[Interaction] = []
        self.cost = LiveCost()
        # A partial refresh: calls that still match the existing fixture are replayed from it.
        self.base = base
        if base is not None:
            self.templater.reserve(dumps(base.doc))
        self.failures: list[str] = []
        self.otlp_requests = 0
        self.credentials: set[str] = set()
        self.gate = listeners.Gate()
        self.base_url = ""  # with the gate's secret: what the command is handed
        self.ceiling = spend.ceiling_from(env)  # --max-cost-usd: no live call once the calls reached it
        self.tools = ToolRecorder(list(tools), secrets, self.live, self.fail, self._remember_credentials)

    def build(self) -> web.Application:
        app = web.Application(client_max_size=MAX_REQUEST_BYTES)
        self.tools.add_routes(app)  # before the provider route, which would take `tool` as a provider
        app.router.add_route("*", "/{provider}/{tail:.*}", self.handle)
        app.on_response_prepare.append(mark_started)
        app.on_cleanup.append(lambda _app: self.live.close())
        # only the command this run started may add to the fixture
        return self.gate.app(app, MAX_REQUEST_BYTES)

    def child_env(self) -> dict[str, str]:
        own = listeners.handed_out(self.base_url, self.live.listeners_env)
        return {**proxy_env(self.base_url), **self.tools.child_env(self.base_url), **own}

    def scan_secrets(self) -> Secrets:
        """The run's secrets plus the keys the command sent in its headers, for the write-time scan."""
        return Secrets.of([*self.secrets.values, *self.credentials])

    def model_channel(self) -> list[Interaction]:
        """The fixture's model calls: what was recorded, or for a partial refresh every call in order."""
        return self.base.channel(self.interactions) if self.base is not None else self.interactions

    def count_line(self) -> str:
        line = f"attest capture: {counted(len(self.interactions), 'call')} recorded"
        if self.base is not None:
            line = f"attest capture: {self.base.replayed} replayed, {len(self.interactions)} recorded live"
        if self.tools.interactions:
            line += f", {counted(len(self.tools.interactions), 'tool message')}"
        if self.plain:
            line += f", {counted(len(self.plain), 'plain HTTP call')}"
        if self.otlp_requests:
            line += f" ({counted(self.otlp_requests, 'OTLP request')} accepted, not stored)"
        return line

    # --- handlers ----------------------------------------------------------------------------------

    async def handle(self, request: web.Request) -> web.StreamResponse:
        provider = request.match_info["provider"]
        if provider == "otlp":
            return await self.otlp(request)
        if provider not in PROVIDERS:
            return web.json_response(
                {"error": {"message": f"attest capture: no provider {provider!r}"}}, status=404
            )
        raw = await request.read()
        provider, path = route(provider, "/" + request.match_info["tail"])
        self._remember_credentials(request)
        if self.base is not None:
            replayed = await self.base.serve(request, provider, path, raw)
            if replayed is not None:
                return replayed
        refused = spend.refusal(self.ceiling, self.cost.usd, self.cost.unpriced)
        if refused is not None:
            self.fail(f"{request.method} {path}: {refused}")
            return bad_gateway(provider, f"attest capture: {refused}")
        try:
            response, body = await self.live.forward(
                request, provider, path, raw, lambda exchange: self.record(provider, exchange)
            )
            self.cost.add(
                self.live.price(model_of(request, raw), body, response.headers.get("content-type", ""))
            )
            return response
        except asyncio.CancelledError:
            self.fail(f"{request.method} {path}: the command ended before the answer arrived")
            raise
        except Exception as exc:  # network failures, and anything else: the run fails, with one line
            return self.forward_failed(request, provider, path, exc)

    async def otlp(self, request: web.Request) -> web.Response:
        await request.read()
        self.otlp_requests += 1
        if "json" in request.content_type:
            return web.json_response({})
        return web.Response(body=b"", content_type="application/x-protobuf")

    def record(self, provider: str, exchange: Exchange) -> None:
        try:
            if self.base is not None:
                exchange = self.base.restore(exchange)
            interaction = self.templater.record(exchange, provider)
        except Exception as exc:  # the agent already has its answer; the run must still not pass silently
            self.fail(f"{exchange.method} {exchange.path}: could not record the answer ({reason_of(exc)})")
            return
        self.interactions.append(interaction)
        if self.base is not None:
            self.base.entries.append(interaction)
        self.progress.update(self.count_line())

    def forward_failed(
        self, request: web.Request, provider: str, path: str, exc: BaseException
    ) -> web.StreamResponse:
        what = f"{request.method} {path}"
        upstream = self.live.upstreams[provider].base
        if not request.get(_STARTED):
            problem = unreachable(upstream, exc)
            message = self.secrets.redact(f"attest capture: {problem} for {what}")
            self.fail(f"{what}: {problem}; the command got a 502")
            return bad_gateway(provider, message)
        transport = request.transport
        if transport is None or transport.is_closing():
            self.fail(f"{what}: the command closed the connection before the answer ended")
        else:
            self.fail(
                f"{what}: {upstream} dropped the answer mid-way ({reason_of(exc)}); "
                "the command got the part that arrived"
            )
            transport.close()  # pass the drop on: the command sees its stream cut off, as it happened
        return web.Response()  # the connection is closed, so aiohttp drops this quietly

    def fail(self, message: str) -> None:
        message = self.secrets.redact(message)  # an upstream URL or error text must not print a key
        self.failures.append(message)
        self.progress.note(f"attest capture: {message}")

    def _remember_credentials(self, request: web.Request) -> None:
        """The credentials the command sends: redacted wherever a provider echoes them back, and
        scanned for."""
        self.credentials |= header_credentials(request)
        self.templater.learn(self.credentials)


def header_credentials(request: web.Request) -> set[str]:
    """The values of the credential headers a request carries (`authorization`, `x-api-key`, a
    custom `X-Custom-Auth`), a bearer token without its scheme."""
    found: set[str] = set()
    for name, value in request.headers.items():
        if is_secret_key(name):
            value = value.strip()
            if value[:7].lower() == "bearer ":
                value = value[7:].strip()
            if value:
                found.add(value)
    return found


class RecordingProxy:
    """The recording proxy on loopback, in a thread of its own. Use as a context manager."""

    def __init__(
        self,
        secrets: Secrets,
        env: Mapping[str, str],
        progress: ProgressLine | None = None,
        tools: Sequence[HttpTool] = (),
        base: ReplayFirst | None = None,
        live: LiveForwarder | None = None,
    ) -> None:
        self.app = RecordingApp(secrets, env, progress or ProgressLine(shared=True), tools, base, live)
        self.server = BackgroundServer(
            self.app.build, "attest-capture", shutdown_timeout=_SHUTDOWN_TIMEOUT, auto_decompress=False
        )

    def start(self, host: str = "127.0.0.1", port: int = 0, sock: socket.socket | None = None) -> str:
        self.app.base_url = self.app.gate.url(self.server.start(host, port, sock))
        listeners.started(self.app.base_url)
        return self.app.base_url

    def stop(self) -> None:
        """Stop, after the answers in flight are finished and recorded."""
        self.server.stop()
        listeners.stopped(self.app.base_url)

    def __enter__(self) -> RecordingProxy:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


# --- a capture run ---------------------------------------------------------------------------------


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
    declared = parse_tools(tools, env)
    secrets = capture_secrets(env, cwd)
    base = ReplayFirst(path, secrets) if only_misses else None
    with RecordingProxy(secrets, env, progress, declared, base) as proxy:
        returncode = run_child(argv, {**env, **proxy.app.child_env()}, cwd)
    source = new_source(portable_command(argv), expect_fail=expect_fail, exit_code=returncode)
    return conclude(proxy.app, source, name, path, returncode, expect_fail)


# When and with which toolkit a run was recorded: a re-record that changed nothing else keeps the file.
_STAMPS = ("recorded_at", "toolkit_version")


def unchanged(path: Path, doc: Fixture) -> bool:
    """True when `path` already holds `doc` but for when and by which version it was recorded, so a
    scheduled refresh that found nothing new leaves the file byte for byte (and opens no pull request)."""
    try:
        old = read_fixture(path, Secrets.of([]))
    except AttestError:  # missing or unreadable: write the new one
        return False

    def content(fixture: Fixture) -> Fixture:
        source = {k: v for k, v in fixture["source"].items() if k not in _STAMPS}
        return {**{k: v for k, v in fixture.items() if k != "digest"}, "source": source}

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
    if app.cost.calls and app.base is not None:  # what a partial refresh paid for
        app.progress.note(f"attest capture: live calls: {live_cost_line(app.cost)}")
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


def live_cost_line(cost: LiveCost) -> str:
    """`2 live model calls · $0.0012` and the price table they were priced from (a partial refresh
    costs fractions of a cent, which two decimals would hide: shown as the run's live calls are)."""
    from ..report.summary import call_cost, price_note

    usd = call_cost(cost.usd) + (f" (+{cost.unpriced} unpriced)" if cost.unpriced else "")
    table = price_note().removeprefix("attest replay: live calls ")
    return f"{counted(cost.calls, 'live model call')} · {usd}, {table}"


# --- refresh ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RefreshPlan:
    name: str
    fixtures_dir: Path | None
    path: Path
    command: list[str]
    expect_fail: bool
    tools: list[str] = field(default_factory=list)  # the `--tool` declarations to re-create
    test: str | None = None  # the pytest node id that recorded it: a refresh re-runs that test


def plan_refresh(
    name: str,
    fixtures_dir: str | Path | None = None,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> RefreshPlan:
    """What `capture --refresh` would re-run, from the fixture's recorded source."""
    path = fixture_path(name, fixtures_dir)
    doc = read_fixture(path, capture_secrets(dict(os.environ if env is None else env), cwd))
    source = doc["source"]
    command = list(source.get("command") or [])
    if source.get("image"):
        raise FixtureError(
            f"was recorded from the image {source['image']}; re-record it with "
            f"`attest capture --image {source['image']} --name {name}`",
            path,
        )
    if not command:
        origin = f" (imported from {source['imported_from']})" if source.get("imported_from") else ""
        raise FixtureError(
            f"records no command to re-run{origin}; record it with `attest capture --name {name} -- CMD`",
            path,
        )
    expect_fail = bool(source.get("flags", {}).get("expect_fail", False))
    tools = specs_of(doc.get("tools", {}), dict(os.environ if env is None else env))
    test = source.get("test")
    if test is not None and (not test or test.startswith("-")):  # an option smuggled in as a node id
        raise FixtureError(f"source.test {test!r} is not a pytest node id", path)
    directory = Path(fixtures_dir) if fixtures_dir else None
    return RefreshPlan(name, directory, path, command, expect_fail, tools, test)


_NAMED_ESCAPES = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def _escape_char(char: str) -> str:
    if char in "'\\":
        return "\\" + char
    if char in _NAMED_ESCAPES:
        return _NAMED_ESCAPES[char]
    if char.isprintable():
        return char
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def quote_arg(arg: str) -> str:
    """Shell quoting that also shows control characters ($'...'), so a printed command hides nothing."""
    if arg.isprintable():
        return shlex.quote(arg)
    return "$'" + "".join(_escape_char(c) for c in arg) + "'"


def quote_command(argv: Sequence[str]) -> str:
    return " ".join(quote_arg(arg) for arg in argv)


def describe_plan(plan: RefreshPlan, only_misses: bool = False) -> list[str]:
    if plan.test is not None:
        return [
            f"attest capture: recorded test: {quote_arg(plan.test)}",
            f"attest capture: runs: {quote_command(test_command(plan.test, only_misses))}",
        ]
    flags = " ".join([*(["--expect-fail"] if plan.expect_fail else []), *(f"--tool {t}" for t in plan.tools)])
    flags = flags or "(none)"
    return [
        f"attest capture: recorded command: {quote_command(plan.command)}",
        f"attest capture: flags: {flags}",
    ]


def test_command(test: str, only_misses: bool, python: str = sys.executable) -> list[str]:
    """pytest re-running one test with recording on (given on the command line, so also under CI)."""
    mode = "new" if only_misses else "all"
    return [python, "-m", "pytest", "-q", f"--attest-record={mode}", "--", test]


class RefreshDeclined(AttestError):
    """The user answered no: nothing ran, nothing changed."""


def _interactive(stdin: IO[str]) -> bool:
    isatty = getattr(stdin, "isatty", None)
    return bool(isatty and isatty())


def confirm_refresh(
    plan: RefreshPlan, yes: bool, stdin: IO[str], out: IO[str], only_misses: bool = False
) -> None:
    """Ask at a terminal; without one, --yes is required. Raises when the refresh must not run."""
    for line in describe_plan(plan, only_misses):
        out.write(line + "\n")
    out.flush()
    if yes:
        return
    if not _interactive(stdin):
        raise UsageError(
            "refusing to re-run the recorded command without confirmation: no terminal to ask at; "
            "review the command above, then pass --yes",
            plan.path,
        )
    out.write(f"Re-run this command and overwrite {plan.path}? [y/N] ")
    out.flush()
    if stdin.readline().strip().lower() not in ("y", "yes"):
        raise RefreshDeclined("not confirmed; nothing ran and the fixture is unchanged", plan.path)


def refresh(
    plan: RefreshPlan,
    *,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    progress: ProgressLine | None = None,
    only_misses: bool = False,
) -> None:
    """Re-run the recorded command with its recorded flags; replace the fixture only if the run ended
    as expected (a failed refresh leaves it byte for byte). A fixture a test recorded is refreshed by
    that test, under pytest with `--attest-record`. `only_misses`: see `capture.only_misses`."""
    if plan.test is not None:
        refresh_test(plan, only_misses, env, cwd)
        return
    capture(
        local_command(plan.command),
        plan.name,
        fixtures_dir=plan.fixtures_dir,
        expect_fail=plan.expect_fail,
        env=env,
        cwd=cwd,
        progress=progress,
        tools=plan.tools,
        only_misses=only_misses,
    )


_PYTHON = re.compile(r"python[0-9.]*(\.exe)?")


def portable_command(argv: Sequence[str]) -> list[str]:
    """The command as a fixture stores it: an interpreter named by its absolute path (a virtualenv's,
    this machine's) is stored as `python`, which `--refresh` runs on any machine."""
    command = list(argv)
    if command and os.path.isabs(command[0]) and _PYTHON.fullmatch(Path(command[0]).name):
        command[0] = "python"
    return command


def local_command(command: Sequence[str]) -> list[str]:
    """A stored command as `--refresh` runs it: `python` is the interpreter attest runs under (the
    project's virtualenv), as the command's own absolute interpreter was when it was recorded."""
    return [sys.executable, *command[1:]] if command and command[0] == "python" else list(command)


def refresh_test(
    plan: RefreshPlan, only_misses: bool, env: Mapping[str, str] | None, cwd: Path | None
) -> None:
    """The plugin in that pytest run records and writes the fixture, only if the test passes."""
    assert plan.test is not None
    returncode = run_child(
        test_command(plan.test, only_misses), dict(os.environ if env is None else env), cwd
    )
    if returncode != 0:
        raise CaptureFailed(
            f"pytest {describe_exit(returncode)}; a test writes its fixture only when it passes", plan.path
        )
