"""The replay modes and match rules, and the mode a run gets by default.

Their own module, importing nothing of the package: the pytest plugin reads them at every pytest start,
replay or not, and must not pay for the engine's modules to do so.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Literal

Mode = Literal["strict", "auto", "off"]
MODES: tuple[str, ...] = ("strict", "auto", "off")
# strict: by request key (the default). lenient: ctxmesh's semantics, model calls by position, a
# changed request served anyway and reported as drift; more calls than recorded still miss.
MATCHES: tuple[str, ...] = ("strict", "lenient")


def in_ci(env: Mapping[str, str] = os.environ) -> bool:
    """CI is set to anything but an empty or false value (as GitHub Actions and most runners set it)."""
    return env.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def default_mode(env: Mapping[str, str] = os.environ) -> Mode:
    """strict when CI is set, so a pull-request check never goes live by accident; auto locally."""
    return "strict" if in_ci(env) else "auto"
