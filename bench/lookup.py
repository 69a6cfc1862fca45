"""Lookup and load: 10, 1,000 and 10,000 recorded interactions, against vcrpy on the same data.

Ours is what the engine does per request: parse the body, normalize and hash it into the request key,
look the key up in the session's index (and, on a miss, diagnose it against the next unused
recording). vcrpy's is what its httpx stub does per request: `can_play_response_for` then
`play_response` on a hit; on a miss, `can_play_response_for` then the CannotOverwriteExistingCassette
error, which ranks every recording. vcrpy matches on its default fields plus `body`, the only way it
can tell apart different requests to the same endpoint.

Load is reading a fixture as the engine does (parse, validate, credential scan, pre-encode, index)
against vcrpy loading the same interactions from its YAML cassette.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from attest_toolkit.normalize import parse_body, request_key
from attest_toolkit.replay.index import LoadedFixture, Recording, load
from attest_toolkit.replay.session import Session
from common import (
    JSON,
    NO_SECRETS,
    OPENAI,
    Row,
    cassette_interaction,
    chat_request,
    chat_response,
    exchange,
    median,
    ms,
    ratio,
    recordings,
    timed,
    write_cassette,
    write_fixture,
)

PATH = "/v1/chat/completions"
VCR_MATCH_ON = ("method", "scheme", "host", "port", "path", "query", "body")
TARGET = 1.5


@dataclass(frozen=True)
class Size:
    counts: tuple[int, ...]
    runs: int  # ours: batches of BATCH requests, interleaved over the sizes
    budget: float  # vcrpy: seconds per (size, hit or miss), at least MIN_VCR requests
    load_runs: int

    def loads_for(self, n: int) -> int:
        """Fewer load runs for the biggest fixture: vcrpy takes seconds to read 10,000 interactions."""
        return self.load_runs if n <= 1_000 else max(1, self.load_runs - 1)


FULL = Size((10, 1_000, 10_000), runs=7, budget=1.0, load_runs=3)
QUICK = Size((10, 1_000), runs=3, budget=0.2, load_runs=1)
BATCH = 300
MIN_VCR = 2


def question(i: int) -> dict:
    return chat_request(f"Question {i}: where is order O-{i}?")


def build(workdir: Path, n: int) -> tuple[Path, Path]:
    fixture = write_fixture(
        workdir,
        f"lookup-{n}",
        [exchange(question(i), chat_response(f"Order O-{i} ships today.")) for i in range(n)],
    )
    recs = recordings(fixture)
    cassette = write_cassette(
        workdir / f"lookup-{n}.yaml", [cassette_interaction(question(i), rec) for i, rec in enumerate(recs)]
    )
    return fixture, cassette


def sample(n: int, m: int) -> list[int]:
    """m positions spread evenly over n recordings (the last included), so a scan pays its average."""
    m = min(m, n)
    return sorted({round(k * (n - 1) / max(m - 1, 1)) for k in range(m)})


# --- ours ------------------------------------------------------------------------------------------


def ours_batch(loaded: LoadedFixture, bodies: list[bytes], hit: bool) -> float:
    """Seconds per request over BATCH requests: body parse + request key + index lookup (+ diagnosis
    on a miss), each pass over `bodies` in a fresh session (a hit consumes its recording)."""
    passes = max(1, BATCH // len(bodies))
    sessions = [Session([loaded], "strict") for _ in range(passes)]

    def work() -> None:
        for session in sessions:
            for raw in bodies:
                body = parse_body(raw, JSON)
                rk = request_key("openai", "POST", PATH, "", body, NO_SECRETS)
                found = session.lookup(rk.key, rk.hashes, rk.model, f"POST {PATH}")
                if isinstance(found, Recording) != hit:
                    raise AssertionError("a lookup went the wrong way")

    return timed(work) / (passes * len(bodies))


# --- vcrpy -----------------------------------------------------------------------------------------


def vcr_per_request(cassette_path: Path, bodies: list[bytes], budget: float, hit: bool) -> float:
    """Median seconds per request, timing requests one by one (cycling over `bodies`) until `budget`
    is spent: vcrpy's cost per request grows with the cassette, to seconds at 10,000 recordings."""
    from vcr.cassette import Cassette
    from vcr.errors import CannotOverwriteExistingCassetteException
    from vcr.record_mode import RecordMode
    from vcr.request import Request

    cassette = Cassette.load(path=str(cassette_path), record_mode=RecordMode.NONE, match_on=_vcr_matchers())
    headers = {"content-type": JSON, "accept": JSON}

    def one(raw: bytes) -> None:
        request = Request("POST", OPENAI + PATH, raw, headers)
        if cassette.can_play_response_for(request):
            cassette.play_response(request)
            if not hit:
                raise AssertionError("vcrpy found a request that was never recorded")
            return
        if hit:
            raise AssertionError("vcrpy missed a recorded request")
        CannotOverwriteExistingCassetteException(cassette=cassette, failed_request=request)

    # A random (seeded) order: when the budget stops the loop early, the requests timed are still
    # spread over the whole cassette, not bunched at its cheap beginning.
    bodies = random.Random(0).sample(bodies, len(bodies))
    times: list[float] = []
    while len(times) < MIN_VCR or sum(times) < budget:
        if len(times) % len(bodies) == 0:
            cassette.rewind()
        raw = bodies[len(times) % len(bodies)]
        times.append(timed(lambda raw=raw: one(raw)))
    return median(times)


