"""Shared test helpers: building fixtures from exchanges, running the CLIs as a user would."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from attest_toolkit.credentials.scan import Secrets
from attest_toolkit.fixtures import document as fx
from attest_toolkit.normalize import Exchange, Templater
from attest_toolkit.providers import PROVIDERS
from attest_toolkit.providers.env import ALL_VARS, KEY_VARS
from attest_toolkit.pytest_plugin import lane
from attest_toolkit.pytest_plugin.client import EngineProcess

# Helper modules with asserts, imported by test modules (and loaded as plugins for their fixtures).
pytest.register_assert_rewrite("github_harness", "s3_server", "image_helpers")

REPO = Path(__file__).resolve().parent.parent
AGENTS = Path(__file__).resolve().parent / "agents"
REAL_CASSETTES = Path(os.environ.get("ATTEST_REAL_CASSETTES", REPO.parent / "shared" / "real-cassettes"))

# Tests that read other projects' recordings (SPEC: never copied into the project) carry this marker.
# Without ../shared they skip with this one reason; CI sets ATTEST_REQUIRE_SHARED=1, so there they fail.
needs_shared = pytest.mark.needs_shared
SHARED_MISSING = f"needs other projects' real cassettes from ../shared, not found at {REAL_CASSETTES}"


def shared_available() -> bool:
    return REAL_CASSETTES.is_dir()


# The tests in system/ start whole processes (pytest sessions, Vitest, agent frameworks, a browser,
# namespaces, podman, the action, real cassettes): marked `slow` by their directory, so that the inner
# loop `pytest -m "not slow"` runs unit/ and integration/. `make test` runs everything.
SYSTEM = Path(__file__).resolve().parent / "system"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "needs_shared: reads other projects' real cassettes from ../shared")
    config.addinivalue_line("markers", "slow: in tests/system/, starts whole processes; -m 'not slow' skips")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.is_relative_to(SYSTEM):
            item.add_marker(pytest.mark.slow)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("needs_shared") is None or shared_available():
        return
    if os.environ.get("ATTEST_REQUIRE_SHARED") == "1":
        pytest.fail(f"{SHARED_MISSING} (ATTEST_REQUIRE_SHARED=1)", pytrace=False)
    pytest.skip(SHARED_MISSING)


# Provider variables of the machine must never leak into a test's child process.
_SCRUB = (
    *ALL_VARS,  # every provider's base-URL, key and upstream variables, from the registry
    *KEY_VARS.values(),
    *(p.upstream_var for p in PROVIDERS.values() if p.upstream_var),
    "GOOGLE_API_KEY",  # google-genai reads it before GEMINI_API_KEY
    "CI",
    "ATTEST_REPLAY",
    "ATTEST_EGRESS",
    "ATTEST_REQUIRE_SHARED",
    "ATTEST_STRICT",
    "HTTPS_PROXY",
    "HTTP_PROXY",
    "ALL_PROXY",
    "https_proxy",
    "http_proxy",
    "all_proxy",
)


def chat_request(
    content: str = "Say hello",
    *,
    system: str | None = "You are terse.",
    model: str = "gpt-4o-mini",
    **params: object,
) -> dict:
    messages = ([{"role": "system", "content": system}] if system else []) + [
        {"role": "user", "content": content}
    ]
    return {"model": model, "messages": messages, **params}


def chat_response(
    text: str = "Hello!",
    *,
    model: str = "gpt-4o-mini-2024-07-18",
    ident: str = "chatcmpl-Bx1AbC9dEf2GhI3jKl4MnO5pQr",
    tool_calls: list | None = None,
) -> dict:
    message: dict = {"role": "assistant", "content": None if tool_calls else text, "refusal": None}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return {
        "id": ident,
        "object": "chat.completion",
        "created": 1764569740,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": "tool_calls" if tool_calls else "stop",
            }
        ],
        "usage": {"prompt_tokens": 12, "completion_tokens": 5, "total_tokens": 17},
    }


def message_response(text: str = "Hi!", *, model: str = "claude-haiku-4-5") -> dict:
    """An Anthropic Messages reply holding one text block."""
    return {
        "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 5, "output_tokens": 2},
    }


def exchange(
    request: dict, response: dict, *, path: str = "/v1/chat/completions", status: int = 200
) -> Exchange:
    return Exchange(
        "POST",
        path,
        "",
        json.dumps(request).encode(),
        status,
        [("content-type", "application/json")],
        json.dumps(response).encode(),
    )


def sse_exchange(request: dict, events: list[str], *, path: str = "/v1/chat/completions") -> Exchange:
    return Exchange(
        "POST",
        path,
        "",
        json.dumps(request).encode(),
        200,
        [("content-type", "text/event-stream; charset=utf-8")],
        "".join(events).encode(),
    )


def write_fixture(directory: Path, name: str, exchanges: list[Exchange], provider: str = "openai") -> Path:
    templater = Templater(Secrets.of([]))
    interactions = [templater.record(e, provider) for e in exchanges]
    doc = fx.new_fixture(name, fx.new_source(["python", "agent.py"]), interactions)
    return fx.write_fixture(fx.fixture_path(name, directory), doc, Secrets.of([]))


# Commits in tests' git repositories: a fixed author, and no user or system git configuration.
GIT_ENV = {
    "GIT_AUTHOR_NAME": "Test",
    "GIT_AUTHOR_EMAIL": "test@example.invalid",
    "GIT_COMMITTER_NAME": "Test",
    "GIT_COMMITTER_EMAIL": "test@example.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
}


def git(repo: Path, *args: str) -> str:
    """Run git in `repo`; its standard output."""
    done = subprocess.run(
        ["git", *args], cwd=repo, env={**os.environ, **GIT_ENV}, capture_output=True, text=True, check=True
    )
    return done.stdout


def scrub(monkeypatch: pytest.MonkeyPatch) -> None:
    """Remove the machine's provider and attest variables from this process (pytester's children)."""
    for var in (*_SCRUB, "ATTEST_RECORD", "ATTEST_MATCH"):
        monkeypatch.delenv(var, raising=False)


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _SCRUB}
    env.update(extra)
    return env


def run_cli(
    args: list[str], *, cwd: Path | None = None, env: dict[str, str] | None = None, program: str = "attest"
) -> subprocess.CompletedProcess[str]:
    module = "attest_toolkit.cli" if program == "attest" else "attest_toolkit.cli.engine"
    code = f"import sys; from {module} import main; sys.argv[0] = {program!r}; main()"
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=cwd,
        env=env if env is not None else clean_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )


def calls_file(tmp_path: Path, calls: list[dict]) -> Path:
    path = tmp_path / "calls.json"
    path.write_text(json.dumps(calls), encoding="utf-8")
    return path


def agent_cmd(calls: Path) -> list[str]:
    return [sys.executable, str(AGENTS / "calls.py"), str(calls)]


@pytest.fixture
def engine() -> Iterator[EngineProcess]:
    """`attest-engine serve` started as the pytest helper starts it, its lane included; after the
    test, the lane's routes are undone and the engine (resumed, if a test stopped it) is stopped."""
    proc = EngineProcess(env=clean_env())
    try:
        yield proc
    finally:
        lane.unroute_all()
        if proc.alive:
            os.kill(proc.proc.pid, signal.SIGCONT)
        proc.stop()


@pytest.fixture
def fixtures_dir(tmp_path: Path) -> Path:
    path = tmp_path / "fixtures"
    path.mkdir()
    return path
