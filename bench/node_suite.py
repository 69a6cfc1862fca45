"""The Node suite: `@attest-ai/vitest` against msw, nock, aimock and a bare node:http server, with the
official openai npm package, in the same run (bench/node, its own package.json).

Per call (node/per_call.mjs, one process, the variants taking turns block by block): a non-streamed
call and a 40-event stream read to the end, attest's as useReplay makes it (fetch sent on the engine's
link, src/lane.ts) and over HTTP. Per test: a 100-test Vitest file per variant
(node/pertest), each file run three times, the variants taking turns, the whole run timed; the package
is this checkout's build installed into bench/node's node_modules, set up as its README says (the
attestReplay() plugin), and attest's file runs once more per turn without the plugin. Start-up: an
engine to its first session, and a test's session cycle on a running engine.

Every variant but aimock serves the bytes the engine serves for the fixture (its own recordings);
aimock builds its answers from its own fixture format, so it gets the same text, framed its way.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import common
from common import BENCH, Route, Row

NODE = BENCH / "node"
VITEST = NODE / "node_modules" / "vitest" / "vitest.mjs"
PACKAGE = BENCH.parent / "sdks" / "vitest"
INSTALLED = NODE / "node_modules" / "@attest-ai" / "vitest"
QUESTION = "What is the refund policy for order O-1042?"
ANSWER = "Refunds are accepted within 30 days of delivery; order O-1042 qualifies."
WORDS = 36  # 40 events: the role, 36 words, the finish, the usage and [DONE]
VARIANTS = {"msw": "msw", "nock": "nock", "aimock": "aimock", "node:http": "http"}
PER_CALL_TARGET = 0.9  # at most 0.9x msw's per call
PER_TEST_TARGET = 1.0  # at or below msw's per test


@dataclass(frozen=True)
class Size:
    blocks: int
    block: int
    warmup: int
    starts: int
    runs: int  # whole-file runs per variant


FULL, QUICK = Size(blocks=12, block=20, warmup=10, starts=5, runs=3), Size(2, 5, 3, 2, 1)


def spec_file(workdir: Path, size: Size) -> Path:
    """The fixtures and the routes (the engine's own recordings' bytes) every variant answers with."""
    plain, stream = common.chat_request(QUESTION), common.chat_request(QUESTION, stream=True)
    copies = max(size.block, size.warmup)  # a session serves each recording once
    exchanges = [common.exchange(plain, common.chat_response(ANSWER))] * copies + [
        common.exchange(stream, common.sse_events(WORDS))
    ] * copies
    fixture = common.write_fixture(workdir / "fixtures", "per-call", exchanges)
    common.write_fixture(
        workdir / "fixtures", "one-call", [common.exchange(plain, common.chat_response(ANSWER))]
    )
    recs = common.recordings(fixture)
    text = "".join(f" word{i}" for i in range(WORDS))
    spec = {
        "fixture": str(fixture),
        "fixtures_dir": str(workdir / "fixtures"),
        "per_test_fixture": "one-call",
        "question": QUESTION,
        "answer": ANSWER,
        "stream_chunks": WORDS + 3,  # [DONE] is not a chunk
        "requests": {"plain": plain, "stream": stream},
        "routes": {"plain": Route.of(recs[0]).to_json(), "stream": Route.of(recs[copies]).to_json()},
        "aimock": {"content": text, "chunk_size": math.ceil(len(text) / WORDS)},
        "size": {"blocks": size.blocks, "block": size.block, "warmup": size.warmup, "starts": size.starts},
    }
    path = workdir / "node-spec.json"
    path.write_text(json.dumps(spec), encoding="utf-8")
    return path


def install_package() -> None:
    """This checkout's built package into bench/node's node_modules, as `npm install` of its tarball
    puts it: Vitest then loads it as it loads any installed package (natively, not through Vite's
    transform), and its own `vitest` import finds the suite's Vitest."""
    shutil.rmtree(INSTALLED, ignore_errors=True)
    shutil.copytree(PACKAGE / "dist", INSTALLED / "dist")
    shutil.copy2(PACKAGE / "package.json", INSTALLED / "package.json")


def node_env(spec: Path) -> dict[str, str]:
    bin_dir = str(Path(sys.executable).parent)  # this checkout's attest-engine first on PATH
    return common.clean_env(
        BENCH_SPEC=str(spec), PATH=bin_dir + os.pathsep + os.environ.get("PATH", ""), CI=""
    )


def per_call(spec: Path) -> dict:
    done = subprocess.run(
        ["node", str(NODE / "per_call.mjs")], capture_output=True, text=True, env=node_env(spec), timeout=900
    )
    if done.returncode != 0:
        raise RuntimeError("bench/node/per_call.mjs failed:\n" + done.stderr[-3000:])
    return json.loads(done.stdout.strip().splitlines()[-1])


