"""Flaky agents: replay the same run several times (`attest replay --repeat N`, `pytest --attest-repeat N`)
and name what sent a different sequence of requests.

Replay answers the same request the same way, so an agent whose request keys differ between runs
depends on something replay does not fix: the order of parallel tool calls, a timestamp or a random
value in a prompt, a retry after a timeout. Such a test passes or misses by chance in CI.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

# The id part `pytest --attest-repeat N` gives each repetition of a test: `test_x[attest-run2]`, and
# beside a parametrized test's own ids wherever pytest puts it: `[attest-run2-p1]`, `[p1-attest-run2]`.
RUN_ID = re.compile(r"(\[|-)attest-run(\d+)(\]|-)")


def divergence(runs: Sequence[Sequence[str]]) -> str | None:
    """How the runs' request key sequences differ (runs and calls counted from 1), or None when they
    are all the same."""
    if not runs:
        return None
    first = list(runs[0])
    for number, keys in enumerate(runs[1:], start=2):
        keys = list(keys)
        if keys == first:
            continue
        call = next((i for i, (a, b) in enumerate(zip(first, keys, strict=False), start=1) if a != b), None)
        if call is not None:
            return f"the request keys differ between run 1 and run {number} at model call {call}"
        return f"run 1 made {len(first)} model calls and run {number} made {len(keys)}"
    return None


def base_id(test_id: str) -> tuple[str, int | None]:
    """A repeated test's own id and its run number (None when it is no repetition)."""
    match = RUN_ID.search(test_id)
    if match is None:
        return test_id, None
    left, number, right = match.groups()
    # what stays between the ids around it: nothing when it was the only one
    kept = {("[", "]"): "", ("[", "-"): "[", ("-", "]"): "]"}.get((left, right), "-")
    return test_id[: match.start()] + kept + test_id[match.end() :], int(number)


def run_label(number: int) -> str:
    return f"attest-run{number}"
