"""Per call, with the official openai SDK: the engine against the floor and against vcrpy.

- engine: `attest-engine serve` in a subprocess, one session, the SDK pointed at it (what users run):
  over HTTP (any client, any process), and over the lane (engine.lane), as the pytest helper's own
  process reaches it;
- floor: bench/floor.py in a subprocess, a bare aiohttp server answering with the same bytes;
- vcrpy: the same bytes in a vcrpy cassette, replayed in process (vcrpy patches httpx2, the transport
  this openai uses), in vcrpy's cheapest setting: one interaction, `allow_playback_repeats`;
- the SDK alone: the same bytes from an httpx `MockTransport` that answers at once (no replay, no
  lookup, no socket), the cost no replay in the client's process can go below, so that what a replay
  adds to a call is told apart from what the SDK itself costs.

Non-streamed and streamed calls, time to the first SSE event, and whether the events of a stream
arrive separately: counted as HTTP chunks at the raw socket, for a replayed stream and for a live
stream passed through from a paced upstream.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import openai
from attest_toolkit.pytest_plugin import lane
from common import (
    OPENAI,
    Route,
    Row,
    cassette_interaction,
    chat_request,
    chat_response,
    clean_env,
    engine,
    exchange,
    floor_server,
    median,
    ms,
    ratio,
    recordings,
    sse_events,
    write_cassette,
    write_fixture,
)
from sse_probe import Chunk, ProbeError, stream_chunks

QUESTION = "What is the refund policy for order O-1042?"
ANSWER = "Refunds are accepted within 30 days of delivery; order O-1042 qualifies."
WORDS = 40  # a streamed answer of 40 words: 44 events with the role, finish, usage and [DONE] events
LIVE_KEY = "sk-bench-" + "L" * 40  # the engine's own key for the pass-through check (never leaves loopback)
PACE_MS = 15.0
PLACEHOLDER = "bench-placeholder"  # the SDK wants a key; nothing checks it
TARGET = 1.3
IN_PROCESS_TARGET = 0.7  # a call answered in the test's process, against vcrpy's
SESSION_VARIANTS = 2  # over HTTP, and over the lane as the pytest helper's own process calls it


@dataclass(frozen=True)
class Size:
    blocks: int  # the targets take turns, one block of calls each, so machine noise hits them alike
    block: int  # calls per block and kind
    warmup: int

    @property
    def per_kind(self) -> int:
        return self.blocks * self.block + self.warmup


FULL, QUICK = Size(blocks=15, block=20, warmup=10), Size(blocks=4, block=10, warmup=3)


@dataclass
class Samples:
    plain: list[float] = field(default_factory=list)  # seconds per call, one value per block
    stream: list[float] = field(default_factory=list)
    first_event: list[float] = field(default_factory=list)  # seconds, every streamed call


def plain_request() -> dict:
    return chat_request(QUESTION)


def stream_request() -> dict:
    return chat_request(QUESTION, stream=True)


def call_plain(client: openai.OpenAI) -> None:
    reply = client.chat.completions.create(**plain_request())
    if reply.choices[0].message.content != ANSWER:
        raise AssertionError("unexpected answer: " + repr(reply.choices[0].message.content))


def call_stream(client: openai.OpenAI, first_event: list[float]) -> None:
    start = time.perf_counter()
    count = 0
    for _chunk in client.chat.completions.create(**stream_request()):
        if count == 0:
            first_event.append(time.perf_counter() - start)
        count += 1
    if count != WORDS + 3:  # [DONE] is not a chunk
        raise AssertionError(f"expected {WORDS + 3} chunks, got {count}")


def time_plain(client: openai.OpenAI, calls: int) -> float:
    """Seconds per non-streamed call."""
    start = time.perf_counter()
    for _ in range(calls):
        call_plain(client)
    return (time.perf_counter() - start) / calls


def time_stream(client: openai.OpenAI, calls: int, first_event: list[float]) -> float:
    """Seconds per streamed call, read to the end; collects the times to the first event."""
    start = time.perf_counter()
    for _ in range(calls):
        call_stream(client, first_event)
    return (time.perf_counter() - start) / calls


def block(plain: openai.OpenAI, stream: openai.OpenAI, calls: int, out: Samples) -> None:
    out.plain.append(time_plain(plain, calls))
    out.stream.append(time_stream(stream, calls, out.first_event))


def build(workdir: Path, size: Size) -> tuple[Path, dict[str, Route]]:
    per_kind = SESSION_VARIANTS * size.per_kind  # the engine's session serves two variants
    exchanges = [exchange(plain_request(), chat_response(ANSWER))] * per_kind
    exchanges += [exchange(stream_request(), sse_events(WORDS))] * per_kind
    path = write_fixture(workdir / "fixtures", "per-call", exchanges)
    recs = recordings(path)
    return path, {"plain": Route.of(recs[0]), "stream": Route.of(recs[per_kind])}


def cassettes(workdir: Path, fixture: Path) -> dict[str, Path]:
    recs = recordings(fixture)
    plain, stream = recs[0], recs[-1]
    return {
        "plain": write_cassette(
            workdir / "vcr" / "plain.yaml", [cassette_interaction(plain_request(), plain)]
        ),
        "stream": write_cassette(
            workdir / "vcr" / "stream.yaml", [cassette_interaction(stream_request(), stream)]
        ),
    }


@contextlib.contextmanager
def vcr_client(cassette: Path) -> Iterator[openai.OpenAI]:
    import vcr

    with vcr.VCR(record_mode="none").use_cassette(str(cassette), allow_playback_repeats=True):
        client = openai.OpenAI(api_key=PLACEHOLDER, base_url=OPENAI + "/v1", max_retries=0)
        try:
            yield client
        finally:
            client.close()


def client_at(base_url: str, api_key: str = PLACEHOLDER) -> openai.OpenAI:
    return openai.OpenAI(base_url=base_url, api_key=api_key, max_retries=0)


def sdk_alone(route: Route) -> openai.OpenAI:
    """A client whose transport answers every call at once with `route`'s bytes."""
    import httpx2

    body = route.body if route.events is None else b"".join(route.events)

    def answer(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(route.status, headers=list(route.headers), content=body)

    transport = httpx2.MockTransport(answer)
    return openai.OpenAI(
        api_key=PLACEHOLDER,
        base_url=OPENAI + "/v1",
        max_retries=0,
        http_client=httpx2.Client(transport=transport),
    )


def measure(workdir: Path, size: Size) -> dict[str, Samples]:
    fixture, routes = build(workdir, size)
    vcr_paths = cassettes(workdir, fixture)
    results = {name: Samples() for name in ("engine", "lane", "floor", "vcrpy", "sdk")}
    with contextlib.ExitStack() as stack:
        eng = stack.enter_context(engine())
        floor = stack.enter_context(floor_server(routes, workdir))
        sid, env = eng.open_session([fixture], "strict", True)
        ours = stack.enter_context(client_at(env["OPENAI_BASE_URL"], env["OPENAI_API_KEY"]))
        in_runner = stack.enter_context(client_at(env["OPENAI_BASE_URL"], env["OPENAI_API_KEY"]))
        # The floor routes by URL prefix: it does no lookup at all.
        floor_plain = stack.enter_context(client_at(f"{floor}/plain/v1"))
        floor_stream = stack.enter_context(client_at(f"{floor}/stream/v1"))
        sdk_plain = stack.enter_context(sdk_alone(routes["plain"]))
        sdk_stream = stack.enter_context(sdk_alone(routes["stream"]))

        def vcr_block(calls: int, out: Samples) -> None:
            # One cassette per kind: vcrpy's default matcher ignores the body, so a stream and a plain
            # call to the same endpoint could not share a cassette without matching bodies too.
            # vcrpy patches httpx2 for the whole process, so it is active only during its own turn.
            with vcr_client(vcr_paths["plain"]) as client:
                out.plain.append(time_plain(client, calls))
            with vcr_client(vcr_paths["stream"]) as client:
                out.stream.append(time_stream(client, calls, out.first_event))

        def lane_block(calls: int, out: Samples) -> None:
            # What the pytest helper does while a test's session is open; HTTP again afterwards.
            lane.route(eng.url, eng.lane)
            try:
                block(in_runner, in_runner, calls, out)
            finally:
                lane.unroute_all()

        turns: list[tuple[str, Callable[[int, Samples], None]]] = [
            ("engine", lambda calls, out: block(ours, ours, calls, out)),
            ("lane", lane_block),
            ("floor", lambda calls, out: block(floor_plain, floor_stream, calls, out)),
            ("vcrpy", vcr_block),
            ("sdk", lambda calls, out: block(sdk_plain, sdk_stream, calls, out)),
        ]
        for _name, turn in turns:
            turn(size.warmup, Samples())
        for b in range(size.blocks):
            for name, turn in turns[b % 5 :] + turns[: b % 5]:  # rotate who goes first
                turn(size.block, results[name])
        summary = eng.close_session(sid)
        pool = in_runner._client._transport._pool  # type: ignore[attr-defined]
        over_http = bool(pool.connections) or eng.lane.closed
    if summary["misses"] or summary["replayed"] != 2 * SESSION_VARIANTS * size.per_kind:
        raise AssertionError(f"the engine did not replay every call: {summary['miss_list'][:1]}")
    if over_http:
        raise AssertionError("the lane variant's calls went over HTTP")
    return results


# --- events arrive separately ----------------------------------------------------------------------


@dataclass(frozen=True)
class Separation:
    """Verdicts ("yes (44 chunks for 44 events)") for a replayed stream and a live one."""

    replay: str
    replay_floor: str
    replay_vcrpy: str
    live: str
    live_floor: str


def _same_events(chunks: list[Chunk], events: tuple[bytes, ...]) -> bool:
    return [c.data for c in chunks] == list(events)


def separation(workdir: Path, stream: Route, fixture: Path, vcr_stream: Path) -> Separation:
    events = stream.events or ()
    body = json.dumps(stream_request()).encode()
    headers = {"content-type": "application/json", "accept": "text/event-stream"}
    paced = Route(stream.status, stream.headers, stream.body, events, PACE_MS)
    with floor_server({"stream": stream, "paced": paced}, workdir) as floor:
        floor_chunks = stream_chunks(f"{floor}/stream/v1/chat/completions", body, headers)[1]
        paced_chunks = stream_chunks(f"{floor}/paced/v1/chat/completions", body, headers)[1]
        live_env = clean_env(OPENAI_API_KEY=LIVE_KEY, ATTEST_OPENAI_UPSTREAM=f"{floor}/paced")
        with engine(live_env) as eng:
            sid, env = eng.open_session([fixture], "strict", True)
            replay_chunks = stream_chunks(env["OPENAI_BASE_URL"] + "/chat/completions", body, headers)[1]
            eng.close_session(sid)
            # A request that was never recorded, in auto mode with the engine's own key: it goes live,
            # to the paced upstream, and streams back through the engine.
            sid, env = eng.open_session([fixture], "auto", False)
            live_body = json.dumps(chat_request("A question that was never recorded", stream=True)).encode()
            auth = {**headers, "authorization": f"Bearer {LIVE_KEY}"}
            live_chunks = stream_chunks(env["OPENAI_BASE_URL"] + "/chat/completions", live_body, auth)[1]
            went_live = eng.close_session(sid)["live"] == 1
    return Separation(
        replay=_verdict(_same_events(replay_chunks, events), replay_chunks, events),
        replay_floor=_verdict(_same_events(floor_chunks, events), floor_chunks, events),
        replay_vcrpy=_vcr_reads(vcr_stream, body, len(events)),
        live=_verdict(went_live and _paced(live_chunks, events), live_chunks, events),
        live_floor=_verdict(_paced(paced_chunks, events), paced_chunks, events),
    )


def _paced(chunks: list[Chunk], events: tuple[bytes, ...]) -> bool:
    """Each event its own chunk, arriving about when the upstream sent it (not all at the end)."""
    if not _same_events(chunks, events):
        return False
    gaps = [b.at - a.at for a, b in itertools.pairwise(chunks)]
    return median(gaps) >= PACE_MS / 2000


def _verdict(ok: bool, chunks: list[Chunk], events: tuple[bytes, ...]) -> str:
    return f"{'yes' if ok else 'no'} ({len(chunks)} chunks for {len(events)} events)"


def _vcr_reads(cassette: Path, body: bytes, expected: int) -> str:
    """How many raw reads a client gets from vcrpy for the same stream (httpx2 `iter_raw`)."""
    import httpx2
    import vcr

    with (
        vcr.VCR(record_mode="none").use_cassette(str(cassette), allow_playback_repeats=True),
        httpx2.Client() as client,
        client.stream(
            "POST",
            OPENAI + "/v1/chat/completions",
            content=body,
            headers={"content-type": "application/json"},
        ) as response,
    ):
        reads = sum(1 for _ in response.iter_raw())
    return f"{'yes' if reads == expected else 'no'} ({reads} read{'s' if reads != 1 else ''} for {expected} events)"


# --- the table -------------------------------------------------------------------------------------


def row(measure: str, ours: float, baseline: float, target: float | None = None) -> Row:
    met = None if target is None else ours / baseline <= target
    return Row(
        "per call",
        measure,
        ms(ours),
        ms(baseline),
        ratio(ours, baseline),
        f"<= {target}x" if target else "",
        met,
    )


def run(workdir: Path, quick: bool = False) -> list[Row]:
    size = QUICK if quick else FULL
    results = measure(workdir, size)
    fixture = workdir / "fixtures" / "per-call.attest.json"
    try:
        # The first streamed recording: what the engine serves first for the stream request (each
        # recording has its own served timestamps, so a later one differs in its `created`).
        first = next(r for r in recordings(fixture) if r.events is not None)
        sep = separation(workdir, Route.of(first), fixture, workdir / "vcr" / "stream.yaml")
    except ProbeError as exc:
        sep = Separation(f"no ({exc})", "not measured", "not measured", f"no ({exc})", "not measured")
    eng, laned, flo, vcr_, sdk = (results[k] for k in ("engine", "lane", "floor", "vcrpy", "sdk"))
    rows = []
    for label, pick in (("non-streamed", "plain"), (f"streamed ({WORDS + 4} events)", "stream")):
        ours, in_runner, floor, vcr_value, alone = (
            median(getattr(s, pick)) for s in (eng, laned, flo, vcr_, sdk)
        )
        rows.append(row(f"{label}: engine vs floor", ours, floor, TARGET))
        rows.append(row(f"{label}: engine vs vcrpy", ours, vcr_value))
        target = IN_PROCESS_TARGET if pick == "plain" else 1.0
        rows.append(
            row(
                f"{label}, answered in the test runner's process (lane): engine vs vcrpy",
                in_runner,
                vcr_value,
                target,
            )
        )
        rows.append(
            row(f"{label}: the SDK alone (a transport that answers at once) vs vcrpy", alone, vcr_value)
        )
        rows.append(
            row(
                f"{label}: what replay adds to the SDK's own cost, in process: engine vs vcrpy",
                in_runner - alone,
                vcr_value - alone,
            )
        )
    first = [median(s.first_event) for s in (eng, laned, flo, vcr_)]
    rows.append(row("time to first SSE event: engine vs floor", first[0], first[2]))
    rows.append(row("time to first SSE event: engine vs vcrpy", first[0], first[3]))
    rows.append(row("time to first SSE event, lane: engine vs vcrpy", first[1], first[3]))
    separate = "events arrive separately (HTTP chunks at the socket)"
    rows += [
        Row(
            "per call",
            f"{separate}, replayed stream: engine vs floor",
            sep.replay,
            sep.replay_floor,
            "",
            "yes",
            sep.replay.startswith("yes"),
        ),
        Row(
            "per call",
            f"{separate}, replayed stream: engine vs vcrpy (raw reads)",
            sep.replay,
            sep.replay_vcrpy,
            "",
        ),
        Row(
            "per call",
            f"{separate}, live stream {PACE_MS:.0f} ms apart: through the engine vs direct",
            sep.live,
            sep.live_floor,
            "",
            "yes",
            sep.live.startswith("yes"),
        ),
    ]
    return rows
