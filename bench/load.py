"""Under load: many concurrent clients against one engine session, and the floor under the same load.

The fixture holds KEYS request keys x CALLS recordings each (interleaved, as a concurrent capture
records them). Client i sends key i's request CALLS times in a row; the k-th answer must be key i's
k-th recording, whatever the other clients do meanwhile. Reported: throughput, p50 and p99 latency,
errors, and whether every key was answered in recorded order. Loopback only; every loop is bounded.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
from common import (
    Route,
    Row,
    chat_request,
    chat_response,
    engine,
    exchange,
    floor_server,
    median,
    ms,
    ratio,
    recordings,
    write_fixture,
)


@dataclass(frozen=True)
class Size:
    clients: int
    calls: int
    runs: int


FULL, QUICK = Size(clients=200, calls=50, runs=2), Size(clients=50, calls=10, runs=1)
TIMEOUT = aiohttp.ClientTimeout(total=120)


@dataclass
class Outcome:
    seconds: float = 0.0
    latencies: list[float] = field(default_factory=list)
    errors: int = 0
    out_of_order: int = 0


def request_of(key: int) -> dict:
    return chat_request(f"Customer {key}: what is the status of my order?")


def reply_of(key: int, k: int) -> str:
    return f"Customer {key}, reply {k}: your order ships today."


def build(workdir: Path, size: Size) -> Path:
    exchanges = [
        exchange(request_of(key), chat_response(reply_of(key, k)))
        for k in range(size.calls)
        for key in range(size.clients)
    ]
    return write_fixture(workdir / "fixtures", "load", exchanges)


async def client(
    session: aiohttp.ClientSession, url: str, key: int, size: Size, check_order: bool, out: Outcome
) -> None:
    body = json.dumps(request_of(key)).encode()
    headers = {"content-type": "application/json", "authorization": "Bearer bench-placeholder"}
    for k in range(size.calls):
        start = time.perf_counter()
        try:
            async with session.post(url, data=body, headers=headers) as response:
                payload = await response.read()
                status = response.status
        except (aiohttp.ClientError, asyncio.TimeoutError):
            out.errors += 1
            continue
        out.latencies.append(time.perf_counter() - start)
        if status != 200:
            out.errors += 1
        elif check_order and json.loads(payload)["choices"][0]["message"]["content"] != reply_of(key, k):
            out.out_of_order += 1


async def hammer(url: str, size: Size, check_order: bool) -> Outcome:
    out = Outcome()
    connector = aiohttp.TCPConnector(limit=size.clients)
    async with aiohttp.ClientSession(connector=connector, timeout=TIMEOUT) as session:
        start = time.perf_counter()
        await asyncio.gather(
            *(client(session, url, key, size, check_order, out) for key in range(size.clients))
        )
        out.seconds = time.perf_counter() - start
    return out


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))] if ordered else 0.0


def measure(workdir: Path, size: Size) -> tuple[list[Outcome], list[Outcome]]:
    fixture = build(workdir, size)
    routes = {"plain": Route.of(recordings(fixture)[0])}
    ours: list[Outcome] = []
    floor_runs: list[Outcome] = []
    with engine() as eng, floor_server(routes, workdir) as floor:
        for _ in range(size.runs):
            sid, env = eng.open_session([fixture], "strict", True)
            ours.append(asyncio.run(hammer(env["OPENAI_BASE_URL"] + "/chat/completions", size, True)))
            summary = eng.close_session(sid)
            if summary["misses"]:
                ours[-1].errors += summary["misses"]
            floor_runs.append(asyncio.run(hammer(f"{floor}/plain/v1/chat/completions", size, False)))
    return ours, floor_runs


def run(workdir: Path, quick: bool = False) -> list[Row]:
    size = QUICK if quick else FULL
    ours, floor = measure(workdir, size)
    total = size.clients * size.calls
    rate = median([total / o.seconds for o in ours])
    floor_rate = median([total / o.seconds for o in floor])
    lat = [x for o in ours for x in o.latencies]
    floor_lat = [x for o in floor for x in o.latencies]
    errors = sum(o.errors for o in ours)
    disorder = sum(o.out_of_order for o in ours)
    what = f"{size.clients} clients x {size.calls} calls, one session ({size.clients} keys x {size.calls} recordings)"
    return [
        Row(
            "load",
            f"{what}: throughput vs floor",
            f"{rate:,.0f} req/s",
            f"{floor_rate:,.0f} req/s",
            ratio(rate, floor_rate),
        ),
        Row(
            "load",
            "latency p50 vs floor",
            ms(percentile(lat, 0.5)),
            ms(percentile(floor_lat, 0.5)),
            ratio(percentile(lat, 0.5), percentile(floor_lat, 0.5)),
        ),
        Row(
            "load",
            "latency p99 vs floor",
            ms(percentile(lat, 0.99)),
            ms(percentile(floor_lat, 0.99)),
            ratio(percentile(lat, 0.99), percentile(floor_lat, 0.99)),
        ),
        Row(
            "load",
            f"errors over {total * size.runs:,} requests",
            str(errors),
            str(sum(o.errors for o in floor)),
            "",
            "0",
            errors == 0,
        ),
        Row(
            "load",
            "k-th request of each key got the k-th recording",
            "yes" if disorder == 0 else f"no ({disorder})",
            "",
            "",
            "yes",
            disorder == 0,
        ),
    ]
