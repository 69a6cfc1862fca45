"""Per test: a suite of pytest tests, each replaying a two-call tool flow, run as real `pytest`
subprocesses in a temporary project.

- attest: the `attest_replay` fixture, one fixture file per test (one engine for the whole session);
- vcrpy: pytest-recording's `@pytest.mark.vcr`, one cassette per test, `--record-mode=none`;
- floor: no replay at all, a stub client returning the same response objects (pytest's own cost;
  the stub still builds the SDK client, whose TLS setup alone is tens of milliseconds, so that the
  difference is what replaying adds).

All three run the same agent code with the official openai SDK on the same recorded bytes; the cost a
replay adds to a test is its run time minus the floor's, divided by the number of tests.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from attest_toolkit.pytest_plugin import lane
from attest_toolkit.pytest_plugin.client import EngineProcess
from attest_toolkit.pytest_plugin.record import point_at, restore
from common import (
    MODEL,
    SCRUB,
    SYSTEM,
    Row,
    cassette_interaction,
    chat_response,
    clean_env,
    exchange,
    median,
    ms,
    ratio,
    recordings,
    timed,
    write_cassette,
    write_fixture,
)

TESTS_PER_FILE = 30
TARGET_RATIO, TARGET_ADDED = 1.2, 0.010
TARGET_REPLAY_SHARE = 0.6  # what the replay adds to a test, against what vcrpy adds
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "The current weather in a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
]
CALL_ID = "call_Ab12Cd34Ef56Gh78Ij90Kl12"

AGENT = f'''
"""The agent under test: asks for the weather, runs the tool the model chose, returns the answer."""
import json
import os

import openai

MODEL = {MODEL!r}
SYSTEM = {SYSTEM!r}
TOOLS = {TOOLS!r}


def client():
    return openai.OpenAI(api_key=os.environ.get("OPENAI_API_KEY", "bench-placeholder"), max_retries=0)


def get_weather(city):
    return f"Sunny, 21 C in {{city}}"


def run_flow(llm, i):
    messages = [{{"role": "system", "content": SYSTEM}}, {{"role": "user", "content": f"Weather in city {{i}}?"}}]
    first = llm.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS)
    call = first.choices[0].message.tool_calls[0]
    messages.append({{"role": "assistant", "tool_calls": [{{"id": call.id, "type": "function",
        "function": {{"name": call.function.name, "arguments": call.function.arguments}}}}]}})
    result = get_weather(json.loads(call.function.arguments)["city"])
    messages.append({{"role": "tool", "tool_call_id": call.id, "content": result}})
    final = llm.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS)
    return final.choices[0].message.content


class Stub:
    """Answers from recorded response bodies, in order, as the SDK's own objects (no HTTP at all).
    It still builds the SDK client the agent would build, so only the replay itself differs."""

    def __init__(self, path):
        client().close()
        with open(path, encoding="utf-8") as fh:
            self._replies = [openai.types.chat.ChatCompletion.model_validate(r) for r in json.load(fh)]
        self.chat = self
        self.completions = self

    def create(self, **_kwargs):
        return self._replies.pop(0)
'''

HEADER = {
    "attest": "from agent import client, run_flow\n",
    "vcrpy": "import pytest\nfrom agent import client, run_flow\n",
    "floor": "from pathlib import Path\nfrom agent import Stub, run_flow\n\nSTUBS = Path(__file__).parent / 'stubs'\n",
}
BODY = {
    "attest": """
def test_flow_{i}(attest_replay):
    with attest_replay("flow-{i}"):
        assert run_flow(client(), {i}) == "It is sunny, 21 C, in city {i}."
""",
    "vcrpy": """
@pytest.mark.vcr
def test_flow_{i}():
    assert run_flow(client(), {i}) == "It is sunny, 21 C, in city {i}."
""",
    "floor": """
def test_flow_{i}():
    assert run_flow(Stub(STUBS / "flow-{i}.json"), {i}) == "It is sunny, 21 C, in city {i}."
