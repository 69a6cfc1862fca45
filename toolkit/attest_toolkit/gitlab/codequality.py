"""A report's replay misses and live calls as GitLab's Code Quality report, shown in the merge request.

GitLab reads a subset of the CodeClimate format: a JSON array of issues, each with `description`,
`check_name`, `fingerprint`, `severity` and `location.path` / `location.lines.begin`
(https://docs.gitlab.com/ci/testing/code_quality/#code-quality-report-format). It keys issues by
fingerprint, a duplicate replacing the earlier one, and compares the merge request's report with the
target branch's by fingerprint: so a fingerprint hashes what a finding is (the check, the path, the
test, the miss's component) and never its line, its duration or the commit, or a moved line would
show as one issue fixed and another introduced. Paths are from the repository root, or GitLab shows
the issue on no file of the diff. Every string is redacted as the note's are.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from ..credentials.scan import Secrets
from ..fixtures.document import atomic_write
from ..forge.paths import from_root, repository_prefix
from ..forge.trim import cut
from ..report.build import Report, Test, load_report, redact_report, replay_of, run_secrets

MISS_CHECK = "attest-replay-miss"
LIVE_CHECK = "attest-live-call"
DESCRIPTION_CHARS = 1000


def fingerprint(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode("utf-8")).hexdigest()


def _miss(test: Test) -> dict[str, Any] | None:
    miss = replay_of(test).get("miss")
    if not miss:
        return None
    location = miss.get("location") or {}
    path = location.get("file") or test["file"]
    line = location.get("line") if location.get("file") else test.get("line")
    component = str(miss.get("component") or "")
    return _issue(
        f"attest replay miss ({component}) in {test['id']}: {miss.get('message') or ''}",
        MISS_CHECK,
        fingerprint(MISS_CHECK, path, test["id"], component),
        "major",
        path,
        line,
    )


def _live(test: Test) -> dict[str, Any] | None:
    live = replay_of(test).get("live")
    if not live:
        return None
    return _issue(
        f"{test['id']} made {live} live model call(s): it needs a recording to replay offline",
        LIVE_CHECK,
        fingerprint(LIVE_CHECK, test["file"], test["id"], ""),
        "minor",
        test["file"],
        test.get("line"),
    )


def _issue(description: str, check: str, print_: str, severity: str, path: str, line: Any) -> dict[str, Any]:
    return {
        "description": cut(" ".join(description.split()), DESCRIPTION_CHARS),
        "check_name": check,
        "fingerprint": print_,
        "severity": severity,
        "location": {"path": path, "lines": {"begin": line if isinstance(line, int) and line > 0 else 1}},
    }


def issues(report: Report, prefix: str = "", secrets: Secrets | None = None) -> list[dict[str, Any]]:
    """One issue per replay miss and per test with live calls, in the report's order."""
    shown = from_root(redact_report(report, secrets or run_secrets()), prefix)
    found: dict[str, dict[str, Any]] = {}
    for test in shown["tests"]:
        for issue in (_miss(test), _live(test)):
            if issue is not None:
                found.setdefault(issue["fingerprint"], issue)
    return list(found.values())


def write_codequality(report_path: Path, output: Path, project_dir: Path = Path()) -> int:
    """Write the Code Quality report of `report_path`; the number of issues."""
    found = issues(load_report(report_path), repository_prefix(project_dir.resolve()))
    atomic_write(output, json.dumps(found, indent=2, ensure_ascii=False) + "\n", mode=0o644)
    return len(found)
