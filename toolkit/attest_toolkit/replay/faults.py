"""Fault injection on replay: a `--fault SPEC` parsed into a plan, and the faults one session meets.

SPEC is `[SELECTOR:]KIND[,PARAM=VALUE]...`: SELECTOR `call=N` (the session's Nth model request,
1-based, every request counted, retries included; the default is `call=1`) or `every`; KIND one of
`status=CODE` (PARAM `retry-after=SECONDS`), `timeout`, `disconnect`, `cut=K`, `latency=MS`,
`pace=MS`. A status, a timeout or a disconnect answers in place of a recording and takes none (the
client's retry gets what the first attempt would have got); latency, pace and cut serve the recording.

This module only parses and chooses; answering a request with its fault is `replay.fault_serve`
(aiohttp's side), so the CLI and the pytest plugin read a SPEC without loading the web layer.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from ..errors import UsageError

if TYPE_CHECKING:  # the engine's loop has it; parsing a SPEC (the CLI, the pytest plugin) does not need it
    import asyncio

# The kinds, as report-v2's schema spells them (`fault_list[].kind`; tests/unit/test_fault_plan.py keeps
# the two equal): the engine sits below the report and cannot read its generated model.
Kind = Literal["status", "timeout", "disconnect", "cut", "latency", "pace"]
STATUSES = (429, 500, 502, 503, 504, 529)
# Faults answered instead of a recording (none is taken); the others change how a recording is served.
WITHOUT_RECORDING: frozenset[str] = frozenset({"status", "timeout", "disconnect"})
# Seconds the engine holds a `timeout` request when the client never gives up: then it closes the
# connection and says so. Longer than any sensible client timeout in a test, short enough for a run.
TIMEOUT_CEILING = 30.0
_VALUED = {"status", "cut", "latency", "pace"}
_BARE = {"timeout", "disconnect"}


@dataclass(frozen=True)
class Fault:
    spec: str  # as the user wrote it, for the summary and the report
    kind: Kind
    value: int = 0  # the status code, the events before a cut, or milliseconds
    call: int | None = 1  # the request it applies to; None: every request
    retry_after: int | None = None  # seconds, for a status

    def applies_to(self, number: int) -> bool:
        return self.call is None or self.call == number


def parse_fault(spec: str) -> Fault:
    """One SPEC as a Fault; a UsageError naming the SPEC and what is wrong with it."""
    try:
        return _parse(spec.strip())
    except ValueError as exc:
        raise UsageError(f"--fault {spec!r}: {exc}") from None


def parse_faults(specs: Iterable[str]) -> tuple[Fault, ...]:
    return tuple(parse_fault(s) for s in specs)


def _parse(spec: str) -> Fault:
    original = spec
    call: int | None = 1
    head, colon, rest = spec.partition(":")
    if colon:
        call = _selector(head)
        spec = rest
    kind_part, *params = spec.split(",")
    name, eq, raw = kind_part.partition("=")
    if name in _VALUED and not eq:
        raise ValueError(f"{name} needs a value ({name}=N)")
    if name in _BARE and eq:
        raise ValueError(f"{name} takes no value")
    if name not in _VALUED | _BARE:
        raise ValueError("the kind must be status=CODE, timeout, disconnect, cut=K, latency=MS or pace=MS")
    value = _number(name, raw) if eq else 0
    if name == "status" and value not in STATUSES:
        raise ValueError(f"status must be one of {', '.join(map(str, STATUSES))}, not {value}")
    retry_after = _params(name, params)
    return Fault(original, name, value, call, retry_after)  # type: ignore[arg-type]


def _selector(text: str) -> int | None:
    if text == "every":
        return None
    name, _, raw = text.partition("=")
    if name != "call":
        raise ValueError(f"the selector must be call=N or every, not {text!r}")
    number = _number("call", raw)
    if number < 1:
        raise ValueError("call=N counts from 1")
    return number


def _number(name: str, raw: str) -> int:
    if not raw.isdigit():
        raise ValueError(f"{name} must be a whole number, not {raw!r}")
    return int(raw)


def _params(kind: str, params: Sequence[str]) -> int | None:
    retry_after = None
    for param in params:
        name, _, raw = param.partition("=")
        if name != "retry-after" or kind != "status":
            raise ValueError(f"unknown parameter {param!r} (only status takes retry-after=SECONDS)")
        retry_after = _number("retry-after", raw)
    return retry_after


class SessionFaults:
    """The faults one session injects: the model requests counted, those faulted, and the waits of
    `timeout`, `latency` and `pace` (cut short when the session closes, so a close or the engine's
    stop never waits for them)."""

    def __init__(self, plan: Sequence[Fault]) -> None:
        self.plan = tuple(plan)
        self.requests = 0
        self.injected: list[dict[str, Any]] = []
        self.notes: list[str] = []
        self._released: asyncio.Event | None = None

    def next_request(self) -> Fault | None:
        """Count a model request; the fault it meets (the first in the plan that applies), if any."""
        self.requests += 1
        return next((f for f in self.plan if f.applies_to(self.requests)), None)

    def injected_one(self, fault: Fault) -> None:
        self.injected.append({"call": self.requests, "fault": fault.spec, "kind": fault.kind})

    async def hold(self) -> bool:
        """Wait until the session closes or the ceiling passes; True when the ceiling did."""
        return await self.wait(TIMEOUT_CEILING)

    async def wait(self, seconds: float) -> bool:
        """Wait `seconds`, or less when the session closes meanwhile; True when they all passed."""
        import asyncio

        if self._released is None:
            self._released = asyncio.Event()
        try:
            await asyncio.wait_for(self._released.wait(), seconds)
        except TimeoutError:
            return True
        return False

    def release(self) -> None:
        """Let every held request go (the session is closing)."""
        if self._released is not None:
            self._released.set()

    def summary(self) -> dict[str, Any]:
        """A session summary's fault facts, as its misses are: the count, each one, and the notes."""
        return {
            "faults": len(self.injected),
            "fault_list": list(self.injected),
            "fault_notes": list(self.notes),
        }
