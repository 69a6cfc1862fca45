"""Loaded fixtures: recordings pre-encoded for serving, indexed by request key.

A fixture is parsed, validated and scanned once per engine (cached by path, size, mtime and inode), so a
suite of hundreds of tests sharing a fixture pays for it once. Sessions keep only their cursors.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from http import HTTPStatus
from pathlib import Path

from ..credentials.scan import Secrets
from ..fixtures import document as fx
from ..normalize import body_bytes, describe_components, eventstream, key_of, upload_parts
from ..normalize.headers import TRANSPORT
from ..normalize.rules import Rule, parse_ignore
from ..normalize.served import Sent, Served
from ..providers import model_of
from ..tools.declare import check_declared
from ..tools.match import ToolRecording, load_recording
from .loaded import Stamp, stamp


@dataclass(frozen=True)
class Recording:
    fixture: str
    provider: str
    method: str
    path: str
    key: str
    hashes: dict[str, str]
    model: str | None
    status: int
    headers: tuple[tuple[str, str], ...]
    body: bytes  # the whole body; for SSE also kept as events
    events: tuple[bytes, ...] | None = None
    model_in_path: bool = False  # the model is named only in the path (Gemini, Bedrock)
    parts: tuple[dict, ...] | None = None  # an upload's normalized parts: a miss names the one that changed
    # The whole HTTP/1.1 answer, built once at load: status line, headers, body (SSE: one chunk per
    # event). None when a header cannot be sent as is; aiohttp then serves (and refuses) it as before.
    wire: bytes | None = field(default=None, repr=False, compare=False)
    # The stored request (provider, method, path, query, body), decomposed only when a miss names paths.
    request: tuple[str, str, str, str, dict] | None = field(default=None, repr=False, compare=False)

    @property
    def endpoint(self) -> str:
        return f"{self.method} {self.path}"

    def same_endpoint(self, endpoint: str, model: str | None) -> bool:
        """`endpoint` is this recording's, or is it with another model in its path (Gemini and Bedrock
        name the model only there): a changed model, not a call to another API."""
        if endpoint == self.endpoint:
            return True
        own = self.model if self.model_in_path else None
        return bool(model and own and endpoint == self.endpoint.replace(own, model))


@dataclass(frozen=True)
class LoadedFixture:
    name: str
    path: Path
    recordings: tuple[Recording, ...]
    by_key: dict[str, tuple[int, ...]] = field(repr=False)
    source: dict = field(repr=False, default_factory=dict)
    tools: dict = field(repr=False, default_factory=dict)  # the declared tool servers, by name
    tool_recordings: tuple[ToolRecording, ...] = ()
    served: dict[str, str] = field(repr=False, default_factory=dict)  # served value -> placeholder
    rules: tuple[Rule, ...] = ()  # the fixture's own ignore rules (`match.ignore`)
    # The key of each model call already seen by a session serving this fixture alone, by the call as
    # sent: the key depends only on the call, this fixture's served values and the engine's secrets,
    # so a suite whose tests send the same call computes its key once (see ReplayApp.hit).
    keys: dict[Sent, str] = field(repr=False, default_factory=dict, compare=False)
    # This load's name for a runner that keeps its hit table (replay.hits): another load, another token.
    token: str = field(default_factory=lambda: os.urandom(8).hex(), compare=False)


def _served_body(body: dict, served: Served) -> tuple[bytes, tuple[bytes, ...] | None]:
    """The bytes to serve, placeholders replaced by their served values; for a stream also each event
    (an event-stream frame encoded again, its CRCs those of the served text)."""
    if "sse" in body:
        events = tuple(served.serve(e).encode("utf-8") for e in body["sse"])
        return b"".join(events), events
    if "eventstream" in body:
        frames = tuple(
            eventstream.encode_frame(eventstream.map_texts(e, served.serve)) for e in body["eventstream"]
        )
        return b"".join(frames), frames
    if "base64" in body:
        return body_bytes(body), None
    return served.serve(body_bytes(body).decode("utf-8")).encode("utf-8"), None


def wire_bytes(
    status: int, headers: tuple[tuple[str, str], ...], body: bytes, events: tuple[bytes, ...] | None
) -> bytes | None:
    """The answer as sent on the socket, so serving a hit is one write of bytes built at load."""
    if any(c in text for h in headers for text in h for c in "\r\n") or not 100 <= status <= 999:
        return None
    try:
        reason = HTTPStatus(status).phrase
    except ValueError:
        reason = ""
    lines = [f"HTTP/1.1 {status} {reason}", *(f"{k}: {v}" for k, v in headers)]
    if events is None:
        lines.append(f"Content-Length: {len(body)}")
        return ("\r\n".join(lines) + "\r\n\r\n").encode("utf-8") + body
    # Each recorded event is its own chunk (no re-chunking); an empty one would end the stream early.
    lines.append("Transfer-Encoding: chunked")
    chunks = [b"%x\r\n%s\r\n" % (len(e), e) for e in events if e]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("utf-8") + b"".join(chunks) + b"0\r\n\r\n"


def _learn(items: list[dict]) -> Served:
    """Each placeholder's served value, its shape fixed where a response first shows it."""
    served = Served()
    for item in items:
        body = item["response"]["body"]
        for text in _texts(body):
            served.learn(text, item["provider"])
    return served


