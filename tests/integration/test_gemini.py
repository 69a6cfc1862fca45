"""The Gemini API through the official google-genai SDK: captured against a scripted upstream that
speaks Gemini's wire format, replayed strict with no key, a changed prompt missing by component, and
live calls priced from the table."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import google.genai  # noqa: F401  (in the test extra: missing, this fails; never skips)
import pytest
from attest_toolkit.fixtures import document as fx
from capture_helpers import run_attest
from conftest import AGENTS, clean_env, run_cli
from upstream import (
    FakeUpstream,
    gemini_answer,
    gemini_embeddings,
    gemini_error,
    gemini_function_call,
    gemini_stream,
    gemini_tokens,
    gemini_usage,
)

KEY = "AIzaSy" + "G" * 33  # the shape of a Google API key
AGENT = AGENTS / "gemini_agent.py"
# Variables that would point google-genai elsewhere or give it a key: a test sets what it means to.
_GOOGLE = ("GOOGLE_API_KEY", "GEMINI_API_KEY", "GOOGLE_GEMINI_BASE_URL", "GOOGLE_GENAI_USE_VERTEXAI")


def env(**extra: str) -> dict[str, str]:
    base = {k: v for k, v in clean_env().items() if k not in _GOOGLE}
    return {**base, "PYTHONIOENCODING": "utf-8", **extra}


def flow_replies() -> list:
    return [
        gemini_function_call("multiply", {"a": 1231, "b": 2331}),
        gemini_answer("1231 * 2331 = 2,869,461", gemini_usage(60, 12)),
        gemini_stream(["Two million, ", "eight hundred sixty-nine thousand, ", "four hundred sixty-one."]),
        gemini_tokens(9),
        gemini_embeddings([0.25, -0.5, 0.125]),
    ]


@dataclass
class Flow:
    fixtures_dir: Path
    upstream: FakeUpstream
    out: str


def agent(*args: str) -> list[str]:
    return [sys.executable, str(AGENT), *args]


def attest(fixtures_dir: Path, *args: str, **extra: str):
    """`attest COMMAND [OPTIONS] --fixtures-dir DIR -- AGENT...` in a clean environment plus `extra`."""
    cut = args.index("--")
    argv = [*args[:cut], "--fixtures-dir", str(fixtures_dir), *args[cut:]]
    return run_attest(*argv, env=env(**extra), cwd=fixtures_dir.parent)


@pytest.fixture(scope="module")
def flow(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Flow]:
    fixtures_dir = tmp_path_factory.mktemp("gemini") / "fixtures"
    with FakeUpstream(flow_replies()) as upstream:
        captured = attest(
            fixtures_dir, "capture", "--name", "gemini", "--", *agent("flow"),
            ATTEST_GEMINI_UPSTREAM=upstream.url, GEMINI_API_KEY=KEY,
        )  # fmt: skip
        assert captured.returncode == 0, captured.stderr
        yield Flow(fixtures_dir, upstream, captured.stdout)


def test_capture_sends_the_callers_key_upstream_and_stores_none_of_it(flow: Flow) -> None:
    sent = flow.upstream.requests
    # The API version is the SDK's default (v1beta in older releases, v1 in newer ones).
    assert [s.path.split("/", 2)[2] for s in sent] == [
        "models/gemini-2.5-flash:generateContent",
        "models/gemini-2.5-flash:generateContent",
        "models/gemini-2.5-flash:streamGenerateContent",
        "models/gemini-2.5-flash:countTokens",
        "models/gemini-embedding-001:batchEmbedContents",
    ]
    assert sent[2].query == "alt=sse"
    assert all({k.lower(): v for k, v in s.headers.items()}["x-goog-api-key"] == KEY for s in sent)
    path = flow.fixtures_dir / "gemini.attest.json"
    text = path.read_text(encoding="utf-8")
    assert KEY not in text and "x-goog-api-key" not in text.lower()
    model = fx.model_interactions(fx.read_fixture(path))
    assert {i["provider"] for i in model} == {"gemini"}
    # The stream is stored event by event, as Google framed it.
    assert model[2]["response"]["body"]["sse"][0].endswith("\r\n\r\n")
    assert len(model[2]["response"]["body"]["sse"]) == 3
    assert model[0]["request"]["json"]["systemInstruction"]["parts"][0]["text"].startswith("You are")


def test_a_capture_replays_strict_with_no_key_and_no_upstream_call(flow: Flow) -> None:
    assert "tool multiply(1231, 2331) = 2869461" in flow.out
    calls = len(flow.upstream.requests)
    replayed = attest(
        flow.fixtures_dir, "replay", "--mode", "strict", "--name", "gemini", "--", *agent("flow")
    )
    assert replayed.returncode == 0, replayed.stderr
    assert len(flow.upstream.requests) == calls
    assert replayed.stdout == flow.out + "attest replay: 5 replayed · 0 live model calls · $0.00\n"
    assert "streamed: Two million, |eight hundred sixty-nine thousand, |four hundred sixty-one." in flow.out
    assert "tokens: 9" in flow.out and "embedding: [0.25, -0.5, 0.125]" in flow.out


def test_a_changed_prompt_misses_naming_the_messages(flow: Flow) -> None:
    replayed = attest(
        flow.fixtures_dir, "replay", "--mode", "strict", "--name", "gemini", "--",
        *agent("flow", "What is 1231 * 2332?"),
    )  # fmt: skip
    assert replayed.returncode == 2, replayed.stderr
    miss = "replay miss: messages changed: messages[0].parts[0].text (hash "
    # The SDK raised Google's own 400 error, with the miss in it.
    assert f"google error 400: {miss}" in replayed.stderr
    assert miss in replayed.stdout + replayed.stderr


def test_a_changed_system_instruction_misses_naming_the_system_prompt(flow: Flow, tmp_path: Path) -> None:
    changed = tmp_path / "agent.py"
    changed.write_text(AGENT.read_text(encoding="utf-8").replace("careful calculator", "calculator"))
    replayed = attest(
        flow.fixtures_dir,
        "replay",
        "--mode",
        "strict",
        "--name",
        "gemini",
        "--",
        sys.executable,
        str(changed),
        "flow",
    )
    assert replayed.returncode == 2
    assert (
        "google error 400: replay miss: system prompt changed: system.parts[0].text (hash " in replayed.stderr
    )


def test_a_live_call_in_auto_mode_is_priced_from_the_table(tmp_path: Path) -> None:
    fixtures_dir = tmp_path / "fixtures"
    with FakeUpstream(
        [gemini_answer("hi"), gemini_answer("live", gemini_usage(100_000, 200_000, thoughts=100_000))]
    ) as up:
        captured = attest(
            fixtures_dir, "capture", "--name", "g", "--", *agent("ask", "Hello?"),
            ATTEST_GEMINI_UPSTREAM=up.url, GEMINI_API_KEY=KEY,
        )  # fmt: skip
        assert captured.returncode == 0, captured.stderr
        live = attest(
            fixtures_dir, "replay", "--mode", "auto", "--name", "g", "--", *agent("ask", "Goodbye?"),
            ATTEST_GEMINI_UPSTREAM=up.url, GEMINI_API_KEY=KEY,
        )  # fmt: skip
    assert live.returncode == 0, live.stderr
    # gemini-2.5-flash: 100,000 input tokens at $0.30 and 300,000 output (thinking included) at $2.50 per
    # million; the recording of the other question stays unused.
    assert live.stdout.splitlines() == [
        "answer: live",
        "attest replay: 0 replayed · 1 live model calls · $0.78 · 1 recording unused",
    ]


@pytest.mark.parametrize(("status", "kind"), [(429, "RESOURCE_EXHAUSTED"), (400, "INVALID_ARGUMENT")])
def test_a_google_error_is_recorded_and_replayed_as_it_happened(
    tmp_path: Path, status: int, kind: str
) -> None:
    fixtures_dir = tmp_path / "fixtures"
    with FakeUpstream([gemini_error(status, "Quota exceeded for gemini-2.5-flash.")]) as up:
        captured = attest(
            fixtures_dir, "capture", "--name", "e", "--expect-fail", "--", *agent("ask"),
            ATTEST_GEMINI_UPSTREAM=up.url, GEMINI_API_KEY=KEY,
        )  # fmt: skip
    assert captured.returncode == 0, captured.stderr
    replayed = attest(fixtures_dir, "replay", "--mode", "strict", "--name", "e", "--", *agent("ask"))
    expected = f"google error {status}: Quota exceeded for gemini-2.5-flash."
    assert expected in captured.stderr and expected in replayed.stderr
    doc = json.loads((fixtures_dir / "e.attest.json").read_text(encoding="utf-8"))
    (interaction,) = fx.model_interactions(doc)
    assert interaction["response"]["body"]["json"]["error"]["status"] == kind


def test_fixture_show_reads_gemini_replies(flow: Flow) -> None:
    shown = run_cli(["fixture", "show", "gemini", "--fixtures-dir", str(flow.fixtures_dir)], env=env())
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert any("tool calls: multiply" in line for line in lines)
    assert any('"1231 * 2331 = 2,869,461"' in line for line in lines)
    assert any('→ 200 sse (3 events)  "Two million, eight hundred' in line for line in lines)
