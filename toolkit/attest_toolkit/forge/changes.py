"""What a change is compared with (the base commit a forge names for it), and what it re-recorded."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..fixtures.diff import changes_since
from ..fixtures.remote.pinned import pinned_reader


def base_commit(value: str | None) -> str | None:
    """The base to compare with, or None. A push that created its branch comes after no commit, which
    forges write as forty zeros: there is nothing to compare with."""
    if not value or not value.strip("0"):
        return None
    return value


def fixture_changes(
    base: str | None, fixtures_dir: Path, root: Path | None = None
) -> list[dict[str, Any]] | None:
    """What the change since `base` re-recorded (a pinned fixture read from the object store), or None
    without a base; AttestError when git cannot compare."""
    if base is None:
        return None
    root = root or Path.cwd()
    return changes_since(root, base, fixtures_dir, pinned_reader(root / fixtures_dir))
