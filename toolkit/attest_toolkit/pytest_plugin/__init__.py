"""The pytest helper: the `attest_replay` fixture, the egress guard switch, and report-v2.

    def test_inc_1042_replay(attest_replay):
        with attest_replay("inc-1042"):
            result = run_refund_agent("O-1042")  # construct model clients here, after the call

One engine process per test session (per xdist worker) serves every fixture; a test opens and closes
a session on it. A strict miss fails the test with the miss message whatever the agent raised and
whatever marker the test carries; an auto miss without a key is `not_evaluated: replay_miss`.

Every pytest run in an environment holding attest loads this module, replay or not: it imports only
what reads the options and keeps report rows. The engine client, the SDK patches, fixtures and the
report's schema are imported by the methods that need them, which run once a test replays, records or
asks for a report.
"""

from __future__ import annotations

import os
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import pluggy
import pytest

from ..errors import AttestError
from ..replay.modes import Mode, spelled, word_of
from ..replay.repeat import base_id, divergence, run_label
from . import record
from .settings import PluginSettings
from .stash import HANDLES, RECORDINGS, REPLAYS

RECORDED = "attest_recorded"  # a test's lines about the fixtures it wrote, shown at the end of the run
PROPERTY = "attest_replay"
ASKED = "attest_asked"  # a test that asked for a replay none of which ran (its fixture was missing, say)

if TYPE_CHECKING:  # the recording front imports aiohttp: loaded only when a run records
    from .client import EngineProcess
    from .handle import ReplayHandle
    from .record_front import RecordingFront


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    """The command-line options, and pytest-recording's vcr marker on attest: plugins of their own
    (they read this module's), imported by name here rather than named in `pytest_plugins`, for which
    pytest first looks each name up among every installed distribution's entry points, at every start."""
    for name in ("options", "vcr"):
        pluginmanager.import_plugin(f"{__name__}.{name}")
    _not_rewritten(pluginmanager)


def _not_rewritten(pluginmanager: pytest.PytestPluginManager) -> None:
    """The package's modules imported from here on load from the bytecode pip wrote.

    pytest rewrites the asserts of every module in a plugin's distribution, so each run's first import
    of one (every run, on a fresh CI machine) reads, parses, rewrites and compiles its source again: about
    0.1 s for the modules a replay loads. Their asserts are the package's own invariants, not a test's.
    The rewriter's list of marked names is not public: if it changes, the modules are rewritten as before.
    """
    marked = getattr(getattr(pluginmanager, "rewrite_hook", None), "_must_rewrite", None)
    if isinstance(marked, set):
        top = __name__.partition(".")[0]
        marked.difference_update([name for name in marked if name.partition(".")[0] == top])


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "attest_match(ignore=[...]): paths this test's replays let change, served and reported as drift "
        "(params.max_tokens, messages[*].content[?type=text&text= ])",
    )
    plugin = AttestPlugin(config)
    config.pluginmanager.register(plugin, "attest-plugin")
    config.stash[PLUGIN] = plugin
    plugin.install_guard()
    plugin.start_front()


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """`--attest-repeat N`: each test that replays runs N times, as pytest-repeat does it."""
    count = metafunc.config.getoption("attest_repeat", 1) or 1
    if count > 1 and "attest_replay" in metafunc.fixturenames:
        metafunc.fixturenames.append("attest_run")
        metafunc.parametrize("attest_run", range(1, count + 1), ids=run_label)


@pytest.fixture
def attest_run(request: pytest.FixtureRequest) -> int:
    """Which run of a repeated test this is (`--attest-repeat N`), from 1."""
    return int(getattr(request, "param", 1))


def pytest_unconfigure(config: pytest.Config) -> None:
    plugin = config.stash.get(PLUGIN, None)
    if plugin is not None:
        plugin.shutdown()


