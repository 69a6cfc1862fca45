"""The replay proxy: an aiohttp server on loopback serving many sessions, one per test.

Each session is reached under its own URL prefix (`/r/<id>/openai/v1`, `/r/<id>/anthropic`,
`/r/<id>/otlp`), so one engine serves a whole test session and a test costs two control lines, not a
process start. The engine runs its event loop in a thread of its own; `Engine` is the thread-safe face.
"""

from __future__ import annotations

import json
import os
import secrets as pysecrets
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from aiohttp import web

from ..errors import AttestError
from ..normalize import parse_body, request_content
from ..normalize.served import Sent, key_as_sent
from ..provider_env import KEY_VARS, proxy_env
from ..secrets import Secrets, environment_secrets
from ..tools.replay import ToolReplay
from ..tools.replay import session_env as tool_env
from .background import BackgroundServer
from .diagnose import MISS_HEADERS, Miss, miss_body
from .fastpath import FastConnections
from .live import LiveForwarder
from .session import MATCHES, MODES, Mode, Session
from .store import FixtureStore, Recording

# The SDKs refuse to build a client without a key; a replay needs none, so sessions hand the agent a
# placeholder that can never match the engine's own key and so is never forwarded.
PLACEHOLDER_KEY = "attest-replay-no-key"
MAX_REQUEST_BYTES = 64 * 1024 * 1024
REQUEST_TIMEOUT = 60.0  # seconds a connection has to send a request head before it is dropped
TOO_LARGE = (
    "replay miss: the request body is larger than the engine's 64 MiB limit, so it cannot match a recording"
)


def miss_response(provider: str, message: str) -> web.Response:
    """A provider-shaped 400 that the official SDKs do not retry (400, and x-should-retry: false)."""
    return web.json_response(miss_body(provider, message), status=400, headers=dict(MISS_HEADERS))


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


class ReplayApp:
    """The request handlers and the session table (touched only from the engine's loop thread)."""

    def __init__(self, secrets: Secrets, env: Mapping[str, str]) -> None:
        self.secrets = secrets
        self.store = FixtureStore(secrets)
        self.live = LiveForwarder(env)
        self.sessions: dict[str, Session] = {}
        self.base_url = ""
        self._load_lock = threading.Lock()
        self.tool_routes = ToolReplay(self)

    def build(self) -> web.Application:
        app = web.Application(client_max_size=MAX_REQUEST_BYTES)
        self.tool_routes.add_routes(app)  # before the provider route, which would take `tool` as a provider
        app.router.add_route("*", "/r/{sid}/{provider}/{tail:.*}", self.handle)
        app.on_cleanup.append(lambda _app: self.live.close())
        return app

    # --- sessions ----------------------------------------------------------------------------------

    def open(
        self, fixtures: list[str | Path], mode: Mode, no_live: bool, match: str = "strict"
    ) -> tuple[str, dict[str, str]]:
        if mode not in MODES:
            raise AttestError(f"unknown mode {mode!r} (strict, auto or off)")
        if match not in MATCHES:
            raise AttestError(f"unknown matching {match!r} (strict or lenient)")
        with self._load_lock:
            loaded = [self.store.get(p) for p in fixtures]
        sid = pysecrets.token_hex(8)
        self.sessions[sid] = Session(loaded, mode, no_live, match)
        return sid, self.session_env(sid)

    def session_env(self, sid: str) -> dict[str, str]:
        prefix = f"{self.base_url}/r/{sid}"
        env = proxy_env(prefix)
        for provider, var in KEY_VARS.items():
            if not self.live.keys.get(provider):
                env[var] = PLACEHOLDER_KEY
        env.update(tool_env(prefix, self.sessions[sid]))
        return env

    def close(self, sid: str) -> dict[str, Any]:
        session = self.sessions.pop(sid, None)
        if session is None:
            raise AttestError(f"no replay session {sid!r}")
        return session.summary()

    # --- the proxy ---------------------------------------------------------------------------------

    async def handle(self, request: web.Request) -> web.StreamResponse:
        provider = request.match_info["provider"]
        session = self.sessions.get(request.match_info["sid"])
        if session is None or provider not in ("openai", "anthropic", "otlp"):
            return miss_response(provider, "attest replay: no such replay session (it has ended)")
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
        path = "/" + request.match_info["tail"]
        if session.mode == "off":
            return await self.go_live(request, session, provider, path, raw, None)
        rk, path = key_as_sent(sent_of(request, provider, path, raw), session.served, self.secrets)
        found = session.lookup(rk.key, rk.hashes, rk.model, f"{request.method} {path}", rk.parts)
        if isinstance(found, Recording):
            session.counters.replayed += 1
            return await serve_recording(request, found)
        return await self.miss(request, session, provider, path, raw, found, rk.model)

    def hit(self, sid: str, sent: Sent) -> Recording | None:
        """The recording a strict session answers this model call with from its prebuilt bytes, taken
        and counted; None, with nothing changed, for anything the web layer must serve (a miss is
        diagnosed and counted there)."""
        session = self.serving(sid)
        if session is None:
            return None
        rk, _ = key_as_sent(sent, session.served, self.secrets)
        return self.take(session, rk.key)

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
        if session.mode == "auto" and not session.no_live and self.live.authorized(provider, request.headers):
            return await self.go_live(request, session, provider, path, raw, model)
        session.record_miss(miss, not_evaluated=session.mode == "auto")
        return miss_response(provider, miss.message)

    async def go_live(
        self, request: web.Request, session: Session, provider: str, path: str, raw: bytes, model: str | None
    ) -> web.StreamResponse:
        if not self.live.authorized(provider, request.headers) or session.no_live:
            return miss_response(provider, "attest replay: live calls are off for this run")
        if model is None:
            content = request_content(raw, request.headers.get("content-encoding"))
            model = (parse_body(content, request.headers.get("content-type")).get("json") or {}).get("model")
        try:
            response, body = await self.live.forward(request, provider, path, raw)
        except ConnectionError:  # the agent left mid-answer: the call was still made, and is counted
            session.record_live(None, model)
            return web.Response()  # its connection is closed, so aiohttp drops this quietly
        session.record_live(self.live.price(model, body, response.headers.get("content-type", "")), model)
        return response


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

    def start(self, host: str = "127.0.0.1", port: int = 0) -> str:
        self.app.base_url = self.server.start(host, port)
        return self.base_url

    def open_session(
        self, fixtures: list[str | Path], mode: Mode = "strict", no_live: bool = False, match: str = "strict"
    ) -> tuple[str, dict[str, str]]:
        return self.server.call(self.app.open, fixtures, mode, no_live, match)

    def close_session(self, sid: str) -> dict[str, Any]:
        return self.server.call(self.app.close, sid)

    def stop(self) -> None:
        self.server.stop()

    def __enter__(self) -> Engine:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def dumps_line(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, ensure_ascii=False)
