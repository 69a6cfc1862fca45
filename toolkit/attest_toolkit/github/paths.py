"""Report paths from the repository root: `forge/paths.py`'s, named here for the GitHub modules."""

from __future__ import annotations

from ..forge.paths import from_root, repository_prefix

__all__ = ["from_root", "repository_prefix"]
