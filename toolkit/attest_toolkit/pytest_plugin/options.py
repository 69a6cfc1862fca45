"""The plugin's command-line options (`--attest-*`), each also read from its environment variable by the
plugin; loaded through the plugin's `pytest_plugins`."""

from __future__ import annotations

import pytest

from ..replay.modes import EGRESS, MATCHES, MODES
from . import record

EGRESS_CHOICES = EGRESS


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
        choices=EGRESS_CHOICES,
        default=None,
        help="block: connections to known provider hosts fail (EgressBlockedError); block-all: every host "
        "but loopback and --attest-allowed-hosts fails too (pytest-recording's --block-network). "
        "Also ATTEST_EGRESS.",
    )
    group.addoption(
        "--attest-allowed-hosts",
        default=None,
        metavar="HOSTS",
        help="With --attest-egress=block-all: comma-separated hosts (names or addresses) still reachable. "
        "Provider hosts stay blocked. Also ATTEST_ALLOWED_HOSTS.",
    )
    group.addoption(
        "--attest-match",
        choices=MATCHES,
        default=None,
        help="strict (default) or lenient: model calls by position, a changed request served and reported "
        "as drift (ctxmesh's semantics). Also ATTEST_MATCH.",
    )
    group.addoption(
        "--attest-diff",
        action="store_true",
        default=False,
        help="Under a test that missed, show the recorded and the sent request side by side (secrets "
        "redacted). Local runs only: ignored when CI is set.",
    )
    group.addoption(
        "--attest-fault",
        action="append",
        default=[],
        metavar="SPEC",
        help="Inject a fault into every replayed test's model requests: [call=N:|every:]KIND[,PARAM=VALUE], "
        "KIND one of status=CODE (retry-after=SECONDS), timeout, disconnect, cut=K, latency=MS, pace=MS. "
        "Repeatable; a test's own attest_replay(..., faults=[...]) come after these.",
    )
    group.addoption("--attest-report", default=None, metavar="PATH", help="Write report-v2 JSON to PATH.")
    group.addoption(
        "--attest-repeat",
        type=int,
        default=1,
        metavar="N",
        help="Run each test that uses attest_replay N times (ids [attest-run1] ... [attest-runN]) and name "
        "each one whose sequence of model requests differs between runs: a flaky agent.",
    )
    group.addoption(
        "--attest-record",
        choices=record.RECORD_MODES,
        default=None,
        help="Record from the tests, as pytest-recording: once (a fixture that does not exist), new (only "
        "the calls that miss), all (re-record), none (replay only), rebase (serve each fixture by position and "
        "rewrite only the requests that drifted, no provider called). Also ATTEST_RECORD; with CI set, "
        "only this flag on the command line records. The provider variables point at attest from the "
        "start of the run, so module-level clients work.",
    )
