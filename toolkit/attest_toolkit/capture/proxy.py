"""The recording proxy: what `attest capture`, a refresh and pytest's recording modes record through.

It listens on loopback, forwards each model call to the real provider (or to
ATTEST_OPENAI_UPSTREAM / ATTEST_ANTHROPIC_UPSTREAM) with the caller's own credentials, streams the
answer back as it arrives, and hands every finished exchange to one Templater for the whole run, so a
response id the agent echoes later gets the same placeholder. Request headers are never stored.
A real error status from the provider (a 429, a 500) is an answer like any other and is recorded,
since replay must reproduce it; a call that failed on the way is kept as a failure of the run.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Mapping, Sequence

import aiohttp
from aiohttp import web

from .. import providers
from ..credentials.names import is_secret_key
from ..credentials.scan import Secrets
from ..fixtures.document import Interaction, dumps
from ..normalize import Exchange, Templater, parse_body, request_content
from ..progress import ProgressLine, counted
from ..providers import COUNTED, RECORDED, error_body, error_headers, route
from ..providers.env import PLACEHOLDER_KEY, placeholder_credentials, proxy_env
from ..proxy import listeners
from ..proxy.background import BackgroundServer
from ..proxy.http import MAX_REQUEST_BYTES, request_flag
from ..proxy.live import LiveForwarder, reason_of
from ..tools.declare import HttpTool
from . import spend
from .only_misses import ReplayFirst
from .tool_recorder import ToolRecorder

PROVIDERS = RECORDED
_STARTED = request_flag("attest_capture_started")  # set once the response headers have gone out
_SHUTDOWN_TIMEOUT = 5.0


def offline_env(base_url: str, env: Mapping[str, str]) -> dict[str, str]:
    """The variables that point a command's clients at a listener of ours at `base_url`, with a
    placeholder key where the user has none (the SDKs refuse to build a client without one)."""
    return {
        **proxy_env(base_url),
        **listeners.handed_out(base_url, env),
        **placeholder_credentials(env, PLACEHOLDER_KEY),
    }


def provider_error(provider: str, status: int, message: str) -> web.Response:
    """A provider-shaped error the official SDKs do not retry: a retry would get the same answer."""
    headers = {"x-should-retry": "false", **error_headers(provider, status)}
    return web.json_response(error_body(provider, status, message), status=status, headers=headers)


def bad_gateway(provider: str, message: str) -> web.Response:
    """The upstream could not be reached (a retry would not reach it either)."""
    return provider_error(provider, 502, message)


def unreachable(upstream: str, exc: BaseException) -> str:
    """ "cannot resolve HOST" when the name does not resolve, else "cannot reach URL (reason)"."""
    if isinstance(exc, aiohttp.ClientConnectorError) and isinstance(exc.os_error, socket.gaierror):
        return f"cannot resolve {exc.host}"
    return f"cannot reach {upstream} ({reason_of(exc)})"


async def mark_started(request: web.Request, _response: web.StreamResponse) -> None:
    request[_STARTED] = True


def priced_call(request: web.Request, raw: bytes) -> tuple[str | None, float | None]:
    """The model a call asked for, to price its answer, and the most the call can cost."""
    content = request_content(raw, request.headers.get("content-encoding"))
    body = parse_body(content, request.headers.get("content-type")).get("json")
    model = providers.model_of("/" + request.match_info.get("tail", ""), body)
    return model, spend.call_estimate(model, body, content)


def content_type(exchange: Exchange) -> str:
    return next((v for k, v in exchange.response_headers if k.lower() == "content-type"), "")


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
        self.cost = spend.LiveCost()
        # A partial refresh: calls that still match the existing fixture are replayed from it.
        self.base = base
        if base is not None:
            self.templater.reserve(dumps(base.doc))
        self.failures: list[str] = []
        self.otlp_requests = 0
        self.credentials: set[str] = set()
        self.gate = listeners.Gate()
        self.base_url = ""  # with the gate's secret: what the command is handed
        self.ceiling = spend.ceiling_from(env)  # --max-cost-usd: no live call once the calls may reach it
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
        if provider in COUNTED:
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
        refused = spend.refusal(self.ceiling, self.cost)
        if refused is not None:
            self.fail(f"{request.method} {path}: {refused}")
            return provider_error(provider, spend.REFUSED_STATUS, f"attest capture: {refused}")
        model, estimate = priced_call(request, raw)
        ticket = self.cost.leave(estimate)  # counted from now, before anything can await
        try:
            response, _ = await self.live.forward(
                request,
                provider,
                path,
                raw,
                lambda exchange: self.answered(provider, model, ticket, exchange),
            )
            return response
        except asyncio.CancelledError:
            self.fail(f"{request.method} {path}: the command ended before the answer arrived")
            raise
        except Exception as exc:  # network failures, and anything else: the run fails, with one line
            return self.forward_failed(request, provider, path, exc)
        finally:
            self.cost.settle(ticket, None)  # an answer that never arrived whole stays at its estimate

    async def otlp(self, request: web.Request) -> web.Response:
        await request.read()
        self.otlp_requests += 1
        if "json" in request.content_type:
            return web.json_response({})
        return web.Response(body=b"", content_type="application/x-protobuf")

    def answered(self, provider: str, model: str | None, ticket: int, exchange: Exchange) -> None:
        """Price and record a whole answer, before its end reaches the command: the next call it sends
        sees this one priced, and a command that hangs up on the end does not leave it unpriced."""
        self.cost.settle(ticket, self.live.price(model, exchange.response_body, content_type(exchange)))
        self.record(provider, exchange)

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
