"""Helpers for the capture tests: real cassettes as upstream replies, the CLI as a user runs it, and an
upstream that holds its answer until the test lets it go."""

from __future__ import annotations

import asyncio
import gzip
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import yaml
from aiohttp import web
from attest_toolkit.normalize import split_sse
from conftest import AGENTS, REAL_CASSETTES, clean_env
from upstream import FakeUpstream, Reply, Seen

KEY = "sk-test-" + "c" * 40
ANTHROPIC_KEY = "sk-ant-test-" + "d" * 40
AGENT = AGENTS / "capture_agent.py"

# The two commands these tests use, on an app of their own, so a broken neighbour module cannot fail them.
_CLI = """
import sys
import typer
from attest_toolkit.cli import capture, replay, run
app = typer.Typer(name="attest", add_completion=False, pretty_exceptions_enable=False)
app.callback()(lambda: None)
capture.register(app)
replay.register(app)
sys.exit(run(app, sys.argv[1:]))
"""


def attest_argv(*args: str) -> list[str]:
    return [sys.executable, "-c", _CLI, *args]


def run_attest(
    *args: str, env: dict[str, str], cwd: Path, stdin: Any = subprocess.DEVNULL
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        attest_argv(*args), env=env, cwd=cwd, stdin=stdin, capture_output=True, encoding="utf-8", timeout=120
    )


def attest_in(fixtures_dir: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """`attest COMMAND [OPTIONS] --fixtures-dir DIR -- CMD...`, run from DIR's parent."""
    cut = args.index("--")
    argv = [*args[:cut], "--fixtures-dir", str(fixtures_dir), *args[cut:]]
    return run_attest(*argv, env=env, cwd=fixtures_dir.parent)


def run_agent(
    agent: Path, fixtures_dir: Path, args: tuple[str, ...], env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    """`attest COMMAND [OPTIONS] --fixtures-dir DIR -- python AGENT ARGS...`, from `args` written as
    `COMMAND [OPTIONS] -- ARGS...`, in `env`."""
    cut = args.index("--")
    argv = [
        *args[:cut],
        "--fixtures-dir",
        str(fixtures_dir),
        "--",
        sys.executable,
        str(agent),
        *args[cut + 1 :],
    ]
    return run_attest(*argv, env=env, cwd=fixtures_dir.parent)


def agent(*args: str) -> list[str]:
    return [sys.executable, str(AGENT), *args]


def capture_env(upstream_url: str, **extra: str) -> dict[str, str]:
    """A clean environment whose providers are the fake upstream, with keys for both SDKs."""
    return clean_env(
        ATTEST_OPENAI_UPSTREAM=upstream_url,
        ATTEST_ANTHROPIC_UPSTREAM=upstream_url,
        OPENAI_API_KEY=KEY,
        ANTHROPIC_API_KEY=ANTHROPIC_KEY,
        PYTHONIOENCODING="utf-8",
        **extra,
    )


def cassette_replies(relative: str) -> list[Reply]:
    """The responses of a real vcrpy cassette, served as the provider sent them: SSE event by event,
    gzip bodies still compressed with their Content-Encoding."""
    doc = yaml.safe_load((REAL_CASSETTES / relative).read_text(encoding="utf-8"))
    return [_reply(item["response"]) for item in doc["interactions"]]


def _reply(response: dict) -> Reply:
    headers = {k.lower(): v[0] for k, v in response["headers"].items()}
    kept = {k: headers[k] for k in ("content-type", "content-encoding") if k in headers}
    body = response["body"]["string"]
    status = response["status"]["code"]
    if isinstance(body, bytes):
        gzip.decompress(body)  # fail here, not in the proxy, if a cassette is not what SOURCES.md says
        return Reply(status=status, headers=kept, body=body)
    if "event-stream" in kept.get("content-type", ""):
        return Reply(status=status, headers=kept, events=[e.encode() for e in split_sse(body)])
    return Reply(status=status, headers=kept, body=body.encode())


class GatedUpstream(FakeUpstream):
    """Signals `arrived` when a request comes in; answers only once `gate` is set (or after a minute).

    With `first_events`, a streamed reply sends that many events, then waits for the gate before the
    rest; `released_in_time` tells whether the test opened the gate before the wait ran out."""

    def __init__(self, replies: list[Reply], first_events: int = 0) -> None:
        super().__init__(replies)
        self.arrived = threading.Event()
        self.gate = threading.Event()
        self.first_events = first_events
        self.released_in_time: bool | None = None

    async def _wait_for_gate(self) -> None:
        loop = asyncio.get_running_loop()
        self.released_in_time = await loop.run_in_executor(None, self.gate.wait, 60)

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        self.arrived.set()
        if not self.first_events:
            await self._wait_for_gate()
            return await super()._handle(request)
        body = await request.read()
        reply = self.replies.pop(0)
        assert reply.events is not None
        response = web.StreamResponse(status=reply.status, headers=reply.headers)
        await response.prepare(request)
        for event in reply.events[: self.first_events]:
            await response.write(event)
        await self._wait_for_gate()
        for event in reply.events[self.first_events :]:
            await response.write(event)
        await response.write_eof()
        self.requests.append(
            Seen(request.method, request.path, request.query_string, dict(request.headers), body)
        )
        return response

    def __exit__(self, *exc: object) -> None:
        self.gate.set()
        super().__exit__(*exc)
