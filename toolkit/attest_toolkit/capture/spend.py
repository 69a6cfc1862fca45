"""A spend ceiling for recording (`attest capture --max-cost-usd X`): refuse to start a refresh whose
estimate is over it, and stop going live once the calls reached it.

The estimate is the fixture's own recorded usage priced from the built-in table: what re-recording
every call would cost at today's prices, an upper bound for `--only-misses`. The ceiling reaches the
recording proxy through ATTEST_MAX_COST_USD, so a refresh that re-runs a pytest test keeps it too.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from ..errors import AttestError, UsageError
from ..fixtures.document import Fixture
from ..fixtures.view import sse_payloads
from ..providers import COUNTED
from ..replay.pricing import Usage, cost_usd, usage_of_json, usage_of_sse

VARIABLE = "ATTEST_MAX_COST_USD"


class OverBudget(AttestError):
    """The estimate of a refresh is over the ceiling: nothing ran (exit 3, could not run)."""


@dataclass(frozen=True)
class Estimate:
    usd: float
    calls: int
    unpriced: int


def estimate(doc: Fixture) -> Estimate:
    """What re-recording every model call of `doc` would cost, from its recorded usage."""
    usd, unpriced, calls = 0.0, 0, 0
    for item in doc["channels"].get("model") or []:
        if item.get("provider") in COUNTED:
            continue
        calls += 1
        request = item["request"].get("json")
        model = request.get("model") if isinstance(request, dict) else None
        cost = cost_usd(model if isinstance(model, str) else None, _usage(item["response"]["body"]))
        if cost is None:
            unpriced += 1
        else:
            usd += cost
    return Estimate(usd, calls, unpriced)


def _usage(body: dict) -> Usage | None:
    if "json" in body:
        return usage_of_json(body["json"])
    if "sse" in body:
        return usage_of_sse([p for p in sse_payloads(body["sse"]) if isinstance(p, dict)])
    return None


def check_estimate(doc: Fixture, ceiling: float, where: str) -> Estimate:
    """The estimate, or OverBudget when it is over `ceiling` or cannot be priced whole."""
    found = estimate(doc)
    if found.unpriced:
        raise OverBudget(
            f"{found.unpriced} of {found.calls} recorded calls cannot be priced (model not in the price "
            f"table or no usage), so the refresh cannot be shown to stay under --max-cost-usd {ceiling:g}; "
            "nothing ran",
            where,
        )
    if found.usd > ceiling:
        raise OverBudget(
            f"re-recording its {found.calls} calls is estimated at ${found.usd:.6f} from their recorded "
            f"usage, over --max-cost-usd {ceiling:g}; nothing ran",
            where,
        )
    return found


def parse_ceiling(value: str | float | None, source: str = "--max-cost-usd") -> float | None:
    """A ceiling in USD (a finite number, zero or more), or None when not given."""
    if value is None or value == "":
        return None
    try:
        ceiling = float(value)
    except ValueError:
        raise UsageError(f"{source} must be a number of US dollars, not {value!r}") from None
    if not math.isfinite(ceiling) or ceiling < 0:
        raise UsageError(f"{source} must be a finite number of US dollars, zero or more, not {value!r}")
    return ceiling


def ceiling_from(env: Mapping[str, str]) -> float | None:
    return parse_ceiling(env.get(VARIABLE), VARIABLE)


def refusal(ceiling: float | None, usd: float, unpriced: int) -> str | None:
    """Why the next live call must not go out, or None: the calls so far reached the ceiling, or one
    of them could not be priced (its cost, so the total, is unknown)."""
    if ceiling is None:
        return None
    if unpriced:
        return f"a live call could not be priced, so the spend is unknown; stopped under --max-cost-usd {ceiling:g}"
    if usd >= ceiling:
        return f"the live calls cost ${usd:.6f}, reaching --max-cost-usd {ceiling:g}; stopped"
    return None
