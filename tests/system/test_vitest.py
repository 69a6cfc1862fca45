"""@attest-ai/vitest (sdks/vitest): its own suite, run by real Vitest with the official openai and
@anthropic-ai/sdk packages against fixtures this side makes.

The fixtures: the bundled example (examples/fixtures) and a copy with an ignore rule, a run of the
package's Anthropic agent recorded by `attest capture` against a scripted upstream, the recorded
calls of the contract vectors' miss cases (tests/contract), a stream test/lane.test.ts reads raw,
and, when ../shared is there, real cassettes imported by `attest fixture import`. `make test`
installs the package's dependencies from its lockfile first.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from attest_toolkit.fixtures import document as fx
from conftest import REAL_CASSETTES, REPO, clean_env, run_cli, sse_exchange, write_fixture
from contract_vectors import write_miss_fixtures
from upstream import FakeUpstream, Reply

SDK = REPO / "sdks" / "vitest"
VITEST = SDK / "node_modules" / "vitest" / "vitest.mjs"

# Real cassettes the suite replays through the TypeScript SDKs, by the fixture name they import to.
CASSETTES = {
    "real-openai-tools-stream": "openai/chat_tools_stream_roundtrip.yaml",
    "real-openai-responses-tools": "openai/responses_tool_use_stream.yaml",
    "real-anthropic-tools-stream": "anthropic/messages_tool_use_stream.yaml",
    "real-anthropic-tools-roundtrip": "anthropic/messages_tool_use_roundtrip_nonstream.yaml",
}

pytestmark = pytest.mark.skipif(
    not VITEST.exists() or shutil.which("node") is None,
    reason="sdks/vitest has no node_modules: run `make test`, or `npm ci` in sdks/vitest",
)

TOOL_USE = {
    "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-6",
    "content": [
        {"type": "text", "text": "Let me check."},
        {
            "type": "tool_use",
            "id": "toolu_01A09q90qw90lq917835lq9",
            "name": "get_weather",
            "input": {"city": "Paris"},
        },
    ],
    "stop_reason": "tool_use",
    "stop_sequence": None,
    "usage": {"input_tokens": 412, "output_tokens": 58},
}


def _event(name: str, data: dict) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()


def _answer_events() -> list[bytes]:
    start = {**TOOL_USE, "id": "msg_01Bq9w4vG8kR2mN7pX3tY5zA", "content": [], "stop_reason": None}
    texts = ["It is sunny", " and 21°C in Paris."]
    return [
        _event("message_start", {"type": "message_start", "message": start}),
        _event(
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        ),
        *(
            _event(
                "content_block_delta",
                {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": t}},
            )
            for t in texts
        ),
        _event("content_block_stop", {"type": "content_block_stop", "index": 0}),
        _event(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {"output_tokens": 12},
            },
        ),
        _event("message_stop", {"type": "message_stop"}),
    ]


def capture_weather(fixtures: Path) -> None:
    """Record test/agents/weather.mjs with `attest capture`, its provider a scripted upstream."""
    replies = [
        Reply(body=json.dumps(TOOL_USE).encode()),
        Reply(headers={"content-type": "text/event-stream"}, events=_answer_events()),
    ]
    with FakeUpstream(replies) as upstream:
        env = clean_env(ATTEST_ANTHROPIC_UPSTREAM=upstream.url, ANTHROPIC_API_KEY="sk-ant-test-" + "d" * 40)
        done = run_cli(
            [
                "capture",
                "--name",
                "weather",
                "--fixtures-dir",
                str(fixtures),
                "--",
                "node",
                "test/agents/weather.mjs",
            ],
            cwd=SDK,
            env=env,
        )
    assert done.returncode == 0, done.stderr


def write_example_with_rules(fixtures: Path) -> None:
    """The bundled example with an ignore rule, so a changed temperature is served as drift."""
    doc = fx.read_fixture(REPO / "examples" / "fixtures" / "example.attest.json")
    fx.write_fixture(
        fixtures / "example-ignore.attest.json", {**doc, "match": {"ignore": ["params.temperature"]}}
    )


# test/lane.test.ts fetches this stream itself: the request it sends, and the words the events carry.
LANE_STREAM = {
    "model": "gpt-4o-mini",
    "messages": [{"role": "user", "content": "Count to five"}],
    "stream": True,
}
LANE_WORDS = ["one", "two", "three", "four", "five"]


def write_lane_stream(fixtures: Path) -> None:
    """A recorded stream of one event per word, and what test/lane.test.ts needs to ask for it."""
    chunk = {
        "id": "chatcmpl-Lane1",
        "object": "chat.completion.chunk",
        "created": 1764569740,
        "model": "gpt-4o-mini",
    }
    events = [
        "data: "
        + json.dumps({**chunk, "choices": [{"index": 0, "delta": {"content": w}, "finish_reason": None}]})
        + "\n\n"
        for w in LANE_WORDS
    ] + ["data: [DONE]\n\n"]
    write_fixture(fixtures, "lane-stream", [sse_exchange(LANE_STREAM, events)])
    sidecar = {"request": LANE_STREAM, "words": LANE_WORDS, "events": len(events)}
    (fixtures / "lane-stream.request.json").write_text(json.dumps(sidecar), encoding="utf-8")


def import_cassettes(fixtures: Path) -> bool:
    """Import the real cassettes when ../shared is there; False when it is not."""
    if not all((REAL_CASSETTES / relative).exists() for relative in CASSETTES.values()):
        return False
    for name, relative in CASSETTES.items():
        done = run_cli(
            [
                "fixture",
                "import",
                str(REAL_CASSETTES / relative),
                "--name",
                name,
                "--fixtures-dir",
                str(fixtures),
            ]
        )
        assert done.returncode == 0, done.stderr
    return True


def run_vitest(fixtures: Path, results: Path, shared: bool) -> subprocess.CompletedProcess[str]:
    bin_dir = str(Path(sys.executable).parent)  # attest and attest-engine of this venv come first on PATH
    env = clean_env(
        PATH=bin_dir + os.pathsep + os.environ.get("PATH", ""),
        ATTEST_VITEST_FIXTURES=str(fixtures),
        ATTEST_VITEST_SHARED="1" if shared else "",
    )
    build = subprocess.run(
        ["npm", "run", "--silent", "build"], cwd=SDK, env=env, capture_output=True, text=True, timeout=300
    )
    assert build.returncode == 0, build.stdout + build.stderr
    argv = [
        "node",
        str(VITEST),
        "run",
        "--reporter=default",
        "--reporter=json",
        f"--outputFile.json={results}",
    ]
    return subprocess.run(
        argv, cwd=SDK, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=900
    )


def test_vitest_suite_passes(tmp_path: Path) -> None:
    fixtures = tmp_path / "fixtures"
    fixtures.mkdir()
    capture_weather(fixtures)
    write_example_with_rules(fixtures)
    write_miss_fixtures(fixtures)  # for test/contract.test.ts
    write_lane_stream(fixtures)
    shared = import_cassettes(fixtures)
    results = tmp_path / "vitest.json"
    done = run_vitest(fixtures, results, shared)
    tail = (done.stdout[-8000:] + "\n" + done.stderr[-4000:]).strip()
    assert done.returncode == 0, tail
    report = json.loads(results.read_text(encoding="utf-8"))
    skipped = [
        t["fullName"] for f in report["testResults"] for t in f["assertionResults"] if t["status"] != "passed"
    ]
    assert report["numPassedTests"] > 0, tail
    # With ../shared present nothing may skip: the real cassettes must have replayed.
    if shared:
        assert skipped == [], skipped