""",
}
ARGS = {
    "attest": ["--attest-replay", "strict"],
    "vcrpy": ["--record-mode=none"],
    "floor": [],
}


@dataclass(frozen=True)
class Size:
    tests: int
    runs: int


FULL, QUICK = Size(tests=300, runs=3), Size(tests=30, runs=1)


def flow_requests(i: int) -> tuple[dict, dict]:
    """The two requests the agent sends for test i (what it sends, so the fixture matches)."""
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": f"Weather in city {i}?"}]
    first = {"model": MODEL, "messages": list(messages), "tools": TOOLS}
    call = {"id": CALL_ID, "type": "function", "function": {"name": "get_weather", "arguments": _args(i)}}
    messages.append({"role": "assistant", "tool_calls": [call]})
    messages.append({"role": "tool", "tool_call_id": CALL_ID, "content": f"Sunny, 21 C in city {i}"})
    return first, {"model": MODEL, "messages": messages, "tools": TOOLS}


def _args(i: int) -> str:
    return json.dumps({"city": f"city {i}"})


def flow_responses(i: int) -> tuple[dict, dict]:
    call = {"id": CALL_ID, "type": "function", "function": {"name": "get_weather", "arguments": _args(i)}}
    return chat_response(None, tool_calls=[call]), chat_response(f"It is sunny, 21 C, in city {i}.")


def build(root: Path, tests: int) -> dict[str, Path]:
    """One project per variant, from the same recorded bytes; returns each project's directory."""
    projects = {name: root / name for name in BODY}
    for name, project in projects.items():
        (project / "tests").mkdir(parents=True)
        (project / "pytest.ini").write_text("[pytest]\ntestpaths = tests\n", encoding="utf-8")
        (project / "tests" / "agent.py").write_text(AGENT, encoding="utf-8")
        for first in range(0, tests, TESTS_PER_FILE):
            cases = "".join(BODY[name].format(i=i) for i in range(first, min(first + TESTS_PER_FILE, tests)))
            module = project / "tests" / f"test_flows_{first // TESTS_PER_FILE:02d}.py"
            module.write_text(HEADER[name] + cases, encoding="utf-8")
    for i in range(tests):
        requests, responses = flow_requests(i), flow_responses(i)
        fixture = write_fixture(
            projects["attest"] / "tests" / "attest" / "fixtures",
            f"flow-{i}",
            [exchange(q, r) for q, r in zip(requests, responses, strict=True)],
        )
        recs = recordings(fixture)
        module = f"test_flows_{i // TESTS_PER_FILE:02d}"
        cassette = projects["vcrpy"] / "tests" / "cassettes" / module / f"test_flow_{i}.yaml"
        write_cassette(
            cassette, [cassette_interaction(q, rec) for q, rec in zip(requests, recs, strict=True)]
        )
        stub = projects["floor"] / "tests" / "stubs" / f"flow-{i}.json"
        stub.parent.mkdir(exist_ok=True)
        stub.write_text(json.dumps([json.loads(rec.body) for rec in recs]), encoding="utf-8")
    return projects


def run_suite(project: Path, args: list[str], tests: int) -> None:
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args]
    proc = subprocess.run(argv, cwd=project, env=clean_env(), capture_output=True, text=True, timeout=600)
    if not re.search(rf"\b{tests} passed\b", proc.stdout) or proc.returncode != 0:
        tail = "\n".join(proc.stdout.splitlines()[-15:])
        raise AssertionError(f"{project.name}: expected {tests} passing tests\n{tail}\n{proc.stderr[-2000:]}")


