"""Plain HTTP a test sends from its own process, to hosts that are not model calls attest replays.

A library under test may fetch an image URL to sniff its type, call a webhook, or reach a provider
attest does not replay: vcrpy recorded those too. Such interactions are kept in a fixture's `http`
channel (`interaction`: written by the importer, and by `pytest --attest-record`), matched by method
and URL (scheme, host, port, path and the query without credential parameters, as vcrpy's default
matching), and served in order, each once. While a replay block runs, the test process's HTTP
clients (httpx in `pytest_plugin.lane`; requests/urllib3, aiohttp and urllib.request in `plain_clients`) ask
`answer` first:

- recorded: the recording is the response, and nothing leaves the process;
- not recorded, while recording: `Pending`: the client sends it, reads the whole answer and hands it
  back to be kept (redacted as the import redacts it) and served to the caller;
- not recorded, strict (or live calls off): the call is refused with a one-line miss naming method,
  host and path (never query values or headers), counted as the replay's miss, so the test fails;
- not recorded, auto: it goes out as it would without attest;
- never touched: attest's own listeners (the engine, a recording front) and its own threads' calls
  (a front forwarding to the provider), the hosts a vcr_config ignores, and loopback unless the replay
  takes it (a vcr-marked test without `ignore_localhost`, as vcrpy records localhost).

The fixture is read at the first such call, so a test that sends none pays nothing.
"""

from __future__ import annotations

import contextvars
import os
import sys
import threading
from collections import defaultdict
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ..credentials.scan import Secrets, environment_secrets
from ..fixtures import document as fx
from ..fixtures.http_calls import interaction, request_key
from ..guard.hosts import is_blocked_host
from ..normalize.body import body_bytes
from ..proxy import listeners
from ..replay import bypass
from ..replay.diagnose import MissKind
from ..replay.rerecord import pytest_hint

# What the client already undid (or the served copy no longer has): never served with the body it read.
UNSERVED_HEADERS = frozenset({"content-encoding", "content-length", "transfer-encoding", "connection"})
# Set while a recorded call is being sent: a client's own retry or redirect inside it is not another.
_SENDING: contextvars.ContextVar[bool] = contextvars.ContextVar("attest_plain_sending", default=False)


@dataclass(frozen=True)
class Answer:
    """A recorded response, as a client builds its response object from it."""

    status: int
    headers: list[tuple[str, str]]
    body: bytes


class Refused(ConnectionError):
    """A plain HTTP call with no recording, refused by a strict replay (a ConnectionError, so a client
    reports it as a connection it could not make)."""


def miss_message(method: str, url: str, test: str | None = None) -> str:
    """The one line a refused call fails its test with: method, host and path, nothing of the query."""
    parts = urlsplit(url)
    return (
        f"attest replay: plain HTTP {method.upper()} {parts.hostname}{parts.path or '/'} is not in the "
        f"fixture; strict replay refuses it (re-record with {pytest_hint(test)}, or allow it with "
        "--attest-replay=auto)"
    )


Recordings = dict[str, list[Answer]]
Received = tuple[int, list[tuple[str, str]], bytes]  # status, headers, the body as the client hands it over


@dataclass
class Recorder:
    """Where a recording block keeps the plain HTTP its test sends (`into`: the recording's list)."""

    secrets: Secrets
    into: list[dict[str, Any]]
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def keep(self, method: str, url: str, received: Received) -> Answer:
        """Keep one exchange, redacted as the import redacts it; the answer to serve its caller."""
        status, headers, body = received
        item = interaction(method, url, status, headers, body, self.secrets)
        if item is not None:
            with self._lock:
                self.into.append(item)
        return Answer(status, [(n, v) for n, v in headers if n.lower() not in UNSERVED_HEADERS], body)


@dataclass(frozen=True)
class Pending:
    """A call to record: the client sends it (`send` returns what came back, its body read whole) and
    serves the returned answer; a retry or redirect the client makes inside `send` is left alone."""

    recorder: Recorder
    method: str
    url: str

    def record(self, send: Callable[[], Received]) -> Answer:
        with _sending():
            received = send()
        return self.recorder.keep(self.method, self.url, received)

    async def record_async(self, send: Callable[[], Awaitable[Received]]) -> Answer:
        with _sending():
            received = await send()
        return self.recorder.keep(self.method, self.url, received)


