"""Where a project's policy file is looked for: what the pytest plugin checks before it loads the
policy's reader (a run with no policy file, most of them, never imports it)."""

from __future__ import annotations

from pathlib import Path

DEFAULT_PATHS = (Path(".attest/policy.yml"), Path(".attest/policy.yaml"), Path(".attest/policy.json"))


def default_policy_path(root: Path | None = None) -> Path | None:
    """The first of `.attest/policy.yml|.yaml|.json` under `root` that exists, or None. Without a root
    it is relative to the working directory, and is shown as the user would type it."""
    base = root or Path()
    return next((base / p for p in DEFAULT_PATHS if (base / p).is_file()), None)