def _agent(project: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_agent", project / "tests" / "agent.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def replay_costs(projects: dict[str, Path], tests: int) -> dict[str, float]:
    """Each test's body in this process, the variants taking turns test by test, median seconds.

    The whole-run rows carry pytest, its plugins and every test's SDK client (its TLS set-up alone is
    tens of milliseconds and moves by more than a replay costs between runs); here the three variants
    run the same agent on the same bytes side by side, so noise hits them alike and the difference is
    what replaying a test costs: attest opens the test's session, makes the two calls through the
    engine and closes it; vcrpy loads the test's cassette and makes the two calls through its stubs."""
    import vcr

    agent = _agent(projects["attest"])
    fixtures = projects["attest"] / "tests" / "attest" / "fixtures"
    cassettes = projects["vcrpy"] / "tests" / "cassettes"
    stubs = projects["floor"] / "tests" / "stubs"
    answer = "It is sunny, 21 C, in city {}."
    recorder = vcr.VCR(record_mode="none")
    engine = EngineProcess(env=clean_env())
    saved = point_at({})  # the provider variables as they were, whatever a variant sets meanwhile
    for var in SCRUB:
        os.environ.pop(var, None)

    def attest(i: int) -> None:
        sid, env = engine.open_session([fixtures / f"flow-{i}.attest.json"], "strict", False)
        lane.route(engine.url, engine.lane)  # as the pytest helper does: the test's calls skip HTTP
        before = point_at(env)
        try:
            assert agent.run_flow(agent.client(), i) == answer.format(i)
        finally:
            restore(before)
            engine.close_session(sid)

    def vcrpy(i: int) -> None:
        with recorder.use_cassette(
            str(cassettes / f"test_flows_{i // TESTS_PER_FILE:02d}" / f"test_flow_{i}.yaml")
        ):
            assert agent.run_flow(agent.client(), i) == answer.format(i)

    def floor(i: int) -> None:
        assert agent.run_flow(agent.Stub(stubs / f"flow-{i}.json"), i) == answer.format(i)

    variants: dict[str, Callable[[int], None]] = {"attest": attest, "vcrpy": vcrpy, "floor": floor}
    seconds: dict[str, list[float]] = {name: [] for name in variants}
    try:
        for i in range(tests):
            for name, body in variants.items():
                seconds[name].append(timed(lambda b=body, n=i: b(n)))
    finally:
        lane.unroute_all()
        engine.stop()
        restore(saved)
    return {name: median(values[1:]) for name, values in seconds.items()}  # the first pays imports


def run(workdir: Path, quick: bool = False) -> list[Row]:
    size = QUICK if quick else FULL
    projects = build(workdir, size.tests)
    seconds: dict[str, list[float]] = {name: [] for name in projects}
    order = list(projects)
    for r in range(size.runs):
        for name in order[r % 3 :] + order[: r % 3]:  # rotate the order between runs
            seconds[name].append(timed(lambda n=name: run_suite(projects[n], ARGS[n], size.tests)))
    total = {name: median(values) for name, values in seconds.items()}
    added = {name: (total[name] - total["floor"]) / size.tests for name in ("attest", "vcrpy")}
    n = size.tests
    each = replay_costs(projects, n)
    cost = {name: each[name] - each["floor"] for name in ("attest", "vcrpy")}
    return [
        Row(
            "per test",
            f"{n} tests, two-call tool flow: whole run, attest vs vcrpy",
            f"{total['attest']:.2f} s",
            f"{total['vcrpy']:.2f} s",
            ratio(total["attest"], total["vcrpy"]),
            f"<= {TARGET_RATIO}x",
            total["attest"] / total["vcrpy"] <= TARGET_RATIO,
        ),
        Row(
            "per test",
            f"{n} tests: whole run, attest vs no replay (stub client)",
            f"{total['attest']:.2f} s",
            f"{total['floor']:.2f} s",
            ratio(total["attest"], total["floor"]),
        ),
        Row(
            "per test",
            "added per test over no replay: attest vs vcrpy",
            ms(added["attest"]),
            ms(added["vcrpy"]),
            ratio(added["attest"], added["vcrpy"]) if added["vcrpy"] > 0 else "n/a",
            f"< {TARGET_ADDED * 1000:.0f} ms",
            added["attest"] < TARGET_ADDED,
        ),
        Row(
            "per test",
            "a test's replay in one process, variants in turn (median): attest vs vcrpy",
            ms(each["attest"]),
            ms(each["vcrpy"]),
            ratio(each["attest"], each["vcrpy"]),
            "<= 1.0x",
            each["attest"] <= each["vcrpy"],
        ),
        Row(
            "per test",
            "what the replay adds to that test over the stub client: attest vs vcrpy",
            ms(cost["attest"]),
            ms(cost["vcrpy"]),
            ratio(cost["attest"], cost["vcrpy"]) if cost["vcrpy"] > 0 else "n/a",
            f"<= {TARGET_REPLAY_SHARE}x",
            cost["vcrpy"] > 0 and cost["attest"] <= TARGET_REPLAY_SHARE * cost["vcrpy"],
        ),
    ]


if __name__ == "__main__":  # a look at the generated projects: python bench/per_test.py DIR
    out = Path(sys.argv[1])
    build(out, 3)
    print(textwrap.dedent(f"built 3 tests per variant under {out}"))
