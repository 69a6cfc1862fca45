"""The pytest helper: the `attest_replay` fixture, the egress guard switch, and report-v2.

    def test_inc_1042_replay(attest_replay):
        with attest_replay("inc-1042"):
            result = run_refund_agent("O-1042")  # construct model clients here, after the call

One engine process per test session (per xdist worker) serves every fixture; a test opens and closes
a session on it. A strict miss fails the test with the miss message whatever the agent raised and
whatever marker the test carries; an auto miss without a key is `not_evaluated: replay_miss`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import pytest

from . import bypass, lane_http
from . import pytest_record as record
from . import report as reports
from .engine.client import EngineProcess
from .engine.session import MATCHES, MODES, default_mode
from .errors import AttestError
from .fixture import DEFAULT_DIR, fixture_path
from .report import TOOL_COUNTS
from .runner_report import egress_facts
from .summary import run_end_lines

REPLAYS = pytest.StashKey[list[dict[str, Any]]]()
HANDLES = pytest.StashKey[list["ReplayHandle"]]()
RECORDINGS = pytest.StashKey[list[tuple["ReplayHandle", "RecordingApp"]]]()
RECORDED = "attest_recorded"  # a test's lines about the fixtures it wrote, shown at the end of the run
PROPERTY = "attest_replay"
T = TypeVar("T")

if TYPE_CHECKING:  # the recording front imports aiohttp: loaded only when a run records
    from .capture import RecordingApp
    from .record_front import RecordingFront


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() in ("1", "true", "yes", "on")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("attest", "attest replay")
    group.addoption(
        "--attest-replay",
        choices=MODES,
        default=None,
        help="Replay mode: strict, auto or off (default: ATTEST_REPLAY, else strict when CI is set, else auto).",
    )
    group.addoption(
        "--attest-strict",
        action="store_true",
        default=None,
        help="Fail (instead of skip) a test whose auto-mode miss could not go live. Also ATTEST_STRICT=1.",
    )
    group.addoption(
        "--attest-egress",
        choices=("block", "off"),
        default=None,
        help="block: connections to known provider hosts fail (EgressBlockedError). Also ATTEST_EGRESS=block.",
    )
    group.addoption(
        "--attest-match",
        choices=MATCHES,
        default=None,
        help="strict (default) or lenient: model calls by position, a changed request served and reported "
        "as drift (ctxmesh's semantics). Also ATTEST_MATCH.",
    )
    group.addoption("--attest-report", default=None, metavar="PATH", help="Write report-v2 JSON to PATH.")
    group.addoption(
        "--attest-record",
        choices=record.RECORD_MODES,
        default=None,
        help="Record from the tests, as pytest-recording: once (a fixture that does not exist), new (only "
        "the calls that miss), all (re-record), none (replay only). Also ATTEST_RECORD; with CI set, "
        "only this flag on the command line records. The provider variables point at attest from the "
        "start of the run, so module-level clients work.",
    )


def pytest_configure(config: pytest.Config) -> None:
    plugin = AttestPlugin(config)
    config.pluginmanager.register(plugin, "attest-plugin")
    config.stash[PLUGIN] = plugin
    plugin.install_guard()
    plugin.start_front()


def pytest_unconfigure(config: pytest.Config) -> None:
    plugin = config.stash.get(PLUGIN, None)
    if plugin is not None:
        plugin.shutdown()


def or_fail(call: Callable[[], T]) -> T:
    """`call()`, or this test's failure on one line: a bad fixture or a dead engine is not a traceback
    through the engine client."""
    try:
        return call()
    except AttestError as exc:
        problem = str(exc)
    pytest.fail(problem, pytrace=False)


class ReplayHandle:
    """One running replay: the provider variables point at the engine until it stops."""

    def __init__(
        self,
        plugin: AttestPlugin,
        item: pytest.Item,
        name: str,
        mode: str,
        fixtures_dir: str | Path | None,
        engine_path: str | None,
    ) -> None:
        self.plugin, self.item, self.name, self.mode = plugin, item, name, mode
        self.path = fixture_path(name, fixtures_dir)
        if not self.path.is_absolute():
            self.path = Path(item.config.rootpath) / self.path
        self.engine_path = engine_path
        self.engine: EngineProcess | None = None
        self.sid: str | None = None
        self.recorder: RecordingApp | None = None
        self._saved: dict[str, str | None] = {}

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
        if self.recorder is not None:
            front.target = self.recorder  # the variables already point at the front
        else:
            self._open_session()
        self.plugin.active = self
        self.item.stash.setdefault(HANDLES, []).append(self)
        return self

    def _open_session(self) -> None:
        # The session lives on this engine: if it dies meanwhile, closing says so (a new one would not know it).
        self.engine = engine = self.plugin.engine(self.engine_path)
        plugin = self.plugin
        self.sid, env = or_fail(
            lambda: engine.open_session([self.path], self.mode, plugin.no_live, plugin.match)
        )
        self._saved = record.point_at(env)  # tool servers' variables too
        if not engine.lane.closed and lane_http.enabled():  # this process's own calls skip HTTP
            lane_http.route(engine.url, engine.lane)
        lane_http.patch_loaded()  # a client built before the block is caught going around it
        bypass.start(self.name, blocks=self.mode == "strict" or plugin.no_live)
        if plugin.front is not None:  # module-level clients reach the session through the front
            from .record_front import engine_prefix

            plugin.front.target = engine_prefix(env)

    def stop(self) -> None:
        if self.plugin.front is not None:
            self.plugin.front.target = None
        if self.recorder is not None:
            self._stop_recording(self.recorder)
            return
        if self.sid is None:
            return
        sid, self.sid = self.sid, None
        record.restore(self._saved)
        self.plugin.active = None
        engine = self.engine
        assert engine is not None
        watch = bypass.stop()
        summary = or_fail(lambda: engine.close_session(sid))
        if watch is not None:
            watch.add_to(summary)
        summary["fixture"] = self.plugin.relative(self.path)
        self.item.stash.setdefault(REPLAYS, []).append(summary)

    def _stop_recording(self, recorder: RecordingApp) -> None:
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


class AttestPlugin:
    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.rootpath = Path(config.rootpath)
        self.resolved_root = self.rootpath.resolve()
        self.mode = config.getoption("attest_replay") or os.environ.get("ATTEST_REPLAY") or default_mode()
        if self.mode not in MODES:
            raise pytest.UsageError(f"ATTEST_REPLAY must be strict, auto or off, not {self.mode!r}")
        self.strict = bool(config.getoption("attest_strict")) or _truthy(os.environ.get("ATTEST_STRICT"))
        egress = config.getoption("attest_egress") or os.environ.get("ATTEST_EGRESS", "off")
        self.guard = egress.strip().lower() == "block"
        self.no_live = self.guard  # with the guard on, the proxy never goes live either
        self.report_path = config.getoption("attest_report")
        self.match = config.getoption("attest_match") or os.environ.get("ATTEST_MATCH") or "strict"
        if self.match not in MATCHES:
            raise pytest.UsageError(f"ATTEST_MATCH must be strict or lenient, not {self.match!r}")
        self.engines: dict[str | None, EngineProcess] = {}
        self.active: ReplayHandle | None = None
        self.rows: dict[str, dict[str, Any]] = {}
        self._guard_installed = False
        self.record_mode, self.record_refusal = record.resolve(config)
        if self.guard and self.record_mode not in (None, "none"):
            raise pytest.UsageError("--attest-egress=block forbids live calls, so it cannot record; drop one")
        self.front: RecordingFront | None = None
        self._front_saved: dict[str, str | None] = {}
        self.recorded_lines: list[str] = []

    # --- engine and guard --------------------------------------------------------------------------

    def engine(self, engine_path: str | None) -> EngineProcess:
        """The session's engine; one that died (a crash in an earlier test) is replaced by a new one."""
        engine = self.engines.get(engine_path)
        if engine is not None and not engine.alive:
            engine.stop()
            engine = None
        if engine is None:
            engine = self.engines[engine_path] = EngineProcess(engine_path)
        return engine

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        """Start the engine while pytest collects when the project has fixtures: its start (mostly
        importing the HTTP server) then costs the run nothing. It idles if no collected test replays."""
        if (
            self.mode != "off"
            and not self.config.option.collectonly
            and record.runs_tests(self.config)
            and (self.rootpath / DEFAULT_DIR).is_dir()
        ):
            self.engine(None)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """Start the engine now if a collected test replays, so its start overlaps the first setups."""
        if self.mode != "off" and any(
            "attest_replay" in getattr(i, "fixturenames", ()) for i in session.items
        ):
            self.engine(None)

    def start_front(self) -> None:
        """With a record mode, point the provider variables at one front before any test module is
        imported, so module-level clients reach attest (see `pytest_record`)."""
        if self.record_mode is None or self.mode == "off" or not record.runs_tests(self.config):
            return
        from .record_front import RecordingFront

        self.front = RecordingFront(os.environ)
        self._front_saved = record.point_at(self.front.start())

    def install_guard(self) -> None:
        if self.guard:
            from . import guard

            guard.install()
            self._guard_installed = True

    def shutdown(self) -> None:
        lane_http.unroute_all()
        for engine in self.engines.values():
            engine.stop()
        self.engines.clear()
        if self.front is not None:
            self.front.stop()
            self.front = None
            record.restore(self._front_saved)
        if self._guard_installed:
            from . import guard

            guard.uninstall()
            self._guard_installed = False

    def relative(self, path: Path) -> str:
        try:
            return path.resolve().relative_to(self.resolved_root).as_posix()
        except ValueError:
            return path.as_posix()

    # --- the fixture -------------------------------------------------------------------------------

    @pytest.fixture
    def attest_replay(self, request: pytest.FixtureRequest) -> Iterator[Any]:
        item = request.node

        def start(
            name: str,
            mode: str | None = None,
            fixtures_dir: str | Path | None = None,
            engine_path: str | None = None,
        ) -> ReplayHandle:
            chosen = mode or self.mode
            if chosen not in MODES:
                raise AttestError(f"attest replay: mode must be strict, auto or off, not {chosen!r}")
            handle = or_fail(lambda: ReplayHandle(self, item, name, chosen, fixtures_dir, engine_path))
            return handle.start()

        yield start
        self.finish(item)

    def finish(self, item: pytest.Item) -> None:
        for handle in item.stash.get(HANDLES, []):
            handle.stop()
        item.stash[HANDLES] = []

    # --- verdicts ----------------------------------------------------------------------------------

    @pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo) -> Iterator[None]:
        outcome = yield
        report: pytest.TestReport = outcome.get_result()
        if call.when != "call":
            return
        self.finish(item)
        replays = item.stash.get(REPLAYS, [])
        if not replays:
            return
        facts = self.facts(replays, call)
        report.user_properties.append((PROPERTY, facts))
        self.judge(report, facts)
        if item.stash.get(RECORDINGS, None):
            self.write_recordings(item, report)

    def write_recordings(self, item: pytest.Item, report: pytest.TestReport) -> None:
        """Write what the test's blocks recorded, only if it passed; a write that fails fails the test."""
        from .record_front import write

        lines: list[str] = []
        for handle, recorder in item.stash.get(RECORDINGS, []):
            shown, problem = write(recorder, handle.name, handle.path, item.nodeid, report.passed)
            lines += shown
            if problem is not None:
                self.fail(report, problem)
        item.stash[RECORDINGS] = []
        if lines:
            report.user_properties.append((RECORDED, lines))

    def facts(self, replays: list[dict[str, Any]], call: pytest.CallInfo) -> dict[str, Any]:
        misses = [m for r in replays for m in r["miss_list"]]
        facts: dict[str, Any] = {
            "fixtures": sorted({r["fixture"] for r in replays}),
            "mode": replays[-1]["mode"],
            "replayed": sum(r["replayed"] for r in replays),
            "live": sum(r["live"] for r in replays),
            "live_cost_usd": round(sum(r["live_cost_usd"] for r in replays), 6),
            "unpriced": sum(r["unpriced"] for r in replays),
            "unused": sum(r.get("unused", 0) for r in replays),
            "misses": len(misses),
        }
        for key in TOOL_COUNTS:  # only a test with a tool channel (or drift) carries them
            if any(r.get(key) for r in replays):
                facts[key] = sum(r.get(key, 0) for r in replays)
        live_calls = [c for r in replays for c in r.get("live_list", [])]
        if live_calls:
            facts["live_calls"] = live_calls
        drifts = [d for r in replays for d in r.get("drift_list", [])]
        if drifts:
            facts["drift_message"] = drifts[0]["message"]
        if misses:
            first = misses[0]
            facts["miss"] = {
                "message": first["message"],
                "component": first["component"],
                "fixture": first["fixture"],
                "not_evaluated": first["not_evaluated"],
            }
            location = self.miss_location(call)
            if location:
                facts["miss"]["location"] = location
        return facts

    def miss_location(self, call: pytest.CallInfo) -> dict[str, Any] | None:
        """Where the agent's call was made: the innermost traceback frame in the repository's own code."""
        if call.excinfo is None:
            return None
        for entry in reversed(call.excinfo.traceback):
            path = Path(str(entry.path))
            if "site-packages" in path.parts or not path.is_absolute():
                continue
            try:
                rel = path.resolve().relative_to(self.resolved_root)
            except ValueError:
                continue
            return {"file": rel.as_posix(), "line": entry.lineno + 1}
        return None

    def judge(self, report: pytest.TestReport, facts: dict[str, Any]) -> None:
        miss = facts.get("miss")
        if self.guard and facts["live"]:
            self.fail(report, "attest egress guard: a live model call was recorded while blocking")
        elif miss and (not miss["not_evaluated"] or self.strict):
            self.fail(report, miss["message"])
        elif miss:
            report.outcome = "skipped"
            path, line, _ = report.location
            report.longrepr = (str(path), (line or 0) + 1, f"not_evaluated: replay_miss: {miss['message']}")
            report.__dict__.pop("wasxfail", None)
            report.user_properties.append(("attest_outcome", "not_evaluated"))

    @staticmethod
    def fail(report: pytest.TestReport, message: str) -> None:
        """A miss is never an expected failure: it fails whatever the agent raised and whatever the marker."""
        original = report.longreprtext.strip() if report.failed else ""
        report.outcome = "failed"
        report.longrepr = message + (f"\n\n(the agent then failed with)\n{original}" if original else "")
        report.__dict__.pop("wasxfail", None)
        report.user_properties.append(("attest_message", message))

    # --- report-v2 (runs on the xdist controller too, from the workers' serialized reports) ---------

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        row = self.rows.setdefault(report.nodeid, self.new_row(report))
        row["duration"] = round(row["duration"] + report.duration, 6)
        props = dict(report.user_properties)
        self.recorded_lines += props.get(RECORDED, [])
        if PROPERTY in props:
            facts = dict(props[PROPERTY])
            if "miss" in facts:
                facts["miss"] = {k: v for k, v in facts["miss"].items() if k != "not_evaluated"}
            row["replay"] = facts
        outcome = self.outcome(report, props)
        if outcome is not None:
            row["outcome"] = outcome
            if outcome == "not_evaluated":
                row["reason"] = "replay_miss"
            if outcome in ("failed", "error", "skipped", "not_evaluated", "xfailed"):
                row["message"] = props.get("attest_message") or self.message(report)

    def new_row(self, report: pytest.TestReport) -> dict[str, Any]:
        path, line, _ = report.location
        return {
            "id": report.nodeid,
            "file": Path(path).as_posix(),
            "line": (line + 1) if line is not None else None,
            "outcome": "passed",
            "duration": 0.0,
            "message": None,
        }

    @staticmethod
    def outcome(report: pytest.TestReport, props: dict[str, Any]) -> str | None:
        xfail = hasattr(report, "wasxfail")
        if props.get("attest_outcome") == "not_evaluated":
            return "not_evaluated"
        if report.when == "call":
            if report.passed:
                return "xpassed" if xfail else "passed"
            if report.skipped:
                return "xfailed" if xfail else "skipped"
            return "failed"
        if report.failed:
            return "error"
        if report.skipped and report.when == "setup":
            return "xfailed" if xfail else "skipped"
        return None

    @staticmethod
    def message(report: pytest.TestReport) -> str | None:
        """What a reviewer needs: the skip reason, or the failure's own line (`E   AssertionError: ...`)."""
        if isinstance(report.longrepr, tuple):
            return str(report.longrepr[2])
        crash = getattr(getattr(report.longrepr, "reprcrash", None), "message", None)
        if crash:
            return str(crash)[:4000]
        text = report.longreprtext.strip()
        return text[-4000:] if text else getattr(report, "wasxfail", None) or None

    def totals(self) -> dict[str, Any]:
        keys = ("replayed", "live", "live_cost_usd", "unpriced", "unused", "misses", *TOOL_COUNTS)
        return {k: sum(r["replay"].get(k, 0) for r in self.rows.values() if "replay" in r) for k in keys}

    def pytest_report_header(self) -> list[str]:
        return [self.record_refusal] if self.record_refusal else []

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        for line in self.recorded_lines:
            terminalreporter.write_line(line)
        if any("replay" in r for r in self.rows.values()):
            # pytest prints skip reasons only with -rs (or -ra, -rA): a not-evaluated test says why here.
            shown = set(self.config.option.reportchars or "") & set("saA")
            for line in run_end_lines(self.rows.values(), self.totals(), skip_reasons=not shown):
                terminalreporter.write_line(line)

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.report_path and not hasattr(self.config, "workerinput"):
            built = reports.build_report(
                list(self.rows.values()),
                egress=egress_facts(self.guard),
                environment=reports.default_environment("pytest"),
            )
            reports.write_report(built, self.report_path)


PLUGIN = pytest.StashKey[AttestPlugin]()
