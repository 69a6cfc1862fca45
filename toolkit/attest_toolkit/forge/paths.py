"""Report paths as a forge wants them: relative to the repository root.

A report's paths are relative to where the tests ran. With the action's `working-directory` that is a
subdirectory of the repository, while annotations, a comment's or a note's links and Code Quality
entries need paths from the repository root, or they land nowhere on the diff. The prefix (the
working directory relative to the root) is added for display only: the policy's per-path overrides
keep matching the report's own paths.
"""

from __future__ import annotations

import copy
import posixpath
from pathlib import Path

from ..repo_root import toplevel
from ..report.build import Report, replay_of


def repository_prefix(cwd: Path, workspace: str | None = None) -> str:
    """`cwd` relative to the repository root (git's top level, else the forge's workspace); "" at the root."""
    root = toplevel(cwd) or (Path(workspace) if workspace else None)
    if root is None:
        return ""
    try:
        relative = cwd.resolve().relative_to(root.resolve())
    except ValueError:
        return ""
    return "" if relative == Path(".") else relative.as_posix()


def _join(prefix: str, file: str) -> str:
    if not prefix or not file or file.startswith("/"):
        return file
    return posixpath.normpath(posixpath.join(prefix, file))


def from_root(report: Report, prefix: str) -> Report:
    """A copy of `report` whose test and miss paths start at the repository root."""
    if not prefix:
        return report
    shown = copy.deepcopy(report)
    for test in shown["tests"]:
        test["file"] = _join(prefix, test["file"])
        location = (replay_of(test).get("miss") or {}).get("location")
        if location:
            location["file"] = _join(prefix, location["file"])
    return shown
