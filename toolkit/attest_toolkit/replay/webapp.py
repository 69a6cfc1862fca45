"""The engine's aiohttp application: every request the fast path (`replay.fastpath`) hands over.

A miss (diagnosed, counted, answered in the provider's error shape), a call forwarded live, OTLP, the
tool channel, lenient matching, and whatever HTTP the fast path leaves to aiohttp. The server imports
this module, and so aiohttp, only when a request first needs it: a replay whose calls all hit never
loads either.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence

from aiohttp import web

from ..credentials.scan import Secrets
from ..normalize import parse_body, request_content
from ..normalize.served import Sent, key_as_sent, restore, restore_bytes
from ..providers import COUNTED, GOOGLE_TOKEN_PROVIDER, PROVIDERS, error_headers, model_of, route
from ..proxy import listeners
from ..proxy.http import MAX_REQUEST_BYTES
from ..proxy.live import ForwardRefused, LiveForwarder, cut_off
from . import fault_serve, last_miss
from .answers import miss_response, sent_of, serve_recording
from .channel import ChannelContext, ChannelFactory
from .diagnose import NO_SESSION, Miss, MissKind
from .faults import WITHOUT_RECORDING
from .google_token import ROUTE as GOOGLE_TOKEN_ROUTE
from .google_token import TOKEN, CredentialFiles
from .index import Recording
from .session import Session

TOO_LARGE = (
    "replay miss: the request body is larger than the engine's 64 MiB limit, so it cannot match a recording"
)


def no_session(provider: str) -> web.Response:
    """A session id that is not one of this engine's: ended, or never this run's (the id is the
    secret that keeps a session's routes for its own run), so 403, and nothing is forwarded."""
    response = miss_response(provider, NO_SESSION)
    response.set_status(403)
    response.headers.update(error_headers(provider, 403))
    return response


@web.middleware
async def loopback_only(request: web.Request, handler: listeners.Handler) -> web.StreamResponse:
    """The engine's gate: every route holds a session id, the secret (an unknown one is refused by the
    route itself); this refuses a foreign Host and a path that names no session."""
    if listeners.loopback_host(request) and request.match_info.http_exception is None:
        return await handler(request)
    return listeners.forbidden()


def build_app(
    sessions: Mapping[str, Session],
    secrets: Secrets,
    env: Mapping[str, str],
    in_ci: bool,
    channels: Sequence[ChannelFactory],
    google: CredentialFiles | None = None,
) -> web.Application:
    """The application over the engine's own session table (sessions opened later are seen too);
    `channels`: the channels beside the model calls, each built over this application's context;
    `google`: the session credentials files whose token endpoint is this application's."""
    live = LiveForwarder(env)
    context = ChannelContext(sessions, secrets, env, live)
    # The session id in every URL is the per-run secret; the gate checks the Host.
    app = web.Application(client_max_size=MAX_REQUEST_BYTES, middlewares=[loopback_only])
    for channel in channels:
        channel(context).add_routes(app)  # before the provider route, which would take `tool` as a provider
    app.router.add_route("POST", GOOGLE_TOKEN_ROUTE, GoogleToken(sessions).answer)
    app.router.add_route("*", "/r/{sid}/{provider}/{tail:.*}", ModelCalls(context, in_ci).handle)
    app.on_cleanup.append(lambda _app: live.close())
    if google is not None:
        app.on_cleanup.append(lambda _app: asyncio.to_thread(google.close))
    return app


class GoogleToken:
    """A placeholder Google token for a session's own credentials file (see google_token)."""

    def __init__(self, sessions: Mapping[str, Session]) -> None:
        self.sessions = sessions

    async def answer(self, request: web.Request) -> web.Response:
        await request.read()
        if request.match_info["sid"] not in self.sessions:
            return no_session(GOOGLE_TOKEN_PROVIDER)
        return web.json_response({"access_token": TOKEN, "expires_in": 3600, "token_type": "Bearer"})


class ModelCalls:
    """The provider routes: a session's model calls that the fast path did not answer."""

    def __init__(self, context: ChannelContext, in_ci: bool) -> None:
        self.sessions = context.sessions
        self.secrets = context.secrets
        self.live = context.live
        self.in_ci = in_ci

    async def handle(self, request: web.Request) -> web.StreamResponse:
        provider = request.match_info["provider"]
        session = self.sessions.get(request.match_info["sid"])
        if session is None or provider not in PROVIDERS:
            return no_session(provider)
        if provider in COUNTED:
            session.counters.otlp_requests += 1
            await request.read()
            return web.Response(status=200, body=b"{}", content_type="application/json")
        try:
            raw = await request.read()
        except web.HTTPRequestEntityTooLarge:
            miss = Miss(TOO_LARGE, MissKind.PARAMS, session.name)
            session.record_miss(miss, not_evaluated=False)
            return miss_response(provider, miss.message)
        provider, path = route(provider, "/" + request.match_info["tail"])
        fault = session.faults.next_request() if session.faults.plan else None
        if fault is not None and fault.kind in WITHOUT_RECORDING:
            return await fault_serve.instead(request, session.faults, provider, path, fault)
        if session.mode == "off":
            return await self.go_live(request, session, provider, path, raw, None)
        sent = sent_of(request, provider, path, raw)
        rk, path = key_as_sent(sent, session.served, self.secrets)
        session.compared = None
        found = session.lookup(
            rk.key, rk.hashes, rk.model, f"{request.method} {path}", rk.parts, rk.components
        )
        if isinstance(found, Recording):
            session.counters.replayed += 1
            if fault is not None:
                return await fault_serve.serving(request, session.faults, found, fault)
            return await serve_recording(request, found)
        self.keep_miss(session, sent, found)
        return await self.miss(request, session, provider, path, raw, found, rk.model)

    def keep_miss(self, session: Session, sent: Sent, miss: Miss) -> None:
        """Outside CI, the recording a miss was compared with and the request as sent, for a side-by-side
        look (`pytest --attest-diff`, `attest fixture diff NAME --last-miss`)."""
        if self.in_ci or session.compared is None:
            return
        position, rec = session.compared
        loaded = next((f for f in session.fixtures if f.name == rec.fixture), None)
        if loaded is None or rec.request is None:
            return
        _provider, method, path, query, body = rec.request
        recorded = {"method": method, "path": path, "query": query, "request": body}
        content = restore_bytes(request_content(sent.raw, sent.content_encoding), session.served)
        where = (restore(sent.path, session.served), restore(sent.query, session.served))
        as_sent = last_miss.sent_request(sent.provider, sent.method, *where, content, self.secrets)
        last_miss.keep(loaded.path, position + 1, recorded, as_sent, miss.message, self.secrets)

    async def miss(
        self,
        request: web.Request,
        session: Session,
        provider: str,
        path: str,
        raw: bytes,
        miss: Miss,
        model: str | None,
    ) -> web.StreamResponse:
        if session.mode == "auto" and not session.no_live and self.live.authorized(provider, request, raw):
            return await self.go_live(request, session, provider, path, raw, model)
        session.record_miss(miss, not_evaluated=session.mode == "auto")
        return miss_response(provider, miss.message)

    async def go_live(
        self, request: web.Request, session: Session, provider: str, path: str, raw: bytes, model: str | None
    ) -> web.StreamResponse:
        if not self.live.authorized(provider, request, raw) or session.no_live:
            return miss_response(provider, "attest replay: live calls are off for this run")
        if model is None:
            content = request_content(raw, request.headers.get("content-encoding"))
            model = model_of(path, parse_body(content, request.headers.get("content-type")).get("json"))
        try:
            response, body = await self.live.forward(request, provider, path, raw)
        except ConnectionError:  # the agent left mid-answer: the call was still made, and is counted
            session.record_live(None, model)
            return web.Response()  # its connection is closed, so aiohttp drops this quietly
        except ForwardRefused as exc:  # a loop, or a deadline missed: the test fails with this line
            return refused(
                request, session, exc, f"attest replay: live call {request.method} {path}", provider
            )
        session.record_live(self.live.price(model, body, response.headers.get("content-type", "")), model)
        return response


def refused(
    request: web.Request, session: Session, exc: ForwardRefused, what: str, provider: str
) -> web.Response:
    """A live call that was refused or outlived its deadline: a failure of the run (never
    not_evaluated), answered as a miss, or, once the answer had begun, by cutting it off."""
    miss = Miss(f"{what}: {exc}", MissKind.ENDPOINT, session.name)
    session.record_miss(miss, not_evaluated=False)
    return cut_off(request) if exc.started else miss_response(provider, miss.message)
