"""What a change is compared with: the base commit a forge names for it."""

from __future__ import annotations


def base_commit(value: str | None) -> str | None:
    """The base to compare with, or None. A push that created its branch comes after no commit, which
    forges write as forty zeros: there is nothing to compare with."""
    if not value or not value.strip("0"):
        return None
    return value
