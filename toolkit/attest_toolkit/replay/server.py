"""The replay proxy: a server on loopback serving many sessions, one per test.

Each session is reached under its own URL prefix (`/r/<id>/openai/v1`, `/r/<id>/anthropic`,
`/r/<id>/otlp`), so one engine serves a whole test session and a test costs two control lines, not a
process start. The engine runs its event loop in a thread of its own; `Engine` is the thread-safe face.

The listener is the fast path's (`replay.fastpath`), which answers hits itself. aiohttp, and the
application behind it (`replay.webapp`), are imported when a request first needs them (a miss, a live
call, the tool channel, OTLP): the engine is ready without them, and a replay that only hits never
loads them.
"""

from __future__ import annotations

import json
import os
import re
import socket
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..credentials.scan import Secrets, environment_secrets
from ..errors import AttestError
from ..normalize.rules import parse_ignore
from ..normalize.served import Sent, key_as_sent, remember_key
from ..providers import GOOGLE_TOKEN
from ..providers.env import PLACEHOLDER_KEY, check_upstreams, placeholder_credentials, proxy_env
from ..proxy import listeners
from ..proxy.background import BackgroundServer
from ..proxy.ca_store import aiohttp_imported
from ..proxy.deadlines import Deadlines
from ..tools.declare import replay_env
from . import hits
from .ahead import Aheads
from .fastpath import FastConnections
from .faults import Fault, parse_faults
from .google_token import CREDENTIALS_VAR, CredentialFiles, configured
from .index import FixtureStore, LoadedFixture, Recording
from .loaded import Telling
from .modes import MATCHES, MODES, Match, Mode, in_ci, spelled
from .read_ahead import ReadAhead
from .session import Session, tool_servers

if TYPE_CHECKING:
    from aiohttp import web

    from .channel import ChannelFactory

REQUEST_TIMEOUT = 60.0  # seconds a connection has to send a request head before it is dropped
SESSION_ID = re.compile(r"[0-9a-f]{16,64}")


class SessionTable(dict[str, Session]):
    """The open sessions by id. A runner may open a session and make its calls without waiting for
    the answer (see runner.ControlPipe): a call naming an id not open yet first reads the control
    lines already sent, so the open it was sent after is never behind it; then, if the runner made
    the id from a template (engine.ahead), the call opens it."""

    def __init__(self) -> None:
        super().__init__()
        self.read_pending: Callable[[], None] | None = None
        self.open_ahead: Callable[[str], bool] | None = None
        # Reads what the runner took of the sessions it holds (replay.lane) before one is served here.
        self.settle: Callable[[], None] | None = None

    def get(self, sid: str, default: Session | None = None) -> Session | None:  # type: ignore[override]
        found = super().get(sid)
        if found is None and self.read_pending is not None:
            self.read_pending()
            found = super().get(sid)
        if found is None and self.open_ahead is not None and self.open_ahead(sid):
            found = super().get(sid)
        if found is not None and found.tell is not None and self.settle is not None:
            self.settle()
        return default if found is None else found


def default_channels() -> list[ChannelFactory]:
    """The channels beside the model calls an engine serves unless it is handed others: the tool
    channel's serving half. Imported when the application is built (they import aiohttp)."""
    from .tool_routes import ToolReplay

    return [ToolReplay]


def _wants_google_token(fixture: LoadedFixture) -> bool:
    """Whether `fixture` holds a call whose SDK wants a Google token (Vertex AI's): only sessions of
    such fixtures get a credentials file (a file per session, named for it, would cost every other
    session a write, and the runners their opens without waiting)."""
    return any(r.provider in GOOGLE_TOKEN for r in fixture.recordings)


