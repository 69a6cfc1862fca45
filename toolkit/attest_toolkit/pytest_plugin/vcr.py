"""pytest-recording's interface on attest: `@pytest.mark.vcr` tests replay attest fixtures, unedited.

Active when pytest-recording is not loaded (not installed, or `-p no:recording`), or with
`--attest-vcr` / ini `attest_vcr = true`, which then unregisters pytest-recording for the run. A
test marked `vcr` runs inside an attest replay of the fixture its cassette maps to (`importer.
layout_name`: `tests/cassettes/test_chat/test_hello.yaml` is `tests.test_chat.test_hello`); cassette
names given to the marker add their fixtures to the replay, as pytest-recording adds them to the
cassette. The fixtures `vcr` (None here: code written for pytest-recording reads None as recording
turned off), `vcr_config`, `vcr_cassette_dir` and `default_cassette_name` keep their meaning, and a
project's own overrides of them are used.

The SDKs keep the base URLs the test set (`client.base_url` is `https://api.openai.com/v1/`, as under
pytest-recording, which swaps the transport and leaves the URL): the test process's httpx calls to a
provider's real host are answered by the session as if sent to its URL for that provider (same keys,
misses and counts; see `pytest_plugin.lane.serve_hosts`), and recorded through the front in a record mode.
The SDKs the lane does not see (boto3, google-genai: `Provider.on_httpx`) stay pointed at attest by
their variables. A call the test's own code sends to a provider host with requests, aiohttp or urllib
is not served so: `--attest-egress=block` refuses it.

`--record-mode` maps onto `--attest-record` (`new_episodes` is `new`, `rewrite` is `all`), with the
same CI rule. A marked test that makes no model call passes without a fixture, and recording it
writes nothing. `--block-network` (or the `block_network` marker) refuses connections to anything but
loopback and `--allowed-hosts` while a test replays, as pytest-recording does; loopback, where the
engine listens, is never refused, and pytest-recording's own blocking is off with the rest of it.

vcr_config keys: `filter_headers` holds by construction (a fixture keeps no request headers),
`ignore_hosts` and `ignore_localhost` leave those hosts' plain HTTP alone (see `plain_http`: else
it is replayed, and recorded with a record mode, loopback included as vcrpy does; never attest's own
listeners), `ignore_hosts` unless it names a provider host, and `match_on` when it compares the body
(attest always does). Every other key is named once, at the end of the run, as not honoured.
"""

from __future__ import annotations

import functools
import importlib.metadata
import os
import re
import socket
from collections.abc import Generator, Iterator
from contextlib import contextmanager
from pathlib import Path, PurePath
from typing import Any

import pluggy
import pytest

from . import PLUGIN, AttestPlugin

RECORDING = "recording"  # pytest-recording's plugin name
PYTEST_VCR = "vcr"  # pytest-vcr's, which has a `vcr` fixture and marker of its own
VCR_RECORD_MODES = ("none", "once", "new_episodes", "all", "rewrite")
TO_ATTEST = {"none": "none", "once": "once", "new_episodes": "new", "all": "all", "rewrite": "all"}
# Keys with nothing to do on attest fixtures: how vcrpy stores a cassette, or options this module reads.
NO_EFFECT = frozenset({"decode_compressed_response", "serializer", "filter_headers", "allowed_hosts"})
BODY_MATCHERS = frozenset({"body", "raw_body", "json_body"})
LOOPBACK = re.compile(r"^(localhost|127\.\d+\.\d+\.\d+|::1|0\.0\.0\.0)$", re.IGNORECASE)
COMPAT = pytest.StashKey["VcrCompat"]()


class RecordingHooks:
    @staticmethod
    def pytest_recording_configure(config: pytest.Config, vcr: Any) -> None:
        """pytest-recording's: called with its VCR object before a cassette is used."""


class NetworkBlocked(OSError):
    """A connection refused by `--block-network`."""


def recording_loads(pluginmanager: pytest.PytestPluginManager) -> bool:
    """True when pytest-recording is (or will be) loaded in this run: it is installed, not blocked
    with `-p no:recording`, and plugin autoloading is on."""
    if pluginmanager.has_plugin(RECORDING):
        return True
    if pluginmanager.is_blocked(RECORDING) or os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD"):
        return False
    return RECORDING in _installed_plugins()


