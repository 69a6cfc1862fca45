"""A spend ceiling for recording (`attest capture --max-cost-usd X`): refuse to start a refresh whose
estimate is over it, and let no call go live once the calls out may have reached it.

A refresh's estimate is the fixture's own recorded usage priced from the built-in table: what
re-recording every call would cost at today's prices, an upper bound for `--only-misses`. While
recording, a call counts from the moment it leaves at the most it can cost (its request and its
output cap priced, `pricing.estimate_usd`) until the provider's answer prices it, so calls sent at
once spend no more than the same calls one at a time. The ceiling reaches the recording proxy through
ATTEST_MAX_COST_USD, so a refresh that re-runs a pytest test keeps it too.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from ..errors import AttestError, UsageError
from ..fixtures.document import Fixture
from ..fixtures.view import sse_payloads
from ..pricing.cost import Usage, cost_usd, estimate_usd, usage_of_json, usage_of_sse
from ..providers import COUNTED, output_limit

VARIABLE = "ATTEST_MAX_COST_USD"
# A refused call's status: no official SDK retries a 402 (they retry 408, 409, 429 and 5xx, and
# botocore a throttling code), and Anthropic answers it for billing.
REFUSED_STATUS = 402


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


@dataclass
class LiveCost:
    """What the calls that went to a provider cost, priced from the built-in table from the usage
    they answered with (`usd`, `unpriced` of them without), and what the calls in flight may cost."""

    calls: int = 0
    usd: float = 0.0
    unpriced: int = 0
    # A call without usage in its answer (cut off, an error, a stream without its usage chunk) counts at
    # its estimate; one whose model is not in the table has none, and the spend is unknown.
    estimated: float = 0.0
    unknown: int = 0
    in_flight: dict[int, float | None] = field(default_factory=dict)  # each call out: its estimate
    _tickets: int = 0

    def leave(self, estimate: float | None) -> int:
        """Count a call that is about to go out at `estimate`; returns its ticket for `settle`."""
        self._tickets += 1
        self.in_flight[self._tickets] = estimate
        return self._tickets

    def settle(self, ticket: int, cost: float | None) -> None:
        """Price a call from its answer (`cost`, None without usage); once per ticket, later calls
        are ignored, so a call is settled where it ended, whichever way that was."""
        if ticket not in self.in_flight:
            return
        estimate = self.in_flight.pop(ticket)
        self.calls += 1
        if cost is not None:
            self.usd += cost
            return
        self.unpriced += 1
        if estimate is None:
            self.unknown += 1
        else:
            self.estimated += estimate

    def at_most(self) -> float | None:
        """The most the calls out can have cost, or None when one of them cannot be priced."""
        pending = list(self.in_flight.values())
        if self.unknown or None in pending:
            return None
        return self.usd + self.estimated + sum(e for e in pending if e is not None)


def call_estimate(model: str | None, body: object, raw: bytes) -> float | None:
    """The most a call with request body `raw` (`body` its JSON) can cost (`pricing.estimate_usd`)."""
    return estimate_usd(model, len(raw), output_limit(body))


def refusal(ceiling: float | None, cost: LiveCost) -> str | None:
    """Why the next live call must not go out, or None: the calls out, counted at what their answers
    cost or at most, may have reached the ceiling, or one of them cannot be priced (so neither can
    the total)."""
    if ceiling is None:
        return None
    most = cost.at_most()
    if most is None:
        return f"a live call could not be priced, so the spend is unknown; stopped under --max-cost-usd {ceiling:g}"
    if most < ceiling:
        return None
    if most == cost.usd:
        return f"the live calls cost ${most:.6f}, reaching --max-cost-usd {ceiling:g}; stopped"
    return (
        f"the live calls may cost up to ${most:.6f} (${cost.usd:.6f} priced from their answers, the rest "
        f"what calls in flight or without usage can cost at most), reaching --max-cost-usd {ceiling:g}; stopped"
    )