# The per-test files' runs: the test file, and what the run's environment adds. The other variants'
# files import the package too (they share one test file with attest's) and run with replay off, so
# neither the package nor the plugin starts an engine in them.
NO_PLUGIN = "attest, without attestReplay()"
RUNS = {
    "attest": ("attest", {}),
    NO_PLUGIN: ("attest", {"BENCH_NO_PLUGIN": "1"}),
    **{name: (file, {"ATTEST_REPLAY": "off"}) for name, file in VARIANTS.items()},
}


def whole_file(spec: Path, file: str, extra: dict[str, str]) -> float:
    """Seconds for `vitest run` of a variant's 100-test file, start to exit."""
    start = time.perf_counter()
    done = subprocess.run(
        ["node", str(VITEST), "run", f"pertest/{file}.test.mjs"],
        cwd=NODE,
        capture_output=True,
        text=True,
        env={**node_env(spec), **extra},
        timeout=900,
    )
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(
            f"bench/node/pertest/{file}.test.mjs failed:\n" + (done.stdout + done.stderr)[-3000:]
        )
    return elapsed


def per_test(spec: Path, runs: int) -> dict[str, float]:
    times: dict[str, list[float]] = {name: [] for name in RUNS}
    for run in range(runs):
        order = list(RUNS)[run % len(RUNS) :] + list(RUNS)[: run % len(RUNS)]  # variants take turns
        for name in order:
            times[name].append(whole_file(spec, *RUNS[name]))
    return {name: common.median(values) for name, values in times.items()}


def row(measure: str, ours: float, baseline: float, target: float | None = None, unit: str = "ms") -> Row:
    show = common.ms if unit == "ms" else (lambda s: f"{s:.2f} s")
    met = None if target is None else ours / baseline <= target
    label = "" if target is None else f"<= {target:g}x msw"
    return Row("node", measure, show(ours), show(baseline), common.ratio(ours, baseline), label, met)


def run(workdir: Path, quick: bool = False) -> list[Row]:
    if not VITEST.exists() or shutil.which("node") is None:
        return [
            Row("node", "not run: bench/node has no node_modules (`make bench` installs them)", "", "", "")
        ]
    size = QUICK if quick else FULL
    common.compile_package()  # the engines the Node side starts load it as an installed package's
    install_package()
    spec = spec_file(workdir, size)
    calls = per_call(spec)
    whole = per_test(spec, size.runs)
    per, start = calls["per_call"], calls["startup"]
    rows: list[Row] = []
    for kind, label in (("plain", "non-streamed"), ("stream", "40-event stream")):
        ours = per["attest, lane"][kind] / 1e3  # what useReplay's fetch does
        for other in ("msw", "nock", "aimock", "node:http", "node:http, own process"):
            target = PER_CALL_TARGET if other == "msw" else None
            rows.append(row(f"per call, {label}: attest vs {other}", ours, per[other][kind] / 1e3, target))
        measure = f"per call, {label}: attest over HTTP (a client with its own fetch) vs msw"
        rows.append(row(measure, per["attest"][kind] / 1e3, per["msw"][kind] / 1e3))
        alone, msw = per["the SDK alone"][kind] / 1e3, per["msw"][kind] / 1e3
        rows.append(
            row(f"per call, {label}: the SDK alone (a fetch that answers at once) vs msw", alone, msw)
        )
        if kind == "plain":  # a stream's share is within the noise of the SDK's own, of either sign
            measure = f"per call, {label}: what replay adds to the SDK's own cost: attest vs msw"
            rows.append(row(measure, ours - alone, msw - alone))
    runs = f"{size.runs} run{'s' if size.runs > 1 else ''}, median"
    for other in ("msw", "nock", "aimock", "node:http"):
        target = PER_TEST_TARGET if other == "msw" else None
        measure = f"per test: a 100-test Vitest file, whole run ({runs}): attest vs {other}"
        rows.append(row(measure, whole["attest"], whole[other], target, unit="s"))
    measure = f"per test, as above, without attestReplay() in the config: attest vs msw ({runs})"
    rows.append(row(measure, whole[NO_PLUGIN], whole["msw"], unit="s"))
    listen = start["msw_listen"] / 1e3
    first = "useReplay start-up: the worker's engine to its first session vs msw's setupServer().listen()"
    later = "useReplay in a later test: a session's open and close vs msw's setupServer().listen()"
    rows.append(row(first, start["engine_start"] / 1e3, listen))
    rows.append(row(later, start["session_cycle"] / 1e3, listen))
    return rows