def _vcr_matchers() -> tuple[Callable, ...]:
    from vcr import matchers

    return tuple(getattr(matchers, name) for name in VCR_MATCH_ON)


def vcr_load(cassette_path: Path) -> None:
    from vcr.cassette import Cassette
    from vcr.record_mode import RecordMode

    Cassette.load(path=str(cassette_path), record_mode=RecordMode.NONE, match_on=_vcr_matchers())


# --- the table -------------------------------------------------------------------------------------


@dataclass
class Point:
    n: int
    hit: tuple[float, float]  # (ours, vcrpy) seconds per request
    miss: tuple[float, float]
    load: tuple[float, float]  # seconds per fixture / cassette


@dataclass(frozen=True)
class Data:
    n: int
    fixture: Path
    cassette: Path
    loaded: LoadedFixture
    hits: list[bytes]
    misses: list[bytes]


def prepare(workdir: Path, n: int) -> Data:
    fixture, cassette = build(workdir, n)
    hits = [json.dumps(question(i)).encode() for i in sample(n, 100)]
    misses = [json.dumps(question(n + i)).encode() for i in range(50)]
    return Data(n, fixture, cassette, load(fixture, NO_SECRETS), hits, misses)


def measure(data: list[Data], size: Size) -> list[Point]:
    ours: dict[tuple[int, str], list[float]] = {}
    for _ in range(size.runs):  # the sizes interleaved, so machine noise hits them alike
        for d in data:
            ours.setdefault((d.n, "hit"), []).append(ours_batch(d.loaded, d.hits, True))
            ours.setdefault((d.n, "miss"), []).append(ours_batch(d.loaded, d.misses, False))
    points = []
    for d in data:
        loads = [timed(lambda d=d: load(d.fixture, NO_SECRETS)) for _ in range(size.loads_for(d.n))]
        vcr_loads = [timed(lambda d=d: vcr_load(d.cassette)) for _ in range(size.loads_for(d.n))]
        points.append(
            Point(
                d.n,
                (median(ours[d.n, "hit"]), vcr_per_request(d.cassette, d.hits, size.budget, True)),
                (median(ours[d.n, "miss"]), vcr_per_request(d.cassette, d.misses, size.budget, False)),
                (median(loads), median(vcr_loads)),
            )
        )
    return points


def run(workdir: Path, quick: bool = False) -> list[Row]:
    size = QUICK if quick else FULL
    points = measure([prepare(workdir, n) for n in size.counts], size)
    rows = []
    for kind in ("hit", "miss"):
        for p in points:
            ours, vcr_value = getattr(p, kind)
            rows.append(
                Row(
                    "lookup",
                    f"{kind}, {p.n:,} recorded: ours vs vcrpy",
                    ms(ours),
                    ms(vcr_value),
                    ratio(ours, vcr_value),
                )
            )
        first, last = points[0], points[-1]
        ours_growth = getattr(last, kind)[0] / getattr(first, kind)[0]
        vcr_growth = getattr(last, kind)[1] / getattr(first, kind)[1]
        rows.append(
            Row(
                "lookup",
                f"{kind}: growth from {first.n:,} to {last.n:,} recorded (ours vs vcrpy)",
                f"{ours_growth:.2f}x",
                f"{vcr_growth:.1f}x",
                "",
                f"ours <= {TARGET}x",
                ours_growth <= TARGET,
            )
        )
    for p in points:
        rows.append(
            Row(
                "lookup",
                f"load, {p.n:,} recorded: fixture vs vcrpy cassette",
                ms(p.load[0]),
                ms(p.load[1]),
                ratio(*p.load),
            )
        )
    return rows
