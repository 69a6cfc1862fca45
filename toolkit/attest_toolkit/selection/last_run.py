"""What the last report (report-v2) tells selection: which fixtures each test loaded, and how long it
ran. Reading and validating the report is `attest_toolkit.report.build.load_report`."""

from __future__ import annotations

from collections import defaultdict

from ..repo_root import normalize_path
from ..report.build import Report
from .ids import ancestors


def tests_by_fixture(report: Report) -> dict[str, set[str]]:
    """Fixture path -> the ids of the tests that loaded it in the reported run."""
    users: dict[str, set[str]] = defaultdict(set)
    for test in report["tests"]:
        for fixture in test.get("replay", {}).get("fixtures", []):
            users[normalize_path(fixture)].add(test["id"])
    return users


def known_ids(report: Report) -> set[str]:
    """Every reported id and each of its parents (its function, class and file), so that a test the
    scan found by function can be looked up whatever parametrised ids the report holds."""
    known: set[str] = set()
    for test in report["tests"]:
        known.add(test["id"])
        known.update(ancestors(test["id"]))
    return known


def files_of(report: Report) -> dict[str, str]:
    return {test["id"]: normalize_path(test["file"]) for test in report["tests"]}


def durations(report: Report, units: list[str]) -> dict[str, float]:
    """Seconds per unit (a node id, a file or a directory): the reported durations of the tests in it."""
    total: dict[str, float] = defaultdict(float)
    for test in report["tests"]:
        seconds = float(test["duration"])
        total[test["id"]] += seconds
        for parent in ancestors(test["id"]):
            total[parent] += seconds
    return {unit: total[unit] for unit in units if unit in total}