class ReplayApp:
    """The session table (touched only from the engine's loop thread) and the hits the fast path serves;
    `channels`: the channels beside the model calls, named when the application is built."""

    def __init__(
        self,
        secrets: Secrets,
        env: Mapping[str, str],
        channels: Callable[[], Sequence[ChannelFactory]] = default_channels,
    ) -> None:
        self.secrets = secrets
        self.channels = channels
        self.env = dict(env)  # the user's: a live tool call's upstream is read from it
        self.store = FixtureStore(secrets)
        self.deadlines = Deadlines.of(self.env)  # a bad one is a usage error now, before any call
        check_upstreams(self.env)  # likewise a live call's upstream, read only when a call goes live
        self.in_ci = in_ci(env)
        self.sessions = SessionTable()
        self.sessions.open_ahead = self._opened_by_call
        self.aheads = Aheads()
        self.rewritten: set[str] = set()  # sessions opened from a template that hand out other variables
        self.base_url = ""
        self._load_lock = threading.Lock()
        self.read_ahead = ReadAhead(self.store, self._load_lock)
        # Vertex AI's SDK wants a Google token even in replay: with none of the user's, the engine's own.
        self.google = None if configured(self.env) else CredentialFiles()
        self.telling = Telling()  # the plain fixtures loaded, for the runner (replay.loaded)
        self.store.on_load = lambda now, fixture: self.telling.loaded(now, self._plain(fixture))

    def build(self) -> web.Application:
        """The web application behind the fast path, built when a request first needs it."""
        with aiohttp_imported():
            from .webapp import build_app

            channels = self.channels()
        return build_app(self.sessions, self.secrets, self.env, self.in_ci, channels, self.google)

    # --- sessions ----------------------------------------------------------------------------------

    def open(
        self,
        fixtures: list[str | Path],
        mode: Mode,
        no_live: bool,
        match: str = "strict",
        ignore: Sequence[str] = (),
        sid: str | None = None,
        test: str | None = None,
        faults: Sequence[str] = (),
    ) -> tuple[str, dict[str, str]]:
        """A new session; `ignore`: the run's ignore rules (a marker's, the policy's), on top of each
        fixture's own; `sid`: the id its runner chose (the per-run secret, as random as ours); `test`:
        the pytest node id replaying, which a miss names in its re-record hint; `faults`: the SPECs
        its model requests meet (replay.faults)."""
        if sid is not None and (not SESSION_ID.fullmatch(sid) or sid in self.sessions):
            raise AttestError("a session id is 16 to 64 lowercase hex digits, not one already open")
        if mode not in MODES:
            raise AttestError(f"unknown mode {mode!r} ({spelled(Mode)})")
        if match not in MATCHES:
            raise AttestError(f"unknown matching {match!r} ({spelled(Match)})")
        with self._load_lock:
            loaded = [self.store.get(p) for p in fixtures]
        self.read_ahead.opened_now(f.path for f in loaded)
        sid = sid or os.urandom(8).hex()  # what secrets.token_hex(8) is, without importing that module
        rules = parse_ignore(ignore, "the run's ignore rules")
        plan: tuple[Fault, ...] = parse_faults(faults)
        self.sessions[sid] = Session(loaded, mode, no_live, match, self.secrets, rules, test, plan)
        return sid, self.session_env(sid)

    def session_env(self, sid: str) -> dict[str, str]:
        servers, token = self._own_variables(self.sessions[sid].fixtures)
        env = self.plain_env(sid, servers)
        if token and self.google is not None:
            env[CREDENTIALS_VAR] = self.google.write(sid, f"{self.base_url}/r/{sid}")
        return env

    def _own_variables(self, fixtures: Sequence[LoadedFixture]) -> tuple[dict[str, Any], bool]:
        """What sets the variables of a session of `fixtures` apart from a plain session's: the tool
        servers they declare, and whether it gets a Google token file."""
        token = self.google is not None and any(_wants_google_token(f) for f in fixtures)
        return tool_servers(fixtures), token

    def plain_env(self, sid: str, servers: Mapping[str, Mapping[str, Any]] | None = None) -> dict[str, str]:
        """Session `sid`'s variables but for a Google token's; with no tool servers, those of a session
        of plain fixtures (`_plain`)."""
        prefix = f"{self.base_url}/r/{sid}"
        env = {**proxy_env(prefix), **placeholder_credentials(self.env, PLACEHOLDER_KEY)}
        env.update(replay_env(prefix, servers or {}))
        env.update(listeners.handed_out(self.base_url, self.env))
        return env

    def _plain(self, fixture: LoadedFixture) -> bool:
        """Whether a session of `fixture` gets a plain session's variables (replay.loaded)."""
        return self._own_variables([fixture]) == ({}, False)

    def open_ahead(self, sid: str) -> bool:
        """Open session `sid` from its template (engine.ahead); False when it is not a template's."""
        fits = self.aheads.open(sid, self.open)
        if fits is False:
            self.rewritten.add(sid)
        elif fits is not None and fits.teller is not None and self.serving(sid) is not None:
            self.sessions[sid].tell = fits.teller(sid)  # its runner holds the template's hit table
        return fits is not None

    def _opened_by_call(self, sid: str) -> bool:
        try:
            return self.open_ahead(sid)
        except Exception:  # the call gets the unknown session's answer; the close reports why
            return False

    def hand(self, sid: str, have: Any, tell: Callable[[int], None]) -> dict[str, Any] | None:
        """Session `sid`'s hit table for the runner that will answer its hits (replay.hits), which
        `tell` tells of each recording taken here; None when its hits are served here alone."""
        session = self.serving(sid)
        if session is None:
            return None
        session.tell = tell
        token = session.fixtures[0].token if len(session.fixtures) == 1 else None
        return hits.handed(session.recordings, session.served, token, have)

    def close(self, sid: str, answered: int | None = None) -> dict[str, Any]:
        """Session `sid`'s summary; `answered`: how many of its calls its runner answered from the
        hit table, every one of which must have been counted here."""
        if sid not in self.sessions:
            self.open_ahead(sid)  # a test that made no call: its session is opened to be closed
        if self.sessions.settle is not None:
            self.sessions.settle()
        session = self.sessions.pop(sid, None)
        if session is None:
            raise AttestError(f"no replay session {sid!r}")
        session.faults.release()  # a request held by a `timeout` fault never keeps the close waiting
        if self.google is not None:
            self.google.remove(sid)
        if answered is not None and answered != session.noted:
            raise AttestError(
                f"the replay engine counted {session.noted} of the {answered} calls this test's "
                "process answered from its recordings"
            )
        return session.summary()

    def release_faults(self) -> None:
        for session in self.sessions.values():
            session.faults.release()

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
        found = session.take_hit(key)
        if found is not None:
            session.counters.replayed += 1
        return found

    def serving(self, sid: str) -> Session | None:
        """Session `sid` if a hit can be answered from prebuilt bytes (strict matching, not off, no
        faults: a faulted session's every call goes to the web layer, where its faults are injected
        and its requests counted, so a lane's client meets them on a real socket)."""
        session = self.sessions.get(sid)
        if session is None or session.mode == "off" or session.match != "strict" or session.faults.plan:
            return None
        return session