@contextmanager
def _sending() -> Iterator[None]:
    token = _SENDING.set(True)
    try:
        yield
    finally:
        _SENDING.reset(token)


@dataclass
class Replay:
    """The plain HTTP recordings of one replay block's fixtures, read (with the `.env` secrets their
    keys redact) at the first call that needs them: a test that sends none reads nothing."""

    paths: list[Path]
    blocks: bool
    ignored: frozenset[str] = frozenset()  # hosts left alone (vcr_config's ignore_hosts)
    loopback: bool = False  # loopback calls are this replay's too (a vcr test without ignore_localhost)
    recorder: Recorder | None = None  # a recording block: what is not served is sent and kept
    test: str | None = None  # the pytest node id, for the miss's re-record hint
    _loaded: tuple[Secrets, Recordings] | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def loaded(self) -> bool:
        return self._loaded is not None

    def load(self) -> tuple[Secrets, Recordings]:
        with self._lock:
            if self._loaded is None:
                secrets = environment_secrets()
                self._loaded = secrets, self._read(secrets)
            return self._loaded

    def concerns(self, url: str) -> bool:
        """Whether a call to `url` is this replay's to answer: not attest's own (its listeners, its own
        threads), not a host left alone, not loopback unless the replay takes loopback."""
        host = (urlsplit(url).hostname or "").lower()
        if not host or host in self.ignored or listeners.own_thread():
            return False
        if listeners.is_loopback(host):
            return self.loopback and not listeners.ours(url, os.environ)
        return True

    def take(self, method: str, url: str) -> Answer | None:
        """The next recording for `method url`, consumed; None when none is left."""
        secrets, recordings = self.load()
        key = request_key(method, url, secrets)
        with self._lock:
            queue = recordings.get(key) if key is not None else None
            return queue.pop(0) if queue else None

    def _read(self, secrets: Secrets) -> Recordings:
        found: Recordings = defaultdict(list)
        for path in self.paths:
            if not path.exists():  # a vcr-marked test without a fixture: nothing recorded
                continue
            for item in fx.plain_interactions(fx.read_fixture(path, secrets)):
                response = item["response"]
                headers = list(response.get("headers", {}).items())
                found[f"{item['method']} {item['url']}"].append(
                    Answer(response["status"], headers, body_bytes(response["body"]))
                )
        return found


_active: Replay | None = None


def start(
    paths: list[Path],
    blocks: bool,
    ignored: frozenset[str] = frozenset(),
    *,
    loopback: bool = False,
    recorder: Recorder | None = None,
    test: str | None = None,
) -> None:
    """Answer the test process's plain HTTP from `paths` until `stop`; with a `recorder`, keep what
    they do not hold (a recording block)."""
    global _active
    _active = Replay(list(paths), blocks, frozenset(h.lower() for h in ignored), loopback, recorder, test)


def stop() -> None:
    global _active
    _active = None


Found = Answer | Refused | Pending | None


def answer(method: str, url: str) -> Found:
    """What a client sends `method url` as, while a replay runs: the recording, a call to record, a
    refusal (already counted as the replay's miss), or None: send it as usual."""
    replay = _active
    if replay is None or _SENDING.get() or not replay.concerns(url):
        return None
    found = replay.take(method, url)
    if found is not None:
        return found
    host = (urlsplit(url).hostname or "").lower()
    if is_blocked_host(host):  # a provider host: see `bypass`
        return None
    if replay.recorder is not None:
        return Pending(replay.recorder, method, url)
    if not replay.blocks:  # auto goes out
        return None
    message = miss_message(method, url, replay.test)
    bypass.note_miss(message, MissKind.PLAIN_HTTP)
    return Refused(message)


async def answer_async(method: str, url: str) -> Found:
    """`answer` for an async client: the fixture is read on a worker thread, never on the event loop
    (a blocking-call detector there would fail the test)."""
    replay = _active
    if replay is not None and not replay.loaded and replay.concerns(url):
        asyncio = sys.modules["asyncio"]  # an async client runs on it (under trio: read here)
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            replay.load()
        else:
            await loop.run_in_executor(None, replay.load)
    return answer(method, url)