@functools.cache
def _installed_plugins() -> frozenset[str]:
    """The pytest plugins installed (their entry points): read once, since each reading scans every
    installed distribution and three hooks ask at every pytest start."""
    return frozenset(ep.name for ep in importlib.metadata.entry_points(group="pytest11"))


def pytest_addoption(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    group = parser.getgroup("attest", "attest replay")
    group.addoption(
        "--attest-vcr",
        action="store_true",
        default=None,
        help="Serve @pytest.mark.vcr tests from attest fixtures even though pytest-recording is "
        "installed (it is turned off for the run). Also ini attest_vcr = true.",
    )
    parser.addini(
        "attest_vcr", "Serve @pytest.mark.vcr tests from attest fixtures.", type="bool", default=False
    )
    if recording_loads(pluginmanager):
        return  # pytest-recording's own options, read the same way
    group = parser.getgroup("recording", "pytest-recording's options, on attest")
    group.addoption("--record-mode", choices=VCR_RECORD_MODES, default=None, help="As --attest-record.")
    group.addoption(
        "--block-network", action="store_true", default=False, help="Only loopback while replaying."
    )
    group.addoption("--allowed-hosts", default=None, help="Regexes, comma-separated, of hosts still allowed.")
    group.addoption("--disable-recording", action="store_true", default=False, help="Ignore the vcr marker.")


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    """pytest-recording's hook, so a conftest implementing it still loads; attest never calls it."""
    if not recording_loads(pluginmanager):
        pluginmanager.add_hookspecs(RecordingHooks)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    """Runs before attest's own configure, so `--record-mode` is the record mode it resolves."""
    loaded = recording_loads(config.pluginmanager)
    opted_in = bool(config.getoption("attest_vcr") or config.getini("attest_vcr"))
    if (loaded or config.pluginmanager.has_plugin(PYTEST_VCR)) and not opted_in:
        config.pluginmanager.register(ForeignVcr(config), "attest-vcr-advice")
        return  # their `vcr` fixture and marker stay theirs
    if loaded:
        config.pluginmanager.unregister(name=RECORDING)
    for line in (
        "vcr: Replay the test's cassette from its attest fixture.",
        "block_network: Only loopback (and allowed_hosts) while the test replays.",
        "default_cassette: Override the default cassette name.",
        "allowed_hosts: Regexes of hosts a blocked network still reaches.",
    ):
        config.addinivalue_line("markers", line)
    _record_mode(config)
    compat = config.stash[COMPAT] = VcrCompat(config)
    config.pluginmanager.register(compat, "attest-vcr")


def _record_mode(config: pytest.Config) -> None:
    """`--record-mode` as `--attest-record`. Replaying needs no front: a client built at module level,
    as pytest-recording allows, keeps the provider's URL and is served by host (see `pytest_plugin.lane`)."""
    if config.getoption("attest_record") or os.environ.get("ATTEST_RECORD"):
        return
    mode = config.getoption("record_mode", None)
    if mode:
        config.option.attest_record = TO_ATTEST[mode]


def merged(config: dict[str, Any], markers: list[pytest.Mark]) -> dict[str, Any]:
    """vcr_config with the markers' keyword arguments over it, the closest marker last (it wins)."""
    result = dict(config)
    for marker in reversed(markers):
        result.update(marker.kwargs)
    return result


def cassette_fixture_name(rootpath: Path, cassette: Path) -> str:
    """The fixture name of a cassette path, from where it lies under the project."""
    from ..fixtures.layout import layout_name

    try:
        relative: PurePath = cassette.resolve().relative_to(rootpath.resolve())
    except ValueError:
        relative = PurePath(cassette.name)
    return layout_name(relative)


class ForeignVcr:
    """pytest-recording (or pytest-vcr) serves the vcr marker in this run. A vcr test that fails while
    an attest fixture of its cassette's name exists (imported or recorded by attest) most likely
    failed for want of attest (the SDK's `Missing credentials`, no cassette): say how to switch."""

    TITLE = "attest"

    def __init__(self, config: pytest.Config) -> None:
        self.rootpath = Path(config.rootpath)
        self.lines: list[str] = []

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo
    ) -> Generator[None, pluggy.Result[pytest.TestReport], None]:
        outcome = yield
        report = outcome.get_result()
        if call.when == "call" and report.failed and item.get_closest_marker("vcr") is not None:
            fixture = self.fixture_of(item)
            if fixture.exists():
                shown = fixture.relative_to(self.rootpath).as_posix()
                report.sections.append((self.TITLE, self.advice(shown)))

    @staticmethod
    def advice(fixture: str) -> str:
        return (
            f"attest: this test's recordings are the attest fixture {fixture}, but pytest-recording "
            "serves the vcr marker in this run, so attest did not replay it: pass --attest-vcr (or set "
            "attest_vcr = true in the pytest ini) to replay it with attest"
        )

    def fixture_of(self, item: pytest.Item) -> Path:
        """The attest fixture of the test's cassette, as the vcr marker on attest would look it up."""
        funcargs = getattr(item, "funcargs", {})
        module = Path(str(item.path))
        directory = Path(str(funcargs.get("vcr_cassette_dir") or module.parent / "cassettes" / module.stem))
        cassette = directory / str(funcargs.get("default_cassette_name") or item.name)
        from ..fixtures.document import DEFAULT_DIR, fixture_path

        return self.rootpath / fixture_path(cassette_fixture_name(self.rootpath, cassette), DEFAULT_DIR)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """On the xdist controller too: the line travels in the report's sections."""
        self.lines += [f"{text} ({report.nodeid})" for title, text in report.sections if title == self.TITLE]

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        for line in self.lines:
            terminalreporter.write_line(line)


