"""Agent frameworks on Gemini and Azure OpenAI: pydantic-ai's Google model, langchain-google-genai, and
LiteLLM's `gemini/` and `azure/` models, each captured against a scripted upstream speaking the
provider's wire format, then replayed strict with no key and no upstream, streamed and not; a changed
question misses."""

from __future__ import annotations

import json
from pathlib import Path

import google.genai  # noqa: F401  (in the test extra: missing, this fails; never skips)
import pytest
from attest_toolkit.fixtures import document as fx
from attest_toolkit.providers.env import ALL_VARS, KEY_VARS
from capture_helpers import run_agent
from conftest import AGENTS, chat_response, clean_env
from scripted import chat_text_stream
from test_vertex import MODELS as VERTEX_MODELS
from test_vertex import credentials_file
from upstream import FakeUpstream, Reply, gemini_answer, gemini_stream, google_token

AGENT = AGENTS / "google_frameworks.py"
GEMINI_KEY = "AIzaSy" + "F" * 33
AZURE_KEY = "0123456789abcdef" * 2
_SCRUB = {
    *ALL_VARS,
    *KEY_VARS.values(),
    "GOOGLE_API_KEY",
    "GOOGLE_GENAI_USE_VERTEXAI",
    "AZURE_API_KEY",
    "GOOGLE_CLOUD_PROJECT",
    "GOOGLE_CLOUD_LOCATION",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "CLOUDSDK_CONFIG",
}
TOKEN = "ya29.a0AfB_" + "v" * 40  # the shape of a Google OAuth access token
VERTEX = {"GOOGLE_CLOUD_PROJECT": "attest-demo", "GOOGLE_CLOUD_LOCATION": "us-central1"}


def gemini_replies() -> list[Reply]:
    return [gemini_answer("Hello from Gemini"), gemini_stream(["Hello ", "again"])]


def azure_replies() -> list[Reply]:
    return [
        Reply(body=json.dumps(chat_response("Hello from Azure")).encode()),
        chat_text_stream("Hello again"),
    ]


# scenario: (its provider, the scripted answers, the variables capture needs, what it prints)
SCENARIOS = {
    "pydantic-ai-gemini": ("gemini", gemini_replies, {"GEMINI_API_KEY": GEMINI_KEY}, "Hello from Gemini"),
    "langchain-gemini": ("gemini", gemini_replies, {"GEMINI_API_KEY": GEMINI_KEY}, "Hello from Gemini"),
    "litellm-gemini": ("gemini", gemini_replies, {"GEMINI_API_KEY": GEMINI_KEY}, "Hello from Gemini"),
    "litellm-azure": (
        "azure",
        azure_replies,
        {"AZURE_OPENAI_API_KEY": AZURE_KEY, "AZURE_API_VERSION": "2024-10-21"},
        "Hello from Azure",
    ),
}


def env(**extra: str) -> dict[str, str]:
    base = {k: v for k, v in clean_env().items() if k not in _SCRUB}
    # LiteLLM fetches its price map from the network unless told to use the one it ships.
    return {**base, "PYTHONIOENCODING": "utf-8", "LITELLM_LOCAL_MODEL_COST_MAP": "True", **extra}


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_a_framework_on_gemini_or_azure_is_captured_and_replayed_strict(
    scenario: str, tmp_path: Path
) -> None:
    provider, replies, needs, answer = SCENARIOS[scenario]
    fixtures = tmp_path / "fixtures"
    with FakeUpstream(replies()) as up:
        upstream = {f"ATTEST_{provider.upper()}_UPSTREAM": up.url}
        captured = run_agent(
            AGENT, fixtures, ("capture", "--name", "f", "--", scenario), env(**upstream, **needs)
        )
        assert captured.returncode == 0, captured.stderr
        assert len(up.requests) == 2
        # Replayed with no key: only the API version LiteLLM needs for Azure stays.
        keyless = {k: v for k, v in needs.items() if "KEY" not in k}
        replayed = run_agent(
            AGENT, fixtures, ("replay", "--mode", "strict", "--name", "f", "--", scenario), env(**keyless)
        )
        changed = run_agent(
            AGENT,
            fixtures,
            ("replay", "--mode", "strict", "--name", "f", "--", scenario, "Bye"),
            env(**keyless),
        )
        assert len(up.requests) == 2
    assert captured.stdout.splitlines()[0] == f"answer: {answer}"
    assert captured.stdout.splitlines()[1].startswith("streamed: Hello")
    assert replayed.returncode == 0, replayed.stderr
    assert replayed.stdout == captured.stdout + "attest replay: 2 replayed · 0 live model calls · $0.00\n"
    doc = fx.read_fixture(fixtures / "f.attest.json")
    assert {i["provider"] for i in fx.model_interactions(doc)} == {provider}
    text = (fixtures / "f.attest.json").read_text(encoding="utf-8")
    assert GEMINI_KEY not in text and AZURE_KEY not in text
    assert changed.returncode != 0
    assert "replay miss: messages changed" in changed.stdout + changed.stderr


@pytest.mark.parametrize("scenario", ["pydantic-ai-vertex", "langchain-vertex"])
def test_a_framework_on_vertex_ai_is_captured_and_replayed_strict_with_no_google_credentials(
    scenario: str, tmp_path: Path
) -> None:
    home = tmp_path / "home"  # holds no gcloud credentials
    home.mkdir()
    fixtures = tmp_path / "fixtures"
    with FakeUpstream(gemini_replies()) as up, FakeUpstream([google_token(TOKEN)]) as tokens:
        adc = credentials_file(tmp_path, tokens.url + "/token")
        capture_env = env(
            HOME=str(home), ATTEST_VERTEX_UPSTREAM=up.url, GOOGLE_APPLICATION_CREDENTIALS=str(adc), **VERTEX
        )
        captured = run_agent(AGENT, fixtures, ("capture", "--name", "f", "--", scenario), capture_env)
        assert captured.returncode == 0, captured.stderr
        assert [r.path for r in up.requests] == [
            VERTEX_MODELS + "gemini-2.5-flash:generateContent",
            VERTEX_MODELS + "gemini-2.5-flash:streamGenerateContent",
        ]
        assert all(r.headers["Authorization"] == f"Bearer {TOKEN}" for r in up.requests)
        replay = ("replay", "--mode", "strict", "--name", "f", "--", scenario)
        replayed = run_agent(AGENT, fixtures, replay, env(HOME=str(home), **VERTEX))
        changed = run_agent(AGENT, fixtures, (*replay, "Bye"), env(HOME=str(home), **VERTEX))
        assert len(up.requests) == 2 and len(tokens.requests) == 1
    assert captured.stdout.splitlines()[0] == "answer: Hello from Gemini"
    assert replayed.returncode == 0, replayed.stderr
    assert replayed.stdout == captured.stdout + "attest replay: 2 replayed · 0 live model calls · $0.00\n"
    doc = fx.read_fixture(fixtures / "f.attest.json")
    assert {i["provider"] for i in fx.model_interactions(doc)} == {"vertex"}
    assert TOKEN not in (fixtures / "f.attest.json").read_text(encoding="utf-8")
    assert changed.returncode != 0
    assert "replay miss: messages changed" in changed.stdout + changed.stderr