class Engine:
    """The replay engine in a background thread. Use as a context manager, or start() and stop().
    `channels`: what serves the channels beside the model calls (see `replay.channel`), the tool
    channel unless the caller hands others."""

    def __init__(
        self,
        env: Mapping[str, str] | None = None,
        secrets: Secrets | None = None,
        request_timeout: float = REQUEST_TIMEOUT,
        channels: Callable[[], Sequence[ChannelFactory]] = default_channels,
    ) -> None:
        self.env = dict(os.environ if env is None else env)
        self.app = ReplayApp(secrets if secrets is not None else environment_secrets(), self.env, channels)
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
        mode: Mode = Mode.STRICT,
        no_live: bool = False,
        match: str = "strict",
        ignore: Sequence[str] = (),
        faults: Sequence[str] = (),
    ) -> tuple[str, dict[str, str]]:
        return self.server.call(self.app.open, fixtures, mode, no_live, match, ignore, None, None, faults)

    def close_session(self, sid: str) -> dict[str, Any]:
        return self.server.call(self.app.close, sid)

    def stop(self) -> None:
        if self.server.loop.is_running():  # a session never closed must not hold its timeouts either
            self.server.call(self.app.release_faults)
        self.server.stop()
        listeners.stopped(self.base_url)

    def __enter__(self) -> Engine:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def dumps_line(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, ensure_ascii=False)
