"""One replay a test runs (`with attest_replay("name"):`): its engine session or its recorder, the
provider variables pointed at it while it runs, and its summary kept for the test's report row.

What a replay changes in the process (the variables, the lane's routes and httpx's transports, the
bypass watch, the plain HTTP replay and the clients patched to ask it, the front's target, the URLs a
vcr test keeps) is entered on one `contextlib.ExitStack`, as vcrpy enters its patchers: `stop` closes
it, undoing every one in reverse, and one that fails to enter undoes those entered before it. Each
undo is registered before its change, so a change that fails half-way is undone too.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TypeVar

import pytest

from ..errors import AttestError
from ..fixtures.document import fixture_path
from ..providers.env import KEPT_BY_VCR
from ..replay import bypass, rerecord
from . import lane, plain_clients, plain_http, record
from .client import EngineProcess
from .stash import HANDLES, RECORDINGS, REPLAYS

if TYPE_CHECKING:  # the recording front imports aiohttp: loaded only when a run records
    from ..capture.proxy import RecordingApp
    from ..capture.rebase import Rebaser
    from .record_front import RecordingFront

T = TypeVar("T")


class Run(Protocol):
    """What a handle asks of the plugin that made it: the run's options, the engine, the recording
    front, and which replay is running (one at a time: they set process-wide variables)."""

    active: ReplayHandle | None
    front: RecordingFront | None
    front_env: dict[str, str]
    front_saved: dict[str, str | None]

    # the run's settings (`settings.PluginSettings`), read-only
    @property
    def record_mode(self) -> str | None: ...
    @property
    def record_refusal(self) -> str | None: ...
    @property
    def no_live(self) -> bool: ...
    @property
    def match(self) -> str: ...

    def engine(self, engine_path: str | None) -> EngineProcess: ...

    def ignore_rules(self, item: pytest.Item) -> list[str]: ...

    def relative(self, path: Path) -> str: ...


def or_fail(call: Callable[[], T]) -> T:
    """`call()`, or this test's failure on one line: a bad fixture or a dead engine is not a traceback
    through the engine client."""
    try:
        return call()
    except AttestError as exc:
        problem = str(exc)
    pytest.fail(problem, pytrace=False)


def _absent(path: Path) -> bool:
    """True when there is no file at `path` at all; any other problem reading it the engine explains."""
    try:
        path.lstat()
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return False


class ReplayHandle:
    """One running replay: the provider variables point at the engine until it stops."""

    def __init__(
        self,
        plugin: Run,
        item: pytest.Item,
        name: str,
        mode: str,
        fixtures_dir: str | Path | None,
        engine_path: str | None,
        faults: list[str] | None = None,
    ) -> None:
        self.plugin, self.item, self.name, self.mode = plugin, item, name, mode
        self.faults = faults or []  # the SPECs this replay's model requests meet (replay.faults)
        self.path = fixture_path(name, fixtures_dir)
        if not self.path.is_absolute():
            self.path = Path(item.config.rootpath) / self.path
        self.engine_path = engine_path
        self.engine: EngineProcess | None = None
        self.sid: str | None = None
        self.recorder: RecordingApp | Rebaser | None = None
        self._undo = ExitStack()  # what this replay changed in the process, undone by `stop`
        self._watch: bypass.Watch | None = None
        self.ignored_hosts: frozenset[str] = frozenset()  # plain HTTP to these goes out (see plain_http)
        self.takes_loopback = False  # plain HTTP to loopback is replayed and recorded too (a vcr test)
        # The SDKs keep the base URLs the test set and calls to provider hosts are served by host (a vcr
        # test, as pytest-recording leaves the client's URL alone; see `pytest_plugin.lane.serve_hosts`).
        self.keeps_urls = False
        self._urls: dict[str, str | None] = {}

    def start(self) -> ReplayHandle:
        if self.mode == "off":
            return self
        if self.plugin.active is not None:
            raise AttestError(
                f"attest replay: {self.plugin.active.name!r} is still running; only one replay runs at a time "
                "in a process (it sets process-wide environment variables)"
            )
        front = self.plugin.front
        if front is not None:
            self.recorder = or_fail(lambda: front.recorder(self.path, self.plugin.record_mode or "none"))
        if front is not None and self.recorder is not None:
            with ExitStack() as stack:
                stack.callback(setattr, front, "target", None)
                front.target = self.recorder  # the variables already point at the front
                self._plain_while_recording(stack, self.recorder)
                self._keep_urls(stack, record.prefix_of(self.plugin.front_env))
                self._undo = stack.pop_all()
        else:
            self._open_session()
        self.plugin.active = self
        self.item.stash.setdefault(HANDLES, []).append(self)
        return self

    def _plain_while_recording(self, stack: ExitStack, recorder: RecordingApp | Rebaser) -> None:
        """The test's own plain HTTP: the modes that keep a fixture serve what it recorded; the modes
        that call providers send and keep what it does not hold."""
        from ..capture.proxy import RecordingApp  # loaded already: the recording front runs on it

        kept = self.fixtures() if self.plugin.record_mode in record.KEEPING_MODES else []
        recording = (  # a rebase calls nothing, so it records nothing
            plain_http.Recorder(recorder.secrets, recorder.plain)
            if isinstance(recorder, RecordingApp)
            else None
        )
        stack.callback(plain_http.stop)
        plain_http.start(
            kept,
            False,
            self.ignored_hosts,
            loopback=self.takes_loopback,
            recorder=recording,
            test=self.item.nodeid,
        )
        stack.callback(plain_clients.unpatch_all)
        plain_clients.patch_loaded()
        stack.callback(lane.unroute_all)
        lane.patch_loaded()  # httpx asks plain_http there

    def _check_exists(self) -> None:
        """A test's fixture that is not there: how a pytest user records it (and why this run did not,
        when CI refused the record mode), said before the engine is asked."""
        missing = next((p for p in self.fixtures() if _absent(p)), None)
        if missing is None:
            return
        refusal = f"\n{self.plugin.record_refusal}" if self.plugin.record_refusal else ""
        line = rerecord.missing_for_test(missing, self.item.nodeid)
        raise AttestError(line + refusal)

    def _open_session(self) -> None:
        or_fail(self._check_exists)
        # The session lives on this engine: if it dies meanwhile, closing says so (a new one would not know it).
        self.engine = engine = self.plugin.engine(self.engine_path)
        plugin = self.plugin
        self.sid, env = or_fail(
            lambda: engine.open_session(
                self.fixtures(),
                self.mode,
                plugin.no_live,
                plugin.match,
                plugin.ignore_rules(self.item),
                self.item.nodeid,
                self.faults,
            )
        )
        pointed = {k: v for k, v in env.items() if not (self.keeps_urls and k in KEPT_BY_VCR)}
        blocks = self.mode == "strict" or plugin.no_live
        with ExitStack() as stack:
            stack.callback(record.restore, record.point_at(pointed))  # tool servers' variables too
            stack.callback(lane.unroute_all)
            if not engine.lane.closed and lane.enabled():  # this process's own calls skip HTTP
                lane.route(engine.url, engine.lane)
            lane.patch_loaded()  # a client built before the block is caught going around it
            stack.callback(bypass.stop)
            self._watch = bypass.start(self.name, blocks=blocks)
            stack.callback(plain_http.stop)
            plain_http.start(
                self.fixtures(),
                blocks,
                self.ignored_hosts,
                loopback=self.takes_loopback,
                test=self.item.nodeid,
            )
            stack.callback(plain_clients.unpatch_all)
            plain_clients.patch_loaded()
            if plugin.front is not None:  # module-level clients reach the session through the front
                stack.callback(setattr, plugin.front, "target", None)
                plugin.front.target = record.prefix_of(env)
            self._keep_urls(stack, record.prefix_of(env))
            self._undo = stack.pop_all()

    def _keep_urls(self, stack: ExitStack, prefix: str) -> None:
        """For a handle that keeps URLs: the user's own base-URL variables while the test runs (a front
        holds them for the run otherwise), and provider hosts served from `prefix`."""
        if not self.keeps_urls:
            return
        stack.callback(self._release_urls)
        if self.plugin.front is not None:
            self._urls = record.swap_urls(self.plugin.front_saved)
        lane.serve_hosts(prefix)

    def _release_urls(self) -> None:
        lane.serve_hosts(None)
        record.restore(self._urls)
        self._urls = {}

    def fixtures(self) -> list[Path]:
        """The fixtures this replay serves."""
        return [self.path]

    def stop(self) -> None:
        self._undo.close()  # every change start made, in reverse
        if self.recorder is not None:
            self._stop_recording(self.recorder)
            return
        if self.sid is None:
            return
        sid, self.sid = self.sid, None
        self.plugin.active = None
        engine = self.engine
        assert engine is not None
        watch, self._watch = self._watch, None
        summary = or_fail(lambda: engine.close_session(sid))
        if watch is not None:
            watch.add_to(summary)
        summary["fixture"] = self.plugin.relative(self.path)
        self.item.stash.setdefault(REPLAYS, []).append(summary)

    def _stop_recording(self, recorder: RecordingApp | Rebaser) -> None:
        self.recorder = None
        if self.plugin.front is not None:
            self.plugin.front.settle()
        self.plugin.active = None
        from .record_front import summary_of

        summary = summary_of(recorder, self.mode)
        summary["fixture"] = self.plugin.relative(self.path)
        self.item.stash.setdefault(REPLAYS, []).append(summary)
        self.item.stash.setdefault(RECORDINGS, []).append((self, recorder))

    def __enter__(self) -> ReplayHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
