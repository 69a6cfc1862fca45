"""The agent frameworks people use, each as its users write it (`tests/agents/frameworks.py`): captured
once against a scripted provider, then replayed strict with no key and the provider gone (same answer,
0 live calls), on every API the framework speaks: a tool round trip on chat completions or its default
API, the same round trip streamed on chat completions, the Responses API and Anthropic's Messages API.
A changed system prompt and a changed tool each miss naming their component. Inside pytest, the
`attest_replay` fixture serves the same recordings to the frameworks in the test's own process, and a
second pytest run checks that with xdist when this one runs without it, and the other way round.

instructor's agent runs with the python of its own virtualenv (`.venv-instructor`, built by `make`):
instructor pins jiter below what current openai SDKs need, so it cannot share the project's. Capture
and replay stay this virtualenv's `attest`, and inside pytest its agent runs as a child of the test.

Each recording is captured once per test session (once per xdist worker) and shared by its tests.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import scripted
from capture_helpers import ANTHROPIC_KEY, KEY, run_attest
from conftest import AGENTS, REPO, chat_response, clean_env
from upstream import FakeUpstream, Reply

ANSWER = "It is sunny in Paris."
CALL_ID = "call_Ab3dEf6hIj9kLm2nOp5qRs8t"
TOOL_CALL = {
    "id": CALL_ID,
    "type": "function",
    "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
}
# What each framework's users need in their environment (see docs/guides/frameworks.md).
FRAMEWORK_ENV = {"OPENAI_AGENTS_DISABLE_TRACING": "1", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
# Set by the second pytest run: the directory of the recordings this run captured, so it captures none.
FIXTURES_VAR = "ATTEST_FRAMEWORK_FIXTURES"


def _json(doc: dict) -> Reply:
    return Reply(body=json.dumps(doc).encode())


def responses_reply(ident: str, output: list) -> Reply:
    return _json(
        {
            "id": ident,
            "object": "response",
            "created_at": scripted.CREATED,
            "status": "completed",
            "model": "gpt-4o-mini-2024-07-18",
            "output": output,
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            "usage": {
                "input_tokens": 20,
                "output_tokens": 5,
                "total_tokens": 25,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens_details": {"reasoning_tokens": 0},
            },
        }
    )


def anthropic_reply(ident: str, content: list, stop: str) -> Reply:
    usage = {"input_tokens": 380, "output_tokens": 20}
    return _json(
        {
            "id": ident,
            "type": "message",
            "role": "assistant",
            "model": "claude-haiku-4-5-20251001",
            "content": content,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": usage,
        }
    )


def chat_round_trip() -> list[Reply]:
    return [
        _json(chat_response(tool_calls=[TOOL_CALL])),
        _json(chat_response(ANSWER, ident="chatcmpl-Cy2BcD0eFg3HiJ4kLm5NoP6qRs")),
    ]


def chat_stream_round_trip() -> list[Reply]:
    call = scripted.chat_tool_call_stream("get_weather", ('{"city":', '"Paris"}'), CALL_ID)
    return [call, scripted.chat_text_stream(ANSWER)]


FIRST_RESPONSE = "resp_" + "0c7a" * 12 + "7d"


def function_call(name: str, arguments: str) -> dict:
    """A Responses API call of tool `name`."""
    ident = "fc_" + "0a5e" * 12 + "9f"
    call = {"type": "function_call", "id": ident, "call_id": CALL_ID, "name": name, "arguments": arguments}
    return {**call, "status": "completed"}


def responses_round_trip() -> list[Reply]:
    call = function_call("get_weather", '{"city":"Paris"}')
    message = {
        "type": "message",
        "id": "msg_" + "0b6f" * 12 + "8e",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": ANSWER, "annotations": []}],
    }
    return [
        responses_reply(FIRST_RESPONSE, [call]),
        responses_reply("resp_" + "0d8b" * 12 + "6c", [message]),
    ]


def tool_use(name: str, arguments: dict) -> Reply:
    """An Anthropic message calling tool `name`."""
    use = {"type": "tool_use", "id": scripted.TOOLU, "name": name, "input": arguments}
    return anthropic_reply("msg_01Ht7Kq3Wn9Pz2Lc5Xv8Rb4D", [use], "tool_use")


def anthropic_round_trip() -> list[Reply]:
    return [
        tool_use("get_weather", {"city": "Paris"}),
        anthropic_reply("msg_01Jv8Lr4Xp0Qa3Md6Yw9Sc5F", [{"type": "text", "text": ANSWER}], "end_turn"),
    ]


def anthropic_stream_round_trip() -> list[Reply]:
    call = scripted.messages_tool_call_stream("get_weather", ('{"city":', '"Paris"}'))
    return [call, scripted.messages_answer_stream(ANSWER)]


WEATHER_ARGUMENTS = ('{"city":"Paris",', '"summary":"sunny"}')


def instructor_reply() -> list[Reply]:
    arguments = "".join(WEATHER_ARGUMENTS)
    return [
        _json(
            chat_response(tool_calls=[{**TOOL_CALL, "function": {"name": "Weather", "arguments": arguments}}])
        )
    ]


def instructor_stream() -> list[Reply]:
    return [scripted.chat_tool_call_stream("Weather", WEATHER_ARGUMENTS, CALL_ID)]


def instructor_responses() -> list[Reply]:
    return [responses_reply(FIRST_RESPONSE, [function_call("Weather", "".join(WEATHER_ARGUMENTS))])]


def instructor_anthropic() -> list[Reply]:
    return [tool_use("Weather", json.loads("".join(WEATHER_ARGUMENTS)))]


# Each scenario's scripted answers from the provider, and the agent's reply.
SCRIPTS: dict[tuple[str, str], tuple[Callable[[], list[Reply]], str]] = {
    ("pydantic_ai", "tool"): (chat_round_trip, ANSWER),
    ("pydantic_ai", "stream"): (chat_stream_round_trip, ANSWER),
    ("pydantic_ai", "responses"): (responses_round_trip, ANSWER),  # `openai:` models use the Responses API
    # AnthropicModel streams a `run_sync` request too, when (as here) the agent sets no max_tokens.
    ("pydantic_ai", "anthropic"): (anthropic_stream_round_trip, ANSWER),
    ("pydantic_ai", "anthropic_stream"): (anthropic_stream_round_trip, ANSWER),
    ("langchain", "tool"): (chat_round_trip, ANSWER),
    ("langchain", "stream"): (chat_stream_round_trip, ANSWER),
    ("langchain", "responses"): (responses_round_trip, ANSWER),
    ("langchain", "anthropic"): (anthropic_round_trip, ANSWER),
    ("openai_agents", "tool"): (responses_round_trip, ANSWER),  # the SDK's default: the Responses API
    ("openai_agents", "stream"): (chat_stream_round_trip, ANSWER),
    ("openai_agents", "anthropic"): (anthropic_round_trip, ANSWER),  # through its LiteLLM model
    ("litellm", "tool"): (chat_round_trip, ANSWER),
    ("litellm", "stream"): (chat_stream_round_trip, ANSWER),
    ("litellm", "responses"): (responses_round_trip, ANSWER),
    ("litellm", "anthropic"): (anthropic_round_trip, ANSWER),
    ("instructor", "tool"): (instructor_reply, "Paris: sunny"),
    ("instructor", "stream"): (instructor_stream, "Paris: sunny"),
    ("instructor", "responses"): (instructor_responses, "Paris: sunny"),
    ("instructor", "anthropic"): (instructor_anthropic, "Paris: sunny"),
}
AGENT = AGENTS / "frameworks.py"
# The Makefile's virtualenv for instructor, and the file its target makes last.
INSTRUCTOR_VENV = REPO / ".venv-instructor"
INSTRUCTOR_BUILT = INSTRUCTOR_VENV / "bin" / "instructor"


def framework_agents():
    """tests/agents/frameworks.py as a module (its directory is no package: `agents` is the Agents SDK's)."""
    spec = importlib.util.spec_from_file_location("framework_agents", AGENT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SCENARIOS: dict[str, tuple[str, ...]] = framework_agents().SCENARIOS
FRAMEWORKS = sorted(SCENARIOS)


def replies(framework: str) -> list[Reply]:
    """What the provider answers a run of the framework's scenarios, in order."""
    return [reply for scenario in SCENARIOS[framework] for reply in SCRIPTS[framework, scenario][0]()]


def output(framework: str) -> list[str]:
    return [f"{scenario}: {SCRIPTS[framework, scenario][1]}" for scenario in SCENARIOS[framework]]


def python_for(framework: str) -> str:
    """The python the framework's agent runs with: instructor's own virtualenv's, or this one."""
    if framework != "instructor":
        return sys.executable
    if not INSTRUCTOR_BUILT.exists():
        pytest.fail(
            f"instructor's virtualenv {INSTRUCTOR_VENV.name}/ is not built: run `make test`, or "
            f"`make {INSTRUCTOR_BUILT.relative_to(REPO)}` (CI's .ci/run builds it)",
            pytrace=False,
        )
    return str(INSTRUCTOR_VENV / "bin" / "python")


def agent(framework: str, *args: str) -> list[str]:
    return ["--", python_for(framework), str(AGENT), framework, *args]


def capture(framework: str, directory: Path) -> None:
    scripted_replies = replies(framework)
    where = ["--name", framework, "--fixtures-dir", str(directory)]
    with FakeUpstream(scripted_replies) as provider:
        env = clean_env(
            OPENAI_API_KEY=KEY,
            ANTHROPIC_API_KEY=ANTHROPIC_KEY,
            ATTEST_OPENAI_UPSTREAM=provider.url,
            ATTEST_ANTHROPIC_UPSTREAM=provider.url,
            **FRAMEWORK_ENV,
        )
        done = run_attest("capture", *where, *agent(framework), env=env, cwd=directory.parent)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == output(framework)
    assert len(provider.requests) == len(scripted_replies)


@pytest.fixture(scope="session")
def captured(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Path]:
    """A framework's recording, captured the first time a test of this session (or worker) asks for it;
    a second pytest run started by this one is handed the directory and captures nothing."""
    given = os.environ.get(FIXTURES_VAR)
    directory = Path(given) if given else tmp_path_factory.mktemp("frameworks") / "fixtures"

    def recording(framework: str) -> Path:
        path = directory / f"{framework}.attest.json"
        if not path.exists():
            capture(framework, directory)
        return path

    return recording


def replay(path: Path, framework: str, *args: str) -> subprocess.CompletedProcess[str]:
    """`attest replay` of the recording with no key, CI set, and the provider long gone."""
    where = ["--name", framework, "--fixtures-dir", str(path.parent)]
    env = clean_env(CI="true", **FRAMEWORK_ENV)
    return run_attest("replay", *where, *agent(framework, *args), env=env, cwd=path.parent.parent)


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_a_framework_replays_strict_with_no_key_and_the_provider_gone(framework, captured):
    path = captured(framework)
    done = replay(path, framework)
    assert done.returncode == 0, done.stderr
    calls = len(replies(framework))
    assert done.stdout.splitlines() == [
        *output(framework),
        f"attest replay: {calls} replayed · 0 live model calls · $0.00",
    ]


def miss_probes(framework: str) -> list[str]:
    """The scenarios a changed prompt or tool is tried on: the first, and the first on Anthropic's
    Messages API (whose system prompt and tools are shaped apart from OpenAI's) if there is one."""
    first, *rest = SCENARIOS[framework]
    return [first, *[scenario for scenario in rest if scenario.startswith("anthropic")][:1]]


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_a_changed_system_prompt_or_tool_misses_naming_it(framework, captured):
    path = captured(framework)
    for scenario in miss_probes(framework):
        changed = replay(path, framework, "--scenario", scenario, "--system", "You are a pirate.")
        assert changed.returncode == 2, (scenario, changed.stderr)
        assert re.search(r"replay miss: system prompt changed(: [^(]+)? \(hash ", changed.stderr), scenario
        description = "The weather in a city, in Celsius."
        changed = replay(path, framework, "--scenario", scenario, "--tool-description", description)
        assert changed.returncode == 2, (scenario, changed.stderr)
        assert re.search(r"replay miss: tools changed(: [^(]+)? \(hash ", changed.stderr), scenario


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_inside_pytest_attest_replay_serves_the_framework(framework, captured, attest_replay, monkeypatch):
    path = captured(framework)
    for var in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    for var, value in FRAMEWORK_ENV.items():
        monkeypatch.setenv(var, value)
    with attest_replay(framework, mode="strict", fixtures_dir=path.parent):
        assert run_here(framework) == output(framework)


def run_here(framework: str) -> list[str]:
    """The framework's agent in this process, or, for instructor, in a child process of its virtualenv
    that inherits the environment `attest_replay` set."""
    if python_for(framework) == sys.executable:
        return framework_agents().run(framework)
    done = subprocess.run(
        [python_for(framework), str(AGENT), framework], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_a_second_pytest_run_in_the_other_xdist_mode_replays_them_too(captured):
    """The other half of "under pytest, with and without xdist": the tests above again, in a second
    pytest run in the mode this one is not in, reusing this run's recordings."""
    directory = {captured(framework).parent for framework in FRAMEWORKS}.pop()
    mode = ["-p", "no:xdist"] if os.environ.get("PYTEST_XDIST_WORKER") else ["-n", "2"]
    pytest_argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *mode]
    done = subprocess.run(
        [*pytest_argv, "-k", "inside_pytest", __file__],
        env=clean_env(**{FIXTURES_VAR: str(directory)}),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"{len(FRAMEWORKS)} passed" in done.stdout.splitlines()[-1]
