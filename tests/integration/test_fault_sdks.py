"""Faults met by the retry logic of google-genai, boto3 (standard mode), pydantic-ai and LangChain:
each captured through attest from a scripted upstream, then replayed with `--fault`; the agent
recovers and strict replay passes."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from capture_helpers import run_attest
from conftest import AGENTS, chat_response, clean_env
from upstream import FakeUpstream, Reply, bedrock_converse, bedrock_converse_stream, gemini_answer

AGENT = AGENTS / "fault_agent.py"
AWS = {
    "AWS_ACCESS_KEY_ID": "AKIA" + "ATTESTTESTKEY123",
    "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG/bPxRfiCY" + "ATTESTSECRET",
}
_DROPPED = ("GOOGLE_API_KEY", "GEMINI_API_KEY", "GOOGLE_GEMINI_BASE_URL", "GOOGLE_GENAI_USE_VERTEXAI")
OPENAI_ANSWER = Reply(body=json.dumps(chat_response("Hello!")).encode())
CASES = {
    "gemini": (gemini_answer("Hello!"), {"GEMINI_API_KEY": "AIzaSy" + "G" * 33}, "ATTEST_GEMINI_UPSTREAM"),
    "bedrock": (bedrock_converse([{"text": "Hello!"}]), AWS, "ATTEST_BEDROCK_UPSTREAM"),
    "pydantic-ai": (OPENAI_ANSWER, {"OPENAI_API_KEY": "sk-" + "a" * 48}, "ATTEST_OPENAI_UPSTREAM"),
    "langchain": (OPENAI_ANSWER, {"OPENAI_API_KEY": "sk-" + "a" * 48}, "ATTEST_OPENAI_UPSTREAM"),
}


def attest(fixtures_dir: Path, *args: str, **extra: str):  # type: ignore[no-untyped-def]
    env = {k: v for k, v in clean_env(PYTHONIOENCODING="utf-8").items() if k not in _DROPPED}
    cut = args.index("--")
    argv = [*args[:cut], "--fixtures-dir", str(fixtures_dir), *args[cut:]]
    return run_attest(*argv, env={**env, **extra}, cwd=fixtures_dir.parent)


def captured(tmp_path: Path, sdk: str, reply: Reply, key: dict[str, str], upstream_var: str) -> Path:
    fixtures_dir = tmp_path / "fixtures"
    with FakeUpstream([reply]) as up:
        done = attest(fixtures_dir, "capture", "--name", sdk, "--", sys.executable, str(AGENT), sdk,
                      **{upstream_var: up.url}, **key)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return fixtures_dir


@pytest.mark.parametrize("sdk", list(CASES))
def test_each_sdks_own_retries_recover_from_a_rate_limit_in_its_providers_shape(
    tmp_path: Path, sdk: str
) -> None:
    fixtures_dir = captured(tmp_path, sdk, *CASES[sdk])
    fault = "status=429,retry-after=0"
    done = attest(fixtures_dir, "replay", "--mode", "strict", "--name", sdk, "--fault", fault,
                  "--", sys.executable, str(AGENT), sdk)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines() == [
        "answer: Hello!",
        "attest replay: 1 replayed · 0 live model calls · $0.00 · 1 fault injected",
    ]


@pytest.mark.parametrize("sdk", ["gemini", "bedrock"])
def test_an_overload_on_every_request_fails_the_agent_with_its_sdks_own_error(
    tmp_path: Path, sdk: str
) -> None:
    fixtures_dir = captured(tmp_path, sdk, *CASES[sdk])
    done = attest(fixtures_dir, "replay", "--mode", "strict", "--name", sdk, "--fault", "every:status=503",
                  "--", sys.executable, str(AGENT), sdk)  # fmt: skip
    assert done.returncode == 1  # the agent failed; nothing diverged
    error = {"gemini": "ServerError", "bedrock": "ServiceUnavailableException"}[sdk]
    assert done.stdout.splitlines()[0] == f"error: {error}"
    # Every attempt is counted: google-genai's `attempts=3` are all of them, botocore's `max_attempts=3`
    # are its retries after the first.
    attempts = {"gemini": 3, "bedrock": 4}[sdk]
    assert f"· {attempts} faults injected" in done.stdout


def test_a_faulted_bedrock_stream_is_botocores_exception_from_the_stream(tmp_path: Path) -> None:
    fixtures_dir = captured(tmp_path, "bedrock-stream", bedrock_converse_stream(["Hel", "lo!"]), AWS,
                            "ATTEST_BEDROCK_UPSTREAM")  # fmt: skip
    done = attest(fixtures_dir, "replay", "--mode", "strict", "--name", "bedrock-stream", "--fault", "status=429",
                  "--", sys.executable, str(AGENT), "bedrock-stream")  # fmt: skip
    assert done.stdout.splitlines()[0] == "error: EventStreamError", done.stderr
