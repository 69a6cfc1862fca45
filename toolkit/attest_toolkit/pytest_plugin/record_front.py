"""The recording front of `pytest --attest-record`: one stable address for a whole pytest process.

The provider variables point here from pytest_configure on (see `pytest_plugin.record`). The front routes
each call to the `attest_replay` block that is running: a block that records has its own
`capture.proxy.RecordingApp` (the user's key and upstream, redaction, the atomic write, and for `new` the
partial refresh of `capture.only_misses`); a block that rebases has a `capture.rebase.Rebaser`; a block that replays
is forwarded to its session on the engine. A call made outside any block is answered with an error,
never sent upstream.
"""

from __future__ import annotations

import io
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from aiohttp import web

from ..capture.only_misses import ReplayFirst
from ..capture.proxy import RecordingApp, mark_started, offline_env
from ..capture.rebase import Rebaser, written
from ..capture.run import capture_secrets, conclude
from ..errors import AttestError
from ..fixtures.document import new_source
from ..progress import ProgressLine
from ..providers import COUNTED
from ..proxy import listeners
from ..proxy.background import BackgroundServer
from ..proxy.http import MAX_REQUEST_BYTES
from ..proxy.live import LiveForwarder
from ..replay.answers import miss_response

SETTLE_SECONDS = 60.0  # how long a block's end waits for its calls' recordings
OUTSIDE = (
    "attest record: a model call outside any attest_replay block; with --attest-record the provider "
    "variables point at attest for the whole run, so make the call inside `with attest_replay(NAME):`"
)


class RecordingFront:
    """The stable address the provider variables point at for a whole run, on loopback."""

    def __init__(self, env: Mapping[str, str]) -> None:
        self.env = dict(env)  # as the user set it: their key, their upstream or gateway
        self.secrets = capture_secrets(self.env)
        self.live = LiveForwarder(self.env)
        # The running block: a recorder (or a rebase, see `rebase`), or an engine session's URL.
        self.target: RecordingApp | Rebaser | str | None = None
        self._busy = 0  # calls being handled, answered or not
        self._idle = threading.Condition()
        self.gate = listeners.Gate()
        self.server = BackgroundServer(
            self._build, "attest-record", shutdown_timeout=5.0, auto_decompress=False
        )

    def _build(self) -> web.Application:
        app = web.Application(client_max_size=MAX_REQUEST_BYTES)
        app.router.add_route("*", "/{provider}/{tail:.*}", self.handle)
        app.on_response_prepare.append(mark_started)
        app.on_cleanup.append(lambda _app: self.live.close())
        return self.gate.app(app, MAX_REQUEST_BYTES)  # only this run's calls are recorded or forwarded

    def start(self) -> dict[str, str]:
        """Start; the variables that point a process's clients at the front."""
        base_url = self.gate.url(self.server.start())
        listeners.started(base_url)
        return offline_env(base_url, self.env)

    def stop(self) -> None:
        self.server.stop()
        listeners.stopped(self.server.base_url)

    async def handle(self, request: web.Request) -> web.StreamResponse:
        with self._idle:
            self._busy += 1
        try:
            return await self._route(request)
        finally:
            with self._idle:
                self._busy -= 1
                self._idle.notify_all()

    def settle(self, timeout: float = SETTLE_SECONDS) -> None:
        """Wait until every call is handled to its end. The agent has its whole answer before the proxy
        records it, so a block that ends right after its last call must wait for that recording."""
        with self._idle:
            self._idle.wait_for(lambda: self._busy == 0, timeout)

    async def _route(self, request: web.Request) -> web.StreamResponse:
        target, provider = self.target, request.match_info["provider"]
        if isinstance(target, (RecordingApp, Rebaser)):
            return await target.handle(request)
        if isinstance(target, str):  # a replaying block: its session on the engine answers
            url = f"{target}/{provider}/{request.match_info['tail']}"
            raw = await request.read()
            response, _ = await self.live.forward_to(request, url, request.path, raw, to_engine=True)
            return response
        await request.read()
        if provider in COUNTED:  # traces between tests are accepted and dropped, as replay does
            return web.json_response({})
        return miss_response(provider, OUTSIDE)

    def recorder(self, path: Path, mode: str) -> RecordingApp | Rebaser | None:
        """A recorder for a block writing `path`, or None when the block only replays (a rebase of a
        fixture that does not exist replays it, and misses)."""
        exists = path.exists()
        if mode == "none" or (mode == "once" and exists) or (mode == "rebase" and not exists):
            return None
        if mode == "rebase":
            return Rebaser(path, self.secrets)
        base = ReplayFirst(path, self.secrets, keep_unused=True) if mode == "new" and exists else None
        progress = ProgressLine(io.StringIO(), live=False)
        return RecordingApp(self.secrets, self.env, progress, base=base, live=self.live)


def summary_of(app: RecordingApp | Rebaser, mode: str) -> dict[str, Any]:
    """A recording block's counts, in the shape of a replay session's summary (see `replay.session`)."""
    if isinstance(app, Rebaser):
        return app.summary(mode)
    base = app.base
    return {
        "mode": mode,
        "replayed": base.replayed if base else 0,
        "live": app.cost.calls,
        "live_cost_usd": round(app.cost.usd, 6),
        "unpriced": app.cost.unpriced,
        "unused": 0,
        "misses": 0,
        "miss_list": [],
    }


def write(
    app: RecordingApp | Rebaser, name: str, path: Path, nodeid: str, passed: bool, error: str | None = None
) -> tuple[list[str], str | None]:
    """Write a block's fixture when its test passed: (the lines to show, the failure if writing failed).
    `error`: what the test failed with, if it did."""
    if isinstance(app, Rebaser):
        return written(app, passed, error)
    stream = app.progress.stream
    if not passed:
        return [f"attest record: {path}: not written, the test did not pass"], None
    source = new_source(["pytest", nodeid], exit_code=0, test=nodeid)
    problem = None
    try:
        conclude(app, source, name, path, 0, False)
    except AttestError as exc:  # the run did not record cleanly, or a credential was found
        problem = str(exc)
    lines = (
        [line for line in stream.getvalue().splitlines() if line] if isinstance(stream, io.StringIO) else []
    )
    lines = [line.replace("attest capture:", "attest record:", 1) for line in lines]
    return lines, problem