class VcrCompat:
    """The vcr marker's fixtures, and what the run says about vcr_config keys."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.rootpath = Path(config.rootpath)
        self.unhonoured: dict[str, str] = {}  # key -> why, each named once

    @property
    def attest(self) -> AttestPlugin:
        return self.config.stash[PLUGIN]

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        """Start the engine as the session starts when the run asked for vcr replays (`--attest-vcr`),
        so its start overlaps collecting the suite (importing its modules) instead of delaying the first
        marked test, where pytest-recording waits for nothing. Without that option (attest serving the
        marker because pytest-recording is not installed) a run that replays nothing starts nothing."""
        config, attest = self.config, self.attest
        asked = config.getoption("attest_vcr") or config.getini("attest_vcr")
        replays = attest.mode != "off" and not attest.record_mode
        if asked and replays and not config.getoption("disable_recording", False):
            attest.engine(None)

    # --- pytest-recording's fixtures ---------------------------------------------------------------

    @pytest.fixture
    def vcr_config(self) -> dict[str, Any]:
        return {}

    @pytest.fixture(scope="module")
    @classmethod
    def vcr_cassette_dir(cls, request: pytest.FixtureRequest) -> str:
        module = Path(str(request.node.path))
        return str(module.parent / "cassettes" / module.stem)

    @pytest.fixture
    def default_cassette_name(self, request: pytest.FixtureRequest) -> str:
        marker = request.node.get_closest_marker("default_cassette")
        if marker is not None and marker.args:
            return str(marker.args[0])
        name = f"{request.cls.__name__}.{request.node.name}" if request.cls else request.node.name
        return re.sub(r"[<>?%*:|\"'/\\]", "-", name)

    @pytest.fixture(autouse=True)
    def block_network(self, request: pytest.FixtureRequest) -> Iterator[None]:
        """`--block-network` and the marker, loopback (the engine) always reachable. Named as
        pytest-recording's autouse fixture, which stays defined when that plugin is unregistered for
        the run: this one replaces it, so its blocking is off too."""
        blocked = self._blocked_hosts(request, list(request.node.iter_markers("vcr")))
        with _network_blocked(blocked) if blocked is not None else _nothing():
            yield

    @pytest.fixture(autouse=True)
    def vcr(self, request: pytest.FixtureRequest, block_network: None) -> Iterator[None]:
        markers = list(request.node.iter_markers("vcr"))
        if not markers or self.config.getoption("disable_recording", False):
            yield None
            return
        settings = merged(request.getfixturevalue("vcr_config"), markers)
        self._note_keys(settings)
        directory = Path(request.getfixturevalue("vcr_cassette_dir"))
        cassette = directory / str(request.getfixturevalue("default_cassette_name"))
        extra = [directory / str(a) for m in markers for a in m.args]
        self._start(request.node, cassette, extra, settings)
        yield None
        self.attest.finish(request.node)

    def _start(self, item: pytest.Item, cassette: Path, extra: list[Path], settings: dict[str, Any]) -> None:
        attest = self.attest
        if attest.mode == "off":
            return
        from .handle import or_fail  # the replay's modules load with the first marked test
        from .vcr_handle import VcrHandle

        handle = or_fail(lambda: VcrHandle(attest, item, self.name_of(cassette), attest.mode, None, None))
        handle.extra = [self.fixture_of(p) for p in extra]
        handle.ignored_hosts = frozenset(map(str, settings.get("ignore_hosts") or ()))
        handle.takes_loopback = not settings.get("ignore_localhost")  # vcrpy records localhost by default
        handle.keeps_urls = True  # the client's URL stays the provider's, as pytest-recording leaves it
        handle.start()

    def name_of(self, cassette: Path) -> str:
        return cassette_fixture_name(self.rootpath, cassette)

    def fixture_of(self, cassette: Path) -> Path:
        from ..fixtures.document import DEFAULT_DIR, fixture_path

        path = fixture_path(self.name_of(cassette), DEFAULT_DIR)
        return path if path.is_absolute() else self.rootpath / path

    # --- network -----------------------------------------------------------------------------------

    def _blocked_hosts(self, request: pytest.FixtureRequest, markers: list[pytest.Mark]) -> list[str] | None:
        """The hosts still allowed when the network is blocked for this test; None when it is not."""
        mark = request.node.get_closest_marker("block_network")
        if mark is None and not self.config.getoption("block_network", False):
            return None
        if markers and self.attest.record_mode not in (None, "none"):
            return None  # recording reaches the provider, as pytest-recording allows
        settings = request.getfixturevalue("vcr_config")
        allowed = (
            (mark.kwargs.get("allowed_hosts") if mark is not None else None)
            or self.config.getoption("allowed_hosts", None)
            or settings.get("allowed_hosts")
            or []
        )
        return allowed.split(",") if isinstance(allowed, str) else list(allowed)

    # --- vcr_config --------------------------------------------------------------------------------

    def _note_keys(self, settings: dict[str, Any]) -> None:
        for key, value in settings.items():
            why = self._unhonoured(key, value)
            if why is not None:
                self.unhonoured.setdefault(key, why)

    def _unhonoured(self, key: str, value: Any) -> str | None:
        """Why `key` does not hold on attest, or None when it does."""
        if key in NO_EFFECT or key == "ignore_localhost":
            return None
        if key == "ignore_hosts":
            from ..guard import is_blocked_host

            providers = [h for h in value or () if is_blocked_host(str(h))]
            return (
                f"names provider hosts ({', '.join(providers)}), which attest replays" if providers else None
            )
        if key == "match_on":
            if BODY_MATCHERS & set(value or ()):
                return None
            return "attest matches the request body too; looser matching needs attest's ignore rules"
        if key == "record_mode":
            if self.config.getoption("record_mode", None) or self.config.getoption("attest_record"):
                return None  # the command line wins, as in pytest-recording
            return "attest records only with --record-mode or --attest-record on the command line"
        return "not supported by attest"

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        for key, why in self.unhonoured.items():
            terminalreporter.write_line(f"attest vcr: vcr_config key {key!r} not honoured: {why}")


@contextmanager
def _nothing() -> Iterator[None]:
    yield


def _allowed(host: str, patterns: list[re.Pattern[str]]) -> bool:
    return bool(LOOPBACK.match(host)) or any(p.match(host) for p in patterns)


@contextmanager
def _network_blocked(allowed: list[str]) -> Iterator[None]:
    """Connections to anything but loopback and `allowed` (regexes, matched against the host or
    address connected to) fail while the test runs."""
    patterns = [re.compile(p.strip()) for p in allowed if p.strip()]
    connect, connect_ex = socket.socket.connect, socket.socket.connect_ex

    def check(sock: socket.socket, address: Any) -> None:
        if sock.family in (socket.AF_INET, socket.AF_INET6) and isinstance(address, tuple):
            host = str(address[0])
            if not _allowed(host, patterns):
                raise NetworkBlocked(f"attest vcr: --block-network: connection to {host} blocked")

    # `sock: Any`: the method's own self, which typeshed types as the C base class of socket.socket
    def guarded_connect(sock: Any, address: Any) -> None:
        check(sock, address)
        connect(sock, address)

    def guarded_connect_ex(sock: Any, address: Any) -> int:
        check(sock, address)
        return connect_ex(sock, address)

    socket.socket.connect, socket.socket.connect_ex = guarded_connect, guarded_connect_ex  # type: ignore[method-assign]
    try:
        yield
    finally:
        socket.socket.connect, socket.socket.connect_ex = connect, connect_ex  # type: ignore[method-assign]
