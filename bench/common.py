"""What every benchmark shares: timing, the result rows, recorded exchanges, fixtures and cassettes
built from the same bytes, and the processes under test (the engine, the bare floor server).

Every number is compared with a baseline measured in the same run on the same machine, and the
median of several runs is kept, because a shared machine is noisy.
"""

from __future__ import annotations

import compileall
import contextlib
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import attest_toolkit
from attest_toolkit.credentials.scan import Secrets
from attest_toolkit.fixtures import document as fx
from attest_toolkit.normalize import Exchange, Templater
from attest_toolkit.pytest_plugin.client import EngineProcess
from attest_toolkit.replay.index import Recording, load

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
NO_SECRETS = Secrets.of([])
MODEL = "gpt-4o-mini"
SYSTEM = "You are a terse assistant for an online shop."
OPENAI = "https://api.openai.com"
JSON = "application/json"
SSE = "text/event-stream; charset=utf-8"
# Provider variables of the machine never reach a benchmark's child processes.
SCRUB = (
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "OPENAI_BASE_URL",
    "ANTHROPIC_BASE_URL",
    "ATTEST_OPENAI_UPSTREAM",
    "ATTEST_ANTHROPIC_UPSTREAM",
    "ATTEST_REPLAY",
    "ATTEST_EGRESS",
    "ATTEST_STRICT",
    "CI",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
)


# --- results ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    """One line of the results table: ours against the same-run baseline."""

    benchmark: str
    measure: str
    ours: str
    baseline: str
    ratio: str
    target: str = ""
    met: bool | None = None  # None: informational, no target

    @property
    def verdict(self) -> str:
        return "" if self.met is None else ("met" if self.met else "MISSED")


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def timed(work: Callable[[], object]) -> float:
    start = time.perf_counter()
    work()
    return time.perf_counter() - start


def cpu_timed(work: Callable[[], object]) -> float:
    """The process's CPU seconds for `work`: for one thread's work, not the time others' load took."""
    start = time.process_time()
    work()
    return time.process_time() - start


def ms(seconds: float) -> str:
    value = seconds * 1000
    if abs(value) >= 100:
        return f"{value:.0f} ms"
    if abs(value) >= 1:
        return f"{value:.2f} ms"
    return f"{value * 1000:.0f} µs"


def ratio(ours: float, baseline: float) -> str:
    return f"{ours / baseline:.2f}x" if baseline > 0 else "n/a"


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in SCRUB}
    env.update(extra)
    return env


# --- recorded exchanges ----------------------------------------------------------------------------


def chat_request(content: str, *, stream: bool = False, **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": MODEL,
        "messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": content}],
        **extra,
    }
    if stream:
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
    return body


def chat_response(text: str | None, *, tool_calls: list[dict] | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": text, "refusal": None, "annotations": []}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return {
        "id": "chatcmpl-Bx1AbC9dEf2GhI3jKl4MnO5pQr",
        "object": "chat.completion",
        "created": 1764569740,
        "model": "gpt-4o-mini-2024-07-18",
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": "tool_calls" if tool_calls else "stop",
            }
        ],
        "usage": {"prompt_tokens": 42, "completion_tokens": 17, "total_tokens": 59},
        "service_tier": "default",
        "system_fingerprint": "fp_29330a9688",
    }