class AttestPlugin:
    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.rootpath = Path(config.rootpath)
        self.resolved_root = self.rootpath.resolve()
        self.settings = PluginSettings.from_config(config, os.environ)
        self.engines: dict[str | None, EngineProcess] = {}
        self.active: ReplayHandle | None = None
        self.rows: dict[str, dict[str, Any]] = {}
        self.keys: dict[str, list[str]] = {}  # each test's model request keys, for --attest-repeat
        self._guard_installed = False
        self.front: RecordingFront | None = None
        self.front_saved: dict[str, str | None] = {}
        self.front_env: dict[str, str] = {}  # the variables pointing at the front
        self.recorded_lines: list[str] = []
        self.asked = False  # some test asked for a replay: the run ends with the summary line
        self.collect_hints: list[str] = []  # why a module could not be imported, when attest knows
        self._policy_ignore: tuple[str, ...] | None = None
        if any(k.startswith("ATTEST_") and k.endswith("_UPSTREAM") for k in os.environ):
            self.check_upstreams()

    # What a replay handle and the vcr marker read of the run (`handle.Run`): plain strings, as what a
    # handle records crosses to xdist's controller, whose serializer takes no enum.
    @property
    def mode(self) -> str:
        return self.settings.mode.value

    @property
    def record_mode(self) -> str | None:
        return self.settings.record_mode

    @property
    def record_refusal(self) -> str | None:
        return self.settings.record_refusal

    @property
    def no_live(self) -> bool:
        return self.settings.no_live

    @property
    def match(self) -> str:
        return self.settings.match.value

    @staticmethod
    def check_upstreams() -> None:
        """A bad ATTEST_*_UPSTREAM is one line before any test runs, not an engine or a front that dies
        starting; the provider registry that names them is loaded only when one is set."""
        from ..providers.env import check_upstreams

        try:
            check_upstreams(os.environ)
        except AttestError as exc:
            raise pytest.UsageError(str(exc)) from None

    def ignore_rules(self, item: pytest.Item) -> list[str]:
        """The run's ignore rules for this test: the policy file's, then its `attest_match` markers'."""
        from ..normalize.rules import parse_ignore

        if self._policy_ignore is None:  # read once, and only by a run that replays
            from ..report.policy_paths import default_policy_path

            self._policy_ignore = ()
            if default_policy_path(self.rootpath) is not None:
                from ..report.policy import load_policy

                self._policy_ignore = load_policy(root=self.rootpath).ignore
        rules = list(self._policy_ignore)
        for marker in item.iter_markers("attest_match"):
            paths = marker.kwargs.get("ignore", ())
            paths = [paths] if isinstance(paths, str) else list(paths)
            parse_ignore(paths, f"{item.nodeid}: attest_match marker")  # its one-line error names the test
            rules += paths
        return rules

    # --- engine and guard --------------------------------------------------------------------------

    def engine(self, engine_path: str | None) -> EngineProcess:
        """The session's engine; one that died (a crash in an earlier test) is replaced by a new one."""
        engine = self.engines.get(engine_path)
        if engine is not None and not engine.alive:
            engine.stop()
            engine = None
        if engine is None:
            from .client import EngineProcess

            # With a record mode the provider variables point at the front: the engine forwards a live
            # call to the user's own upstream, so it gets the environment as the user set it.
            env = record.as_the_user_set_it(self.front_saved) if self.front is not None else None
            engine = self.engines[engine_path] = EngineProcess(engine_path, env)
        return engine

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """Start the engine now if a collected test replays, so its start overlaps the first setups. Not
        earlier: a run in which no test replays (a project's other tests) starts no engine at all."""
        if self.mode != "off" and any(
            "attest_replay" in getattr(i, "fixturenames", ()) for i in session.items
        ):
            self.engine(None)

    def start_front(self) -> None:
        """With a record mode, point the provider variables at one front before any test module is
        imported, so module-level clients reach attest (see `pytest_plugin.record`)."""
        if self.record_mode is None or self.mode == "off" or not record.runs_tests(self.config):
            return
        from .record_front import RecordingFront

        self.front = RecordingFront(os.environ)
        self.front_env = self.front.start()
        self.front_saved = record.point_at(self.front_env)

    def install_guard(self) -> None:
        if self.settings.guard:
            from .. import guard

            if self.settings.block_all:
                from ..guard import scope

                scope.block_all(scope.parse_hosts(self.settings.allowed_hosts))
            guard.install()
            self._guard_installed = True

    def shutdown(self) -> None:
        """Undo what the plugin set up for the run (engines, the front, the guard); what a replay
        changed its handle undid when it stopped (see `handle`)."""
        for engine in self.engines.values():
            engine.stop()
        self.engines.clear()
        if self.front is not None:
            self.front.stop()
            self.front = None
            record.restore(self.front_saved)
        if self._guard_installed:
            from .. import guard

            guard.uninstall()
            self._guard_installed = False
            if self.settings.block_all:
                from ..guard import scope

                scope.providers_only()

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
            faults: list[str] | tuple[str, ...] = (),
        ) -> ReplayHandle:
            from ..replay.faults import parse_faults
            from .handle import ReplayHandle, or_fail

            chosen = word_of(Mode, mode or self.mode)
            if chosen is None:
                raise AttestError(f"attest replay: mode must be {spelled(Mode)}, not {mode!r}")
            specs = [*self.settings.faults, *faults]
            or_fail(lambda: parse_faults(specs))  # a bad SPEC fails the test on one line, before it runs
            handle = or_fail(
                lambda: ReplayHandle(self, item, name, chosen.value, fixtures_dir, engine_path, specs)
            )
            return handle.start()

        yield start
        self.finish(item)

    def finish(self, item: pytest.Item) -> None:
        for handle in item.stash.get(HANDLES, []):
            handle.stop()
        item.stash[HANDLES] = []

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Generator[None, None, None]:
        """A test that mocks httpx (pytest-httpx) runs with the provider variables as the user set
        them, not pointed at the recording front (see `mocked_httpx`)."""
        if self.front is None:
            yield
            return
        from . import mocked_httpx  # loaded by a run that records

        if not mocked_httpx.mocks_httpx(item):
            yield
            return
        with mocked_httpx.front_hidden(self.front_saved, self.front_env):
            yield

    # --- verdicts ----------------------------------------------------------------------------------

    @pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo
    ) -> Generator[None, pluggy.Result[pytest.TestReport], None]:
        outcome = yield
        report: pytest.TestReport = outcome.get_result()
        if call.when != "call":
            return
        self.finish(item)
        replays = item.stash.get(REPLAYS, [])
        if not replays:
            if self.mode != "off" and "attest_replay" in getattr(item, "fixturenames", ()):
                report.user_properties.append((ASKED, True))  # the run still ends with the summary line
            return
        self.judged(item, report, call, replays)

    def judged(
        self,
        item: pytest.Item,
        report: pytest.TestReport,
        call: pytest.CallInfo,
        replays: list[dict[str, Any]],
    ) -> None:
        """The replays' facts on a test's report, and its verdict from them."""
        facts = self.facts(replays, call)
        if "miss" in facts:
            facts["miss"]["message"] = self.fitted_hint(facts["miss"], replays, item.nodeid)
        report.user_properties.append((PROPERTY, facts))
        self.judge(report, facts)
        if self.settings.show_diff and "miss" in facts:
            self.show_last_miss(report, replays, facts["miss"]["fixture"])
        if item.stash.get(RECORDINGS, None):
            self.write_recordings(item, report, failure_of(call))

    @staticmethod
    def show_last_miss(report: pytest.TestReport, replays: list[dict[str, Any]], name: str) -> None:
        """The miss's recorded and sent request side by side, below the failure (the engine kept them)."""
        from ..fixtures.document import name_of
        from ..replay import last_miss

        paths = [Path(p) for r in replays for p in r["fixtures"] if name_of(p) == name]
        try:
            shown = last_miss.shown(paths[0]) if paths else None
        except AttestError as exc:
            shown = str(exc)
        if shown:
            report.sections.append(("attest diff: recorded | sent", shown))

    def write_recordings(self, item: pytest.Item, report: pytest.TestReport, error: str | None) -> None:
        """Write what the test's blocks recorded, only if it passed; a write that fails fails the test.
        `error`: what the test failed with, if it did."""
        from .record_front import write

        lines: list[str] = []
        for handle, recorder in item.stash.get(RECORDINGS, []):
            shown, problem = write(recorder, handle.name, handle.path, item.nodeid, report.passed, error)
            lines += shown
            if problem is not None:
                self.fail(report, problem)
        item.stash[RECORDINGS] = []
        if lines:
            report.user_properties.append((RECORDED, lines))

    def facts(self, replays: list[dict[str, Any]], call: pytest.CallInfo) -> dict[str, Any]:
        from ..report.build import replay_facts

        facts = replay_facts(replays, (r["fixture"] for r in replays))
        facts["keys"] = [k for r in replays for k in r.get("keys", [])]  # for --attest-repeat, not the row
        if "miss" in facts:
            location = self.miss_location(call)
            if location:
                facts["miss"]["location"] = location
        return facts

    def fitted_hint(self, miss: dict[str, Any], replays: list[dict[str, Any]], nodeid: str) -> str:
        """The miss line with the re-record command that fits its fixture (see `rerecord`)."""
        from ..fixtures.document import name_of
        from ..replay.rerecord import fitted

        paths = [self.rootpath / r["fixture"] for r in replays if name_of(r["fixture"]) == miss["fixture"]]
        return fitted(miss["message"], paths[0] if paths else None, nodeid)

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
        if self.settings.guard and facts["live"]:
            self.fail(report, "attest egress guard: a live model call was recorded while blocking")
        elif miss and (not miss["not_evaluated"] or self.settings.strict):
            refused = f"\n{self.record_refusal}" if self.record_refusal else ""  # the header is not enough
            self.fail(report, miss["message"] + refused)
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
        # Both properties are this plugin's own (set in makereport above, serialized by xdist as they are).
        self.recorded_lines += cast("list[str]", props.get(RECORDED, []))
        self.asked = self.asked or bool(props.get(ASKED)) or PROPERTY in props
        if PROPERTY in props:
            facts = dict(cast("dict[str, Any]", props[PROPERTY]))
            self.keys[report.nodeid] = facts.pop("keys", [])
            if "miss" in facts:
                from ..report.build import row_miss

                facts["miss"] = row_miss(facts["miss"])
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
        from ..report.build import MESSAGE_CHARS, redacted_clip

        if isinstance(report.longrepr, tuple):
            return str(report.longrepr[2])
        crash = getattr(getattr(report.longrepr, "reprcrash", None), "message", None)
        if crash:
            return redacted_clip(str(crash), MESSAGE_CHARS)
        text = report.longreprtext.strip()
        if text:
            return redacted_clip(text, MESSAGE_CHARS, keep_end=True)
        return getattr(report, "wasxfail", None) or None

    def totals(self) -> dict[str, Any]:
        from ..report.build import TOOL_COUNTS

        keys = ("replayed", "live", "live_cost_usd", "unpriced", "unused", "misses", *TOOL_COUNTS)
        return {k: sum(r["replay"].get(k, 0) for r in self.rows.values() if "replay" in r) for k in keys}

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed and self.record_mode is None and self.mode != "off":
            hint = record.missing_key_hint(report.longreprtext)
            if hint is not None:
                self.collect_hints.append(f"{hint} ({report.nodeid})")

    def pytest_report_header(self) -> list[str]:
        return [self.record_refusal] if self.record_refusal else []

    def mark_flaky(self) -> list[str]:
        """Rows of a repeated test whose runs sent different requests get `replay.flaky`; the lines
        that name them."""
        runs: dict[str, dict[int, str]] = {}
        for nodeid in self.rows:
            own, number = base_id(nodeid)
            if number is not None and nodeid in self.keys:
                runs.setdefault(own, {})[number] = nodeid
        lines = []
        for own, by_number in runs.items():
            flaky = divergence([self.keys[by_number[n]] for n in sorted(by_number)])
            if flaky is None:
                continue
            lines.append(f"attest repeat: flaky: {own}: {flaky}")
            for nodeid in by_number.values():
                self.rows[nodeid].setdefault("replay", {})["flaky"] = flaky
        return lines

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        for line in self.collect_hints:
            terminalreporter.write_line(line)
        for line in self.recorded_lines:
            terminalreporter.write_line(line)
        for line in self.mark_flaky():
            terminalreporter.write_line(line)
        for row in self.rows.values():  # drift is served, never silent
            if (row.get("replay") or {}).get("drift_message"):
                terminalreporter.write_line(f"attest drift: {row['id']}: {row['replay']['drift_message']}")
        if self.asked:
            # pytest prints skip reasons only with -rs (or -ra, -rA): a not-evaluated test says why here.
            from ..report.summary import run_end_lines

            shown = set(self.config.option.reportchars or "") & set("saA")
            for line in run_end_lines(self.rows.values(), self.totals(), skip_reasons=not shown):
                terminalreporter.write_line(line)

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        for engine in self.engines.values():  # every test is done: they exit while the summary is written
            engine.end()
        if self.settings.report_path and not hasattr(self.config, "workerinput"):
            from ..report.build import build_report, default_environment, write_report
            from ..report.runner_rows import egress_facts

            self.mark_flaky()
            built = build_report(
                list(self.rows.values()),
                egress=egress_facts(self.settings.guard),
                environment=default_environment("pytest"),
            )
            write_report(built, self.settings.report_path)


PLUGIN = pytest.StashKey[AttestPlugin]()


_ERROR_WIDTH = 200  # a line of the terminal, not the traceback pytest prints anyway


def failure_of(call: pytest.CallInfo) -> str | None:
    """What a test failed with, on one line (`RuntimeError: the tool broke`), or None if it did not."""
    if call.excinfo is None:
        return None
    first = next(iter(str(call.excinfo.value).splitlines()), "").strip()
    text = f"{call.excinfo.typename}: {first}" if first else call.excinfo.typename
    return text if len(text) <= _ERROR_WIDTH else text[: _ERROR_WIDTH - 3] + "..."
