"""The report's findings as annotations at their file and line, most important first.

Order: replay misses (where the agent made the call), then failed tests, then tests not evaluated,
then tests that made live model calls. GitHub shows only the first 10 errors and 10 warnings of a step
from workflow commands, so the order decides what a reviewer sees; a check run carries them all.
"""

from __future__ import annotations

from typing import Any

from ..report.build import Report, Test, replay_of
from .commands import Annotation
from .trim import cut

# Check run annotation levels for workflow-command levels.
CHECK_LEVELS = {"error": "failure", "warning": "warning", "notice": "notice"}
# The Checks API's limits: a title of 255 characters, a message of 64 KB, counted in UTF-8 bytes.
CHECK_TITLE_MAX = 255
CHECK_MESSAGE_MAX_BYTES = 64 * 1024 - 1


def _miss(test: Test) -> Annotation | None:
    replay = replay_of(test)
    miss = replay.get("miss")
    if not miss:
        return None
    location = miss.get("location") or {}
    return Annotation(
        level="error",
        message=miss["message"],
        file=location.get("file") or test["file"],
        line=location.get("line") if location.get("file") else test.get("line"),
        title=f"attest replay miss ({miss['component']}): {test['id']}",
    )


def _failure(test: Test) -> Annotation:
    return Annotation(
        level="error",
        message=test.get("message") or f"{test['id']} {test['outcome']}",
        file=test["file"],
        line=test.get("line"),
        title=f"test {test['outcome']}: {test['id']}",
    )


def _not_evaluated(test: Test) -> Annotation:
    reason = test.get("reason") or "no reason given"
    return Annotation(
        level="warning",
        message=test.get("message") or f"{test['id']} was not evaluated ({reason})",
        file=test["file"],
        line=test.get("line"),
        title=f"test not evaluated ({reason}): {test['id']}",
    )


def _live(test: Test) -> Annotation:
    replay = test["replay"]
    cost = replay.get("live_cost_usd")
    priced = f" (${cost:.4f})" if cost else ""
    return Annotation(
        level="notice",
        message=f"{test['id']} made {replay['live']} live model call(s){priced}",
        file=test["file"],
        line=test.get("line"),
        title="live model calls",
    )


def from_report(report: Report) -> list[Annotation]:
    """Every annotation of the report, most important first; one per test at most for failures."""
    misses, failures, not_evaluated, live = [], [], [], []
    for test in report.get("tests", []):
        miss = _miss(test)
        if miss is not None:
            misses.append(miss)
        elif test["outcome"] in ("failed", "error"):
            failures.append(_failure(test))
        if test["outcome"] == "not_evaluated" and miss is None:
            not_evaluated.append(_not_evaluated(test))
        if replay_of(test).get("live"):
            live.append(_live(test))
    return misses + failures + not_evaluated + live


def to_check_run(annotation: Annotation) -> dict[str, Any]:
    """The Checks API shape; it needs a path and a line, so an unlocated finding goes to line 1."""
    line = annotation.line or 1
    entry: dict[str, Any] = {
        "path": annotation.file or ".",
        "start_line": line,
        "end_line": line,
        "annotation_level": CHECK_LEVELS[annotation.level],
        "message": cut(annotation.message, CHECK_MESSAGE_MAX_BYTES, unit="bytes"),
    }
    if annotation.title:
        entry["title"] = cut(annotation.title, CHECK_TITLE_MAX)
    return entry