def _chunk(delta: dict[str, Any], finish: str | None = None, usage: dict | None = None) -> str:
    chunk = {
        "id": "chatcmpl-D2HpUGTvIFKBsR9Xd6XRT4AuFXzbz",
        "object": "chat.completion.chunk",
        "created": 1769437564,
        "model": "gpt-4o-mini-2024-07-18",
        "service_tier": "default",
        "system_fingerprint": "fp_29330a9688",
        "choices": [] if usage else [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        "usage": usage,
    }
    return "data: " + json.dumps(chunk, separators=(",", ":")) + "\n\n"


def sse_events(words: int) -> list[str]:
    """A chat completion stream as OpenAI sends it: a role chunk, one chunk per word, the finish chunk,
    the usage chunk and [DONE], so `words + 4` events in all."""
    events = [_chunk({"role": "assistant", "content": "", "refusal": None})]
    events += [_chunk({"content": f" word{i}"}) for i in range(words)]
    events.append(_chunk({}, finish="stop"))
    events.append(
        _chunk({}, usage={"prompt_tokens": 42, "completion_tokens": words, "total_tokens": 42 + words})
    )
    events.append("data: [DONE]\n\n")
    return events


def exchange(request: dict, response: dict | list[str], status: int = 200) -> Exchange:
    """A raw exchange: a JSON response, or a list of SSE events for a stream."""
    if isinstance(response, list):
        headers, body = [("content-type", SSE)], "".join(response).encode()
    else:
        headers, body = [("content-type", JSON)], json.dumps(response).encode()
    return Exchange("POST", "/v1/chat/completions", "", json.dumps(request).encode(), status, headers, body)


# --- fixtures and cassettes from the same bytes ----------------------------------------------------


def write_fixture(directory: Path, name: str, exchanges: Sequence[Exchange]) -> Path:
    """The fixture capture would write for `exchanges`. Written without the write-time validation and
    scan (the benchmarks measure reading, and a 10,000-interaction validation would dominate setup)."""
    templater = Templater(NO_SECRETS)
    interactions = [templater.record(e, "openai") for e in exchanges]
    doc = fx.new_fixture(name, fx.new_source(["python", "agent.py"]), interactions)
    path = fx.fixture_path(name, directory)
    fx.atomic_write(path, fx.dumps(doc))
    return path


def recordings(path: Path) -> tuple[Recording, ...]:
    """What the engine serves for a fixture: its recordings, pre-encoded."""
    return load(path, NO_SECRETS).recordings


def cassette_interaction(request: dict[str, Any], rec: Recording, url: str = OPENAI) -> dict[str, Any]:
    """One vcrpy interaction answering `request` with exactly the bytes the engine serves for `rec`."""
    headers = {k: [v] for k, v in rec.headers}
    return {
        "request": {
            "body": json.dumps(request),
            "headers": {"content-type": [JSON], "accept": [JSON]},
            "method": rec.method,
            "uri": url + rec.path,
        },
        "response": {
            "status": {"code": rec.status, "message": "OK"},
            "headers": headers,
            "body": {"string": rec.body.decode("utf-8")},
        },
    }


def write_cassette(path: Path, interactions: list[dict[str, Any]]) -> Path:
    """A stock vcrpy YAML cassette, written with vcrpy's own serializer."""
    from vcr.serializers import yamlserializer

    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yamlserializer.serialize({"version": 1, "interactions": interactions}), encoding="utf-8")
    return path


# --- the processes under test ----------------------------------------------------------------------


@contextlib.contextmanager
def engine(env: dict[str, str] | None = None) -> Iterator[EngineProcess]:
    """The engine as users run it: an `attest-engine serve` subprocess, sessions over HTTP."""
    proc = EngineProcess(console_script("attest-engine"), env=env if env is not None else clean_env())
    try:
        yield proc
    finally:
        proc.stop()


def compile_package() -> None:
    """The package's bytecode, as installing it compiles it: an editable install under
    PYTHONDONTWRITEBYTECODE would otherwise compile every module's source at every engine start."""
    compileall.compile_dir(str(Path(attest_toolkit.__file__).parent), quiet=1)


def console_script(name: str) -> str:
    """The installed console script next to this interpreter (as a user's shell would find it)."""
    candidate = Path(sys.executable).parent / name
    return str(candidate) if candidate.exists() else name


@dataclass(frozen=True)
class Route:
    """What the floor server answers under /<name>/...: one recording's bytes."""

    status: int
    headers: tuple[tuple[str, str], ...]
    body: bytes
    events: tuple[bytes, ...] | None = None
    delay_ms: float = 0.0  # pause before each event (a provider generating tokens)

    @classmethod
    def of(cls, rec: Recording, delay_ms: float = 0.0) -> Route:
        return cls(rec.status, rec.headers, rec.body, rec.events, delay_ms)

    def to_json(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "headers": [list(h) for h in self.headers],
            "body": self.body.decode("utf-8"),
            "events": [e.decode("utf-8") for e in self.events] if self.events is not None else None,
            "delay_ms": self.delay_ms,
        }


@contextlib.contextmanager
def floor_server(routes: dict[str, Route], workdir: Path) -> Iterator[str]:
    """The floor: a bare aiohttp server in a subprocess serving fixed bytes, no lookup at all.
    Yields its base URL; route `name` is reached at `<url>/<name>/...`."""
    spec = workdir / f"floor-{os.getpid()}-{time.monotonic_ns()}.json"
    spec.write_text(json.dumps({name: r.to_json() for name, r in routes.items()}), encoding="utf-8")
    proc = subprocess.Popen(
        [sys.executable, str(BENCH / "floor.py"), str(spec)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=clean_env(),
        text=True,
    )
    try:
        line = proc.stdout.readline() if proc.stdout else ""
        yield json.loads(line)["ready"]
    finally:
        if proc.stdin:
            proc.stdin.close()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stdout:
            proc.stdout.close()
