"""The replay proxy: an aiohttp server on loopback serving many sessions, one per test.

Each session is reached under its own URL prefix (`/r/<id>/openai/v1`, `/r/<id>/anthropic`,
`/r/<id>/otlp`), so one engine serves a whole test session and a test costs two control lines, not a
process start. The engine runs its event loop in a thread of its own; `Engine` is the thread-safe face.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import secrets as pysecrets
import socket
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from aiohttp import web

from .. import last_miss, listeners
from ..errors import AttestError
from ..normalize import parse_body, request_content
from ..normalize.rules import parse_ignore
from ..normalize.served import Sent, key_as_sent, restore, restore_bytes
from ..provider_env import placeholder_credentials, proxy_env
from ..providers import PROVIDERS, error_headers, model_of, route
from ..secrets import Secrets, environment_secrets
from ..tools.replay import ToolReplay
from .background import BackgroundServer
from .channel import Channel, ChannelContext
from .diagnose import MISS_HEADERS, NO_SESSION, Miss, miss_body
from .fastpath import FastConnections
from .google_token import CREDENTIALS_VAR, CredentialFiles, configured, token_answer
from .google_token import ROUTE as GOOGLE_TOKEN_ROUTE
from .live import ForwardRefused, LiveForwarder, cut_off
from .session import MATCHES, MODES, Mode, Session
from .store import FixtureStore, Recording

# The SDKs refuse to build a client without a key; a replay needs none, so sessions hand the agent a
# placeholder that can never match the engine's own key and so is never forwarded.
PLACEHOLDER_KEY = "attest-replay-no-key"
MAX_REQUEST_BYTES = 64 * 1024 * 1024
KEY_CACHE_CALLS = 512  # distinct calls a fixture remembers the key of
KEY_CACHE_BODY = 256 * 1024  # bytes: a larger call's key is computed each time
SESSION_ID = re.compile(r"[0-9a-f]{16,64}")
REQUEST_TIMEOUT = 60.0  # seconds a connection has to send a request head before it is dropped
TOO_LARGE = (
    "replay miss: the request body is larger than the engine's 64 MiB limit, so it cannot match a recording"
)


def remember_key(keys: dict[Sent, str], sent: Sent, key: str) -> None:
    """Keep a call's key for the next session that gets the same call, within bounds: small bodies
    only (the cache holds the calls), the oldest forgotten first."""
    if len(sent.raw) > KEY_CACHE_BODY:
        return
    if len(keys) >= KEY_CACHE_CALLS:
        del keys[next(iter(keys))]
    keys[sent] = key


def miss_response(provider: str, message: str) -> web.Response:
    """A provider-shaped 400 that the official SDKs do not retry (400, and x-should-retry: false)."""
    headers = {**dict(MISS_HEADERS), **error_headers(provider, 400)}
    return web.json_response(miss_body(provider, message), status=400, headers=headers)


def no_session(provider: str) -> web.Response:
    """A session id that is not one of this engine's: ended, or never this run's (the id is the
    secret that keeps a session's routes for its own run), so 403, and nothing is forwarded."""
    response = miss_response(provider, NO_SESSION)
    response.set_status(403)
    response.headers.update(error_headers(provider, 403))
    return response


def sent_of(request: web.Request, provider: str, path: str, raw: bytes) -> Sent:
    headers = request.headers
    return Sent(
        provider,
        request.method,
        path,
        request.query_string,
        raw,
        headers.get("content-encoding"),
        headers.get("content-type"),
    )


async def serve_recording(request: web.Request, rec: Recording) -> web.StreamResponse:
    if rec.events is None:
        return web.Response(status=rec.status, body=rec.body, headers=rec.headers)
    response = web.StreamResponse(status=rec.status, headers=rec.headers)
    await response.prepare(request)
    try:
        for event in rec.events:  # one write per recorded event: no re-chunking, no buffering
            await response.write(event)
        await response.write_eof()
    except ConnectionResetError:  # the agent left mid-stream: its choice, not an engine error
        pass
    return response


class SessionTable(dict[str, Session]):
    """The open sessions by id. A runner may open a session and make its calls without waiting for
    the answer (see runner.ControlPipe): a call naming an id not open yet first reads the control
    lines already sent, so the open it was sent after is never behind it."""

    def __init__(self) -> None:
        super().__init__()
        self.read_pending: Callable[[], None] | None = None

    def get(self, sid: str, default: Session | None = None) -> Session | None:  # type: ignore[override]
        found = super().get(sid)
        if found is None and self.read_pending is not None:
            self.read_pending()
            found = super().get(sid)
        return default if found is None else found


class ReplayApp:
    """The request handlers and the session table (touched only from the engine's loop thread)."""

    def __init__(self, secrets: Secrets, env: Mapping[str, str]) -> None:
        self.secrets = secrets
        self.env = dict(env)  # the user's: a live tool call's upstream is read from it
        self.store = FixtureStore(secrets)
        self.live = LiveForwarder(env)
        self.in_ci = last_miss.in_ci(env)
        self.sessions = SessionTable()
        self.base_url = ""
        self._load_lock = threading.Lock()
        self.channels: list[Channel] = [
            ToolReplay(ChannelContext(self.sessions, secrets, self.env, self.live))
        ]
        # Vertex AI's SDK wants a Google token even in replay: with none of the user's, the engine's own.
        self.google = None if configured(self.env) else CredentialFiles()

    def build(self) -> web.Application:
        # The session id in every URL is the per-run secret; the gate checks the Host.
        app = web.Application(client_max_size=MAX_REQUEST_BYTES, middlewares=[listeners.loopback_only])
        for channel in self.channels:
            channel.add_routes(app)  # before the provider route, which would take `tool` as a provider
        app.router.add_route("POST", GOOGLE_TOKEN_ROUTE, self.google_token)
        app.router.add_route("*", "/r/{sid}/{provider}/{tail:.*}", self.handle)
        app.on_cleanup.append(lambda _app: self.live.close())
        if self.google is not None:
            google = self.google
            app.on_cleanup.append(lambda _app: asyncio.to_thread(google.close))
        return app

    # --- sessions ----------------------------------------------------------------------------------

    def open(
        self,
        fixtures: list[str | Path],
        mode: Mode,
        no_live: bool,
        match: str = "strict",
        ignore: Sequence[str] = (),
        sid: str | None = None,
    ) -> tuple[str, dict[str, str]]:
        """A new session; `ignore`: the run's ignore rules (a marker's, the policy's), on top of each
        fixture's own; `sid`: the id its runner chose (the per-run secret, as random as ours)."""
        if sid is not None and (not SESSION_ID.fullmatch(sid) or sid in self.sessions):
            raise AttestError("a session id is 16 to 64 lowercase hex digits, not one already open")
        if mode not in MODES:
            raise AttestError(f"unknown mode {mode!r} (strict, auto or off)")
        if match not in MATCHES:
            raise AttestError(f"unknown matching {match!r} (strict or lenient)")
        with self._load_lock:
            loaded = [self.store.get(p) for p in fixtures]
        sid = sid or pysecrets.token_hex(8)
        rules = parse_ignore(ignore, "the run's ignore rules")
        self.sessions[sid] = Session(loaded, mode, no_live, match, self.secrets, rules)
        return sid, self.session_env(sid)

    def session_env(self, sid: str) -> dict[str, str]:
        prefix = f"{self.base_url}/r/{sid}"
        env = {**proxy_env(prefix), **placeholder_credentials(self.env, PLACEHOLDER_KEY)}
        for channel in self.channels:
            env.update(channel.session_env(prefix, self.sessions[sid]))
        env.update(listeners.handed_out(self.base_url, self.env))
        if self.google is not None:
            env[CREDENTIALS_VAR] = self.google.write(sid, prefix)
        return env

    def close(self, sid: str) -> dict[str, Any]:
        session = self.sessions.pop(sid, None)
        if session is None:
            raise AttestError(f"no replay session {sid!r}")
        if self.google is not None:
            self.google.remove(sid)
        return session.summary()

    async def google_token(self, request: web.Request) -> web.Response:
        """A placeholder Google token for a session's own credentials file (see google_token)."""
        await request.read()
        if request.match_info["sid"] not in self.sessions:
            return no_session("vertex")
        return token_answer()

    # --- the proxy ---------------------------------------------------------------------------------

    async def handle(self, request: web.Request) -> web.StreamResponse:
        provider = request.match_info["provider"]
        session = self.sessions.get(request.match_info["sid"])
        if session is None or provider not in PROVIDERS:
            return no_session(provider)
        if provider == "otlp":
            session.counters.otlp_requests += 1
            await request.read()
            return web.Response(status=200, body=b"{}", content_type="application/json")
        try:
            raw = await request.read()
        except web.HTTPRequestEntityTooLarge:
            miss = Miss(TOO_LARGE, "params", session.name)
            session.record_miss(miss, not_evaluated=False)
            return miss_response(provider, miss.message)
        provider, path = route(provider, "/" + request.match_info["tail"])
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

    def hit(self, sid: str, sent: Sent) -> Recording | None:
        """The recording a strict session answers this model call with from its prebuilt bytes, taken
        and counted; None, with nothing changed, for anything the web layer must serve (a miss is
        diagnosed and counted there)."""
        session = self.serving(sid)
        if session is None:
            return None
        key = session.sent_keys.get(sent)
        if key is None:
            key = key_as_sent(sent, session.served, self.secrets)[0].key
            remember_key(session.sent_keys, sent, key)
        return self.take(session, key)

    def serving(self, sid: str) -> Session | None:
        """Session `sid` if a hit can be answered from prebuilt bytes (strict matching, not off)."""
        session = self.sessions.get(sid)
        return (
            session if session is not None and session.mode != "off" and session.match == "strict" else None
        )

    @staticmethod
    def take(session: Session, key: str) -> Recording | None:
        """The next recording for an already computed key (the lane's runner computes it), counted."""
        found = session.take_hit(key)
        if found is not None:
            session.counters.replayed += 1
        return found

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
    miss = Miss(f"{what}: {exc}", "endpoint", session.name)
    session.record_miss(miss, not_evaluated=False)
    return cut_off(request) if exc.started else miss_response(provider, miss.message)


class Engine:
    """The replay engine in a background thread. Use as a context manager, or start() and stop()."""

    def __init__(
        self,
        env: Mapping[str, str] | None = None,
        secrets: Secrets | None = None,
        request_timeout: float = REQUEST_TIMEOUT,
    ) -> None:
        self.env = dict(os.environ if env is None else env)
        self.app = ReplayApp(secrets if secrets is not None else environment_secrets(), self.env)
        self.server = BackgroundServer(
            self.app.build,
            "attest-engine",
            auto_decompress=False,
            request_timeout=request_timeout,
            front=lambda slow: FastConnections(self.app, slow),
        )

    @property
    def base_url(self) -> str:
        return self.app.base_url

    def start(self, host: str = "127.0.0.1", port: int = 0, sock: socket.socket | None = None) -> str:
        self.app.base_url = self.server.start(host, port, sock)
        listeners.started(self.base_url)
        return self.base_url

    def open_session(
        self,
        fixtures: list[str | Path],
        mode: Mode = "strict",
        no_live: bool = False,
        match: str = "strict",
        ignore: Sequence[str] = (),
    ) -> tuple[str, dict[str, str]]:
        return self.server.call(self.app.open, fixtures, mode, no_live, match, ignore)

    def close_session(self, sid: str) -> dict[str, Any]:
        return self.server.call(self.app.close, sid)

    def stop(self) -> None:
        self.server.stop()
        listeners.stopped(self.base_url)

    def __enter__(self) -> Engine:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def dumps_line(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, ensure_ascii=False)
