"""A call that went around the replay names the client of the provider it went to: a module-level
`genai.Client()` is not an `OpenAI()`, and the agent gets that provider's own error."""

from __future__ import annotations

import json

import pytest
from attest_toolkit import providers
from attest_toolkit.replay import bypass
from test_loud_misses import suite as loud_suite
from upstream import FakeUpstream, Reply

suite = loud_suite

# google-genai's client built at import, before any replay: it keeps the Gemini API's URL, whose name
# resolves to the local fake (its port in FAKE_PORT), so nothing leaves the machine.
GEMINI_MODULE_LEVEL = """
import os
import socket

from google import genai
from google.genai import errors, types

_resolve = socket.getaddrinfo
def _to_fake(host, port, *args, **kwargs):
    return _resolve("127.0.0.1" if host == "generativelanguage.googleapis.com" else host, port, *args, **kwargs)
socket.getaddrinfo = _to_fake

CLIENT = genai.Client(
    api_key="AIza-not-a-real-key",
    http_options=types.HttpOptions(base_url=f"http://generativelanguage.googleapis.com:{os.environ['FAKE_PORT']}"),
)

def test_module_level_client(attest_replay):
    with attest_replay("hello"):
        try:
            CLIENT.models.generate_content(model="gemini-2.5-flash", contents="Say hello")
        except errors.ClientError as exc:
            print("agent saw:", exc.code, exc.status)
            raise
"""

LINE = (
    "attest replay: a call to generativelanguage.googleapis.com went around the replay; the likely cause "
    "is a client built before attest_replay (a module-level genai.Client() keeps the provider's URL): "
    "build it inside the block"
)


def test_a_module_level_gemini_client_is_blocked_naming_genai_client(
    suite: pytest.Pytester, monkeypatch
) -> None:
    suite.makepyfile(test_bypass=GEMINI_MODULE_LEVEL)
    answer = {"candidates": [{"content": {"role": "model", "parts": [{"text": "live"}]}}]}
    with FakeUpstream([Reply(body=json.dumps(answer).encode())]) as upstream:
        monkeypatch.setenv("FAKE_PORT", upstream.url.rsplit(":", 1)[1])
        result = suite.runpytest_subprocess("--attest-replay=strict", "-s")
    result.assert_outcomes(failed=1)
    assert upstream.requests == []  # blocked before anything was sent
    assert LINE in result.outlines
    assert any(
        line.endswith("agent saw: 400 INVALID_ARGUMENT") for line in result.outlines
    )  # Google's error form


@pytest.mark.parametrize(
    ("host", "pytest_client", "vitest_client"),
    [
        ("api.openai.com", "OpenAI()", "new OpenAI()"),
        ("api.anthropic.com", "Anthropic()", "new Anthropic()"),
        ("generativelanguage.googleapis.com", "genai.Client()", "new GoogleGenAI()"),
        (
            "us-central1-aiplatform.googleapis.com",
            "genai.Client(vertexai=True)",
            "new GoogleGenAI({ vertexai: true })",
        ),
        ("my-resource.openai.azure.com", "AzureOpenAI()", "new AzureOpenAI()"),
        (
            "bedrock-runtime.us-east-1.amazonaws.com",
            'boto3.client("bedrock-runtime")',
            "new BedrockRuntimeClient()",
        ),
        ("api.groq.com", "Groq()", "new Groq()"),
        ("api.mistral.ai", "Mistral()", "new Mistral()"),
        ("api.together.ai", "Together()", "new Together()"),
    ],
)
def test_each_provider_host_names_its_own_client_for_either_runner(
    host: str, pytest_client: str, vitest_client: str
) -> None:
    assert f"(a module-level {pytest_client} keeps" in bypass.message(host, "pytest")
    # The Vitest helper asks the engine for the refusal it answers with: its line is in the body.
    body = json.loads(bypass.refusal(host, "vitest")["body"])
    assert f"(a module-level {vitest_client} keeps" in json.dumps(body)


def test_every_recorded_provider_names_a_client_for_both_runners() -> None:
    for provider in providers.PROVIDERS.values():
        assert set(provider.clients) == set(bypass.RUNNERS), provider.name