def _texts(body: dict) -> list[str]:
    if "sse" in body:
        return body["sse"]
    if "eventstream" in body:
        return [text for event in body["eventstream"] for text in eventstream.texts(event)]
    return [body_bytes(body).decode("utf-8", "replace")]


def _upload_parts(item: dict, secrets: Secrets) -> tuple[dict, ...] | None:
    """An upload's parts normalized as a live request's are (only uploads pay for this at load)."""
    if "multipart" not in item["request"]:
        return None
    where = (item["provider"], item["method"], item["path"], item.get("query", ""), item["request"])
    return upload_parts(describe_components(*where, secrets)["params"])


def _recording(name: str, item: dict, served: Served, secrets: Secrets) -> Recording:
    request_body = item["request"]
    response = item["response"]
    body, events = _served_body(response["body"], served)
    json_body = request_body.get("json")
    model = model_of(item["path"], json_body)
    in_body = isinstance(json_body, dict) and isinstance(json_body.get("model"), str)
    headers = tuple(
        (k, served.serve(v))
        for k, v in (response.get("headers") or {}).items()
        if k.lower() not in TRANSPORT  # the engine frames the body itself
    )
    status = response["status"]
    return Recording(
        fixture=name,
        provider=item["provider"],
        method=item["method"].upper(),
        path=item["path"],
        key=key_of(item["method"].upper(), item["path"], item["hashes"]),
        hashes=item["hashes"],
        model=model if isinstance(model, str) else None,
        model_in_path=model is not None and not in_body,
        status=status,
        headers=headers,
        body=body,
        events=events,
        parts=_upload_parts(item, secrets),
        wire=wire_bytes(status, headers, body, events),
        request=(item["provider"], item["method"], item["path"], item.get("query", ""), request_body),
    )


def index_recordings(recordings: tuple[Recording, ...] | list[Recording]) -> dict[str, tuple[int, ...]]:
    by_key: dict[str, list[int]] = {}
    for position, rec in enumerate(recordings):
        by_key.setdefault(rec.key, []).append(position)
    return {k: tuple(v) for k, v in by_key.items()}


def load(path: Path, secrets: Secrets) -> LoadedFixture:
    doc = fx.read_for_replay(path, secrets)
    check_declared(doc.get("tools", {}), path)
    name = doc["name"]
    items = fx.model_interactions(doc)
    served = _learn(items)
    recordings = tuple(_recording(name, item, served, secrets) for item in items)
    tools = tuple(load_recording(name, item, secrets) for item in fx.tool_interactions(doc))
    return LoadedFixture(
        name,
        path,
        recordings,
        index_recordings(recordings),
        doc.get("source", {}),
        doc.get("tools", {}),
        tools,
        served.back,
        parse_ignore(doc.get("match", {}).get("ignore", []), str(path)),
    )


class FixtureStore:
    """Caches loaded fixtures by path and stamp (`loaded.stamp`); a rewritten fixture is loaded again.
    `on_load`: told of each fixture loaded, with its stamp."""

    def __init__(self, secrets: Secrets) -> None:
        self.secrets = secrets
        self._cache: dict[Path, tuple[Stamp, LoadedFixture]] = {}
        self.on_load: Callable[[Stamp, LoadedFixture], None] | None = None

    def holds(self, path: Path) -> bool:
        """Whether `path` (absolute) is loaded as it is on disk now."""
        cached = self._cache.get(path)
        try:
            return cached is not None and cached[0] == stamp(os.stat(path))
        except OSError:
            return False

    def get(self, path: str | Path) -> LoadedFixture:
        path = Path(os.path.abspath(path))  # not resolve(): a symlink loop is the reader's one-line error
        try:
            st = os.stat(path)
        except OSError:  # missing, a symlink loop, a name too long: read_fixture says which, on one line
            return load(path, self.secrets)
        now = stamp(st)
        cached = self._cache.get(path)
        if cached and cached[0] == now:
            return cached[1]
        loaded = load(path, self.secrets)
        self._cache[path] = (now, loaded)
        if self.on_load is not None:
            self.on_load(now, loaded)
        return loaded
