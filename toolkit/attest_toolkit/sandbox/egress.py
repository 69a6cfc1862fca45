"""The egress record a run carries: report-v2's `summary.egress`, and its environment-variable form.

The sandbox hands the record to the command it runs through the environment, so a test runner inside
(the pytest plugin, a re-executed `attest replay`) can put it in its report without probing again.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

ENV_MODE = "ATTEST_EGRESS_MODE"
ENV_VERIFIED = "ATTEST_ISOLATION_VERIFIED"
ENV_PROBE = "ATTEST_EGRESS_PROBE"
ENV_STRATEGY = "ATTEST_EGRESS_STRATEGY"
# The in-process guard's own switch (the seed's ATTEST_EGRESS=block).
ENV_GUARD = "ATTEST_EGRESS"
GUARD_BLOCK = "block"

MODES = ("none", "guard", "off")

Egress = dict[str, Any]


def egress_record(mode: str, verified: bool, probe: str | None, strategy: str | None) -> Egress:
    """A `summary.egress` object as report-v2 defines it."""
    return {"mode": mode, "isolation_verified": verified, "probe": probe, "strategy": strategy}


def to_environ(egress: Egress) -> dict[str, str]:
    return {
        ENV_MODE: egress["mode"],
        ENV_VERIFIED: "true" if egress["isolation_verified"] else "false",
        ENV_PROBE: egress.get("probe") or "",
        ENV_STRATEGY: egress.get("strategy") or "",
    }


def egress_from_environ(environ: Mapping[str, str]) -> Egress | None:
    """The record a surrounding `attest sandbox` passed down, or None when there is none (or it is bad).

    With no sandbox around but ATTEST_EGRESS=block set, the record says "guard", unverified.
    """
    mode = environ.get(ENV_MODE)
    if mode in MODES:
        return egress_record(
            mode,
            environ.get(ENV_VERIFIED) == "true",
            environ.get(ENV_PROBE) or None,
            environ.get(ENV_STRATEGY) or None,
        )
    if environ.get(ENV_GUARD) == GUARD_BLOCK:
        return egress_record("guard", False, None, None)
    return None
