"""Plain HTTP a test sends from its own process, to hosts that are not model calls attest replays.

A library under test may fetch an image URL to sniff its type, call a webhook, or reach a provider
attest does not replay: vcrpy recorded those too. Such interactions are kept in a fixture's `http`
channel (`interaction`: written by the importer), matched by method and URL (scheme, host, port,
path and the query without credential parameters, as vcrpy's default matching), and served in
order, each once. While a replay block runs, the test process's HTTP clients (httpx in `lane_http`;
requests/urllib3 and aiohttp in `plain_clients`) ask `answer` first:

- recorded: the recording is the response, and nothing leaves the process;
- not recorded, strict (or live calls off): the call is refused with a one-line miss naming method,
  host and path (never query values or headers), counted as the replay's miss, so the test fails;
- not recorded, auto: it goes out as it would without attest;
- loopback (the engine, a test's own server) and the hosts a vcr_config ignores are never touched.

The fixture is read at the first such call, so a test that sends none pays nothing.
"""

from __future__ import annotations

import base64
import sys
import threading
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from . import bypass
from . import fixture as fx
from .guard.hosts import is_blocked_host
from .normalize.body import body_bytes, redact_encoded, redact_query
from .secrets import Secrets, environment_secrets

COMPONENT = "plain_http"
# Response headers worth serving again: what the body is, and where a redirect goes. Never cookies.
KEPT_HEADERS = ("content-type", "content-disposition", "location", "etag", "last-modified")
DEFAULT_PORTS = {"http": 80, "https": 443}
LOOPBACK = frozenset({"localhost", "127.0.0.1", "::1", "[::1]"})


@dataclass(frozen=True)
class Answer:
    """A recorded response, as a client builds its response object from it."""

    status: int
    headers: list[tuple[str, str]]
    body: bytes


class Refused(ConnectionError):
    """A plain HTTP call with no recording, refused by a strict replay (a ConnectionError, so a client
    reports it as a connection it could not make)."""


def request_key(method: str, url: str, secrets: Secrets) -> str | None:
    """`GET https://host/path?query`: what a recording is found by; None for a URL that is not
    http(s) to a named host. Credential parameters are left out of the query, secrets redacted."""
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    if parts.scheme not in DEFAULT_PORTS or not host:
        return None
    try:
        port = parts.port
    except ValueError:
        return None
    where = host if port in (None, DEFAULT_PORTS[parts.scheme]) else f"{host}:{port}"
    query = redact_query(parts.query, secrets)
    return f"{method.upper()} {parts.scheme}://{where}{parts.path or '/'}" + (f"?{query}" if query else "")


def interaction(
    method: str, url: str, status: int, headers: list[tuple[str, str]], body: bytes, secrets: Secrets
) -> dict[str, Any] | None:
    """The fixture's `http` item for one exchange (the body already decompressed): the response's
    bytes kept as they are (text, else base64), secrets redacted; None for a URL `request_key` refuses."""
    key = request_key(method, url, secrets)
    if key is None:
        return None
    kept = {n.lower(): secrets.redact(v) for n, v in reversed(headers) if n.lower() in KEPT_HEADERS}
    try:
        stored: dict[str, Any] = {"text": secrets.redact(body.decode("utf-8"))} if body else {}
    except UnicodeDecodeError:
        stored = redact_encoded({"base64": base64.b64encode(body).decode("ascii")}, secrets)
    method_, _, target = key.partition(" ")
    return {
        "method": method_,
        "url": target,
        "response": {"status": status, "headers": dict(sorted(kept.items())), "body": stored},
    }


def miss_message(method: str, url: str) -> str:
    """The one line a refused call fails its test with: method, host and path, nothing of the query."""
    parts = urlsplit(url)
    return (
        f"attest replay: plain HTTP {method.upper()} {parts.hostname}{parts.path or '/'} is not in the "
        "fixture; strict replay refuses it (record it with vcrpy and import, or allow it with --attest-replay=auto)"
    )


Recordings = dict[str, list[Answer]]


@dataclass
class Replay:
    """The plain HTTP recordings of one replay block's fixtures, read (with the `.env` secrets their
    keys redact) at the first call that needs them: a test that sends none reads nothing."""

    paths: list[Path]
    blocks: bool
    ignored: frozenset[str] = frozenset()  # hosts left alone (vcr_config's ignore_hosts)
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

    def concerns(self, host: str) -> bool:
        """Whether a call to `host` is this replay's to answer: not loopback, not a host left alone."""
        return (
            bool(host) and host not in LOOPBACK and not host.startswith("127.") and host not in self.ignored
        )

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


def start(paths: list[Path], blocks: bool, ignored: frozenset[str] = frozenset()) -> None:
    global _active
    _active = Replay(list(paths), blocks, frozenset(h.lower() for h in ignored))


def stop() -> None:
    global _active
    _active = None


def answer(method: str, url: str) -> Answer | Refused | None:
    """What a client sends `method url` as, while a replay runs: the recording, a refusal (already
    counted as the replay's miss), or None: send it as usual."""
    replay = _active
    if replay is None:
        return None
    host = (urlsplit(url).hostname or "").lower()
    if not replay.concerns(host):
        return None
    found = replay.take(method, url)
    if found is not None:
        return found
    if not replay.blocks or is_blocked_host(host):  # auto goes out; provider hosts: see `bypass`
        return None
    message = miss_message(method, url)
    bypass.note_miss(message, COMPONENT)
    return Refused(message)


async def answer_async(method: str, url: str) -> Answer | Refused | None:
    """`answer` for an async client: the fixture is read on a worker thread, never on the event loop
    (a blocking-call detector there would fail the test)."""
    replay = _active
    if replay is not None and not replay.loaded and replay.concerns((urlsplit(url).hostname or "").lower()):
        asyncio = sys.modules["asyncio"]  # an async client runs on it (under trio: read here)
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            replay.load()
        else:
            await loop.run_in_executor(None, replay.load)
    return answer(method, url)
