"""One replay session: the fixtures a test (or a command run) replays, and what happened.

Lookup is by request key in a prebuilt index; identical requests consume successive recordings in
order. A miss is diagnosed against the next unused recording of the same endpoint.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..credentials.scan import Secrets
from ..normalize import describe_components
from ..normalize.rules import Rule, masked_hashes
from ..normalize.served import Sent
from ..tools.match import CallKey, ToolRecording
from . import diagnose, rerecord
from .diagnose import Miss, MissKind
from .faults import Fault, SessionFaults
from .index import LoadedFixture, Recording, index_recordings
from .modes import Mode
from .tool_index import ToolChannel

KEY_PREFIX = 12  # enough to tell calls apart, short enough for a summary line


@dataclass
class Counters:
    replayed: int = 0
    live: int = 0
    live_cost_usd: float = 0.0
    unpriced: int = 0
    otlp_requests: int = 0
    tool_replayed: int = 0
    tool_live: int = 0
    misses: list[dict[str, Any]] = field(default_factory=list)
    live_calls: list[dict[str, Any]] = field(default_factory=list)
    drifts: list[dict[str, Any]] = field(default_factory=list)
    # The request key of each model call in order (a prefix): two runs of a deterministic agent send
    # the same sequence (`--repeat` compares them).
    keys: list[str] = field(default_factory=list)


def tool_servers(fixtures: Sequence[LoadedFixture]) -> dict[str, Any]:
    """The tool servers `fixtures` declare, by name (a later fixture's declaration wins)."""
    return {name: decl for f in fixtures for name, decl in f.tools.items()}


class Session:
    def __init__(
        self,
        fixtures: list[LoadedFixture],
        mode: Mode = Mode.STRICT,
        no_live: bool = False,
        match: str = "strict",
        secrets: Secrets | None = None,
        rules: tuple[Rule, ...] = (),
        test: str | None = None,
        faults: Sequence[Fault] = (),
    ) -> None:
        self.fixtures = fixtures
        self.test = test  # the pytest node id that opened the session, for a miss's re-record hint
        self.secrets = secrets  # to decompose a recording a miss is compared with; None: no paths named
        self.mode: Mode = mode
        self.no_live = no_live
        self.match = match
        self._position = 0  # lenient matching: the next recording, whatever is asked
        if len(fixtures) == 1:
            self.recordings: tuple[Recording, ...] = fixtures[0].recordings
            self.by_key = fixtures[0].by_key
            self.served = fixtures[0].served
            # Shared by the fixture's sessions: a call's key depends on the fixture's served values.
            self.sent_keys: dict[Sent, str] = fixtures[0].keys
        else:
            self.recordings = tuple(r for f in fixtures for r in f.recordings)
            self.by_key = index_recordings(self.recordings)
            self.served = {k: v for f in fixtures for k, v in f.served.items()}
            self.sent_keys = {}
        self._taken: dict[str, int] = {}
        self.compared: tuple[int, Recording] | None = None  # the recording the last miss was compared with
        self._used = bytearray(len(self.recordings))
        self.counters = Counters()
        self.faults = SessionFaults(faults)  # what its model requests meet (replay.faults)
        self.tools = ToolChannel(tuple(r for f in fixtures for r in f.tool_recordings))
        self.tool_servers = tool_servers(fixtures)
        # Ignore rules by fixture: the fixture's own, then the run's (a marker's, the policy's).
        self._rules = {f.name: f.rules + rules for f in fixtures if f.rules or rules}
        self._masked: dict[int, tuple[dict[str, Any], dict[str, str]]] = {}  # position -> its masked hashes
        # The runner that holds this session's hit table (replay.lane): told each recording taken here.
        self.tell: Callable[[int], None] | None = None
        self.noted = 0  # recordings the runner answered with and told us of

    @property
    def name(self) -> str:
        return self.fixtures[0].name if self.fixtures else "unnamed"

    def lookup(
        self,
        key: str,
        hashes: dict[str, str],
        model: str | None,
        endpoint: str,
        parts: tuple[dict, ...] | None = None,
        components: dict[str, Any] | None = None,
    ) -> Recording | Miss:
        """The recording for a request; `components` (its normalized components) let a miss name the
        paths that changed."""
        self.counters.keys.append(key[:KEY_PREFIX])
        if self.match == "lenient":
            found = self._by_position(key, hashes, model, endpoint, components)
            return self._hinted(found) if isinstance(found, Miss) else found
        position = self._next(key)
        if position is not None:
            return self._take(key, position)
        if self._rules and components is not None:
            allowed = self._ignoring(hashes, model, endpoint, components)
            if allowed is not None:
                return allowed
        if key in self.by_key:
            return self._hinted(diagnose.duplicate(self.name))
        return self._hinted(self._diagnose(hashes, model, endpoint, parts, components))

    def lookup_tool(self, call: CallKey) -> ToolRecording | Miss:
        found = self.tools.lookup(call, self.name)
        return self._hinted(found) if isinstance(found, Miss) else found

    def take_hit(self, key: str) -> Recording | None:
        """The next recording for `key` when it can be served from its prebuilt bytes (consumed, as
        `lookup` does); None, with nothing changed, for anything else."""
        position = self._next(key)
        if position is None or self.recordings[position].wire is None:
            return None
        self.counters.keys.append(key[:KEY_PREFIX])
        return self._take(key, position)

    def _next(self, key: str) -> int | None:
        """Where the next unused recording for `key` is, if one is left."""
        positions = self.by_key.get(key)
        if not positions:
            return None
        taken = self._taken.get(key, 0)
        while taken < len(positions) and self._used[positions[taken]]:  # served under an ignore rule
            taken += 1
            self._taken[key] = taken
        return positions[taken] if taken < len(positions) else None

    def _take(self, key: str, position: int) -> Recording:
        self._taken[key] = self._taken.get(key, 0) + 1
        self._mark(position)
        return self.recordings[position]

    def _mark(self, position: int) -> None:
        self._used[position] = 1
        if self.tell is not None:
            self.tell(position)

    def take_noted(self, position: int) -> None:
        """The runner answered a call with the recording at `position` (replay.lane): taken and
        counted as a hit served here is."""
        if not 0 <= position < len(self.recordings):
            return
        self._used[position] = 1
        self.noted += 1
        self.counters.replayed += 1
        self.counters.keys.append(self.recordings[position].key[:KEY_PREFIX])

    def _hinted(self, miss: Miss) -> Miss:
        """A miss whose re-record command fits how its fixture was made and is replayed (see
        `rerecord`): `attest capture --refresh`, naming the fixtures directory when it is not the
        default, for a recorded command; else `pytest --attest-record=all` with the test that opened
        the session (or the one that recorded the fixture); else, when no test replays it, `attest
        capture --name`."""
        loaded = next((f for f in self.fixtures if f.name == miss.fixture), None)
        if loaded is not None and rerecord.by_command(loaded.source):
            return diagnose.naming_fixtures_dir(miss, diagnose.fixtures_dir_flag(loaded.path))
        test = self.test or (loaded.source.get("test") if loaded is not None else None)
        if test is None and loaded is not None:
            where = diagnose.fixtures_dir_flag(loaded.path)
            return replace(miss, message=rerecord.for_command(miss.message, miss.fixture, where))
        return replace(miss, message=rerecord.for_test(miss.message, test))

    def _values(self, rec: Recording, components: dict[str, Any] | None) -> tuple[dict, dict] | None:
        """The recorded and the sent components, normalized alike, when both can be had."""
        if components is None or rec.request is None or self.secrets is None:
            return None
        return describe_components(*rec.request, self.secrets), components

    def _difference(
        self, rec: Recording, hashes: dict[str, str], model: str | None, components: dict[str, Any] | None
    ) -> Miss:
        values = self._values(rec, components)
        return diagnose.first_difference(rec.hashes, hashes, rec.model, model, rec.fixture, values)

    def _ignoring(
        self, hashes: dict[str, str], model: str | None, endpoint: str, components: dict[str, Any]
    ) -> Recording | None:
        """The first unused recording of the endpoint that differs only where its fixture's ignore
        rules allow, taken and reported as drift; None when there is none."""
        for position, used in enumerate(self._used):
            rec = self.recordings[position]
            rules = self._rules.get(rec.fixture)
            if used or not rules or rec.endpoint != endpoint or rec.request is None or self.secrets is None:
                continue
            if position not in self._masked:
                recorded = describe_components(*rec.request, self.secrets)
                self._masked[position] = (recorded, masked_hashes(recorded, rules))
            recorded, wanted = self._masked[position]
            if masked_hashes(components, rules) != wanted:
                continue
            self._mark(position)
            values = (recorded, components)
            difference = diagnose.first_difference(rec.hashes, hashes, rec.model, model, rec.fixture, values)
            self._note_drift(position, diagnose.drift(position + 1, difference))
            return rec
        return None

    def _note_drift(self, position: int, drift: Miss) -> None:
        self.counters.drifts.append(
            {
                "kind": "model_request_drift",
                "at": position,
                "message": drift.message,
                "component": drift.component,
                "paths": list(drift.paths),
            }
        )

    def _by_position(
        self,
        key: str,
        hashes: dict[str, str],
        model: str | None,
        endpoint: str,
        components: dict[str, Any] | None,
    ) -> Recording | Miss:
        """ctxmesh's model matching: the Nth call gets the Nth recording; a changed request is drift.
        A call to another method or path (so another API or provider) is a miss, never served."""
        position = self._position
        if position >= len(self.recordings):
            self._position += 1
            return diagnose.overflow(len(self.recordings), self.name)
        rec = self.recordings[position]
        if not rec.same_endpoint(endpoint, model):
            return diagnose.endpoint_changed(rec.endpoint, endpoint, rec.fixture)
        self._position += 1
        self._mark(position)
        if rec.key != key:
            self._note_drift(
                position, diagnose.drift(position + 1, self._difference(rec, hashes, model, components))
            )
        return rec

    def _next_unused(self, endpoint: str) -> int | None:
        """The next unused recording of `endpoint`, else the next unused one of any endpoint."""
        first = None
        for position, used in enumerate(self._used):
            if used:
                continue
            if self.recordings[position].endpoint == endpoint:
                return position
            first = position if first is None else first
        return first

    def _diagnose(
        self,
        hashes: dict[str, str],
        model: str | None,
        endpoint: str,
        parts: tuple[dict, ...] | None,
        components: dict[str, Any] | None = None,
    ) -> Miss:
        position = self._next_unused(endpoint)
        if position is None:
            return diagnose.overflow(len(self.recordings), self.name)
        rec = self.recordings[position]
        self.compared = (position, rec)
        if not rec.same_endpoint(endpoint, model):
            return diagnose.endpoint_changed(rec.endpoint, endpoint, rec.fixture)
        difference = self._difference(rec, hashes, model, components)
        if difference.component == MissKind.PARAMS and rec.parts is not None and parts is not None:
            return diagnose.upload_changed(rec.parts, parts, rec.fixture) or difference
        return difference

    # --- accounting --------------------------------------------------------------------------------

    def record_miss(self, miss: Miss, *, not_evaluated: bool) -> None:
        self.counters.misses.append(
            {
                "message": miss.message,
                "component": miss.component,
                "fixture": miss.fixture,
                "not_evaluated": not_evaluated,
                "paths": list(miss.paths),
            }
        )

    def record_live(self, cost: float | None, model: str | None = None) -> None:
        self.counters.live += 1
        self.counters.live_calls.append(
            {"model": model, "cost_usd": None if cost is None else round(cost, 6)}
        )
        if cost is None:
            self.counters.unpriced += 1
        else:
            self.counters.live_cost_usd += cost

    def summary(self) -> dict[str, Any]:
        c = self.counters
        faults = self.faults.summary() if self.faults.plan else {}
        return {
            **faults,
            "mode": self.mode,
            "fixtures": [str(f.path) for f in self.fixtures],
            "recorded": len(self.recordings),
            "unused": len(self._used) - sum(self._used),
            "replayed": c.replayed,
            "live": c.live,
            "live_cost_usd": round(c.live_cost_usd, 6),
            "unpriced": c.unpriced,
            "misses": len(c.misses),
            "not_evaluated": sum(1 for m in c.misses if m["not_evaluated"]),
            "miss_list": list(c.misses),
            "live_list": list(c.live_calls),
            "otlp_requests": c.otlp_requests,
            "drift": len(c.drifts),
            "drift_list": list(c.drifts),
            "tool_recorded": len(self.tools.recordings),
            "tool_unused": self.tools.unused,
            "tool_replayed": c.tool_replayed,
            "tool_live": c.tool_live,
            "keys": list(c.keys),
        }
