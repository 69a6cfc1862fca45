"""Cassettes of the registry's providers import as that provider's model calls and replay strict to
its official SDK with no key: vcrpy records each agent against a scripted upstream, the cassette is
given the provider's real host (as a project's own cassettes have it), imported, and replayed. Hosts
that are not a provider's API stay plain HTTP. An imported reply keeps the ids the cassette recorded."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import boto3  # noqa: F401  (in the test extra: missing, this fails; never skips)
import google.genai  # noqa: F401
import openai
import pytest
import yaml
from attest_toolkit.credentials.scan import Secrets
from attest_toolkit.fixtures import document as fx
from attest_toolkit.fixtures.importer import import_cassettes
from attest_toolkit.replay.server import Engine
from capture_helpers import attest_in
from conftest import AGENTS, chat_response, clean_env, message_response, scrub
from scripted import chat_text_stream
from test_bedrock import credentials
from test_bedrock import flow_replies as bedrock_replies
from test_gemini import flow_replies as gemini_replies
from test_rebase import (
    ANTHROPIC_KEY,
    ANTHROPIC_TESTS,
    rebase,
    reply,
    strict,
    tool_use_response,
    write_anthropic_agent,
)
from upstream import FakeUpstream, Reply

# Variables that would point an SDK elsewhere or give it a key: each run sets only what it means to.
_SCRUB = ("GOOGLE_", "GEMINI_", "AZURE_", "OPENAI_", "AWS_")
AZURE_VERSION = "2024-10-21"
EMBEDDING = {
    "object": "list",
    "data": [{"object": "embedding", "index": 0, "embedding": [0.5, -0.25]}],
    "model": "text-embedding-3-small",
    "usage": {"prompt_tokens": 1, "total_tokens": 1},
}


def env(**extra: str) -> dict[str, str]:
    base = {k: v for k, v in clean_env().items() if not k.startswith(_SCRUB)}
    return {**base, "PYTHONIOENCODING": "utf-8", "AWS_CONFIG_FILE": "/nonexistent", **extra}


def vcrpy_patches_httpx2() -> bool:
    """vcrpy 9 patches httpx2 (openai 3 and google-genai send with it); vcrpy 6 only httpx."""
    import vcr.patch

    return hasattr(vcr.patch, "_Httpx2HttpTransport_handle_request")


def record(
    cassette: Path, replies: list[Reply], base_var: str, host: str, agent: list[str], **extra: str
) -> str:
    """vcrpy's cassette of `agent` answered by the scripted upstream (found through `base_var`), then
    given `host` as the server it was recorded from; the agent's output."""
    argv = [sys.executable, str(AGENTS / "vcr_recorder.py"), str(cassette), *agent[1:]]  # in its process
    with FakeUpstream(replies) as upstream:
        done = subprocess.run(
            argv,
            env=env(**{base_var: upstream.url, **extra}),
            capture_output=True,
            encoding="utf-8",
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        assert len(upstream.requests) == len(replies)
    if not cassette.exists() and not vcrpy_patches_httpx2():
        # a project on such a vcrpy has SDKs on httpx, and cassettes of theirs (`make test-vcr-matrix`)
        pytest.skip(f"vcrpy {version('vcrpy')} does not patch httpx2, which this SDK sends with: no cassette")
    text = cassette.read_text(encoding="utf-8")
    assert upstream.url in text
    cassette.write_text(text.replace(upstream.url, f"https://{host}"), encoding="utf-8")
    return done.stdout


def replay(fixtures_dir: Path, name: str, agent: list[str], **extra: str) -> subprocess.CompletedProcess[str]:
    """A strict replay of fixture `name` with no key and no upstream."""
    return attest_in(fixtures_dir, env(**extra), "replay", "--mode", "strict", "--name", name, "--", *agent)


PROVIDERS = {
    # provider: (the scripted replies, the variable the SDK reads its base URL from, the real host,
    #            the agent, what recording needs besides, what replay needs besides)
    "gemini": (
        gemini_replies,
        "GOOGLE_GEMINI_BASE_URL",
        "generativelanguage.googleapis.com",
        [sys.executable, str(AGENTS / "gemini_agent.py"), "flow"],
        {"GEMINI_API_KEY": "AIzaSy" + "G" * 33},
        {},
    ),
    "azure": (
        lambda: [
            Reply(body=json.dumps(chat_response("Hello from Azure")).encode()),
            chat_text_stream("Hello from the stream"),
            Reply(body=json.dumps(EMBEDDING).encode()),
        ],
        "AZURE_OPENAI_ENDPOINT",
        "contoso-eastus.openai.azure.com",
        [sys.executable, str(AGENTS / "azure_agent.py")],
        {"AZURE_OPENAI_API_KEY": "0123456789abcdef" * 2, "OPENAI_API_VERSION": AZURE_VERSION},
        {"OPENAI_API_VERSION": AZURE_VERSION},
    ),
    "bedrock": (
        bedrock_replies,
        "AWS_ENDPOINT_URL_BEDROCK_RUNTIME",
        "bedrock-runtime.us-east-1.amazonaws.com",
        [sys.executable, str(AGENTS / "bedrock_agent.py"), "flow"],
        credentials(),
        {},
    ),
}


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_providers_cassette_imports_as_its_calls_and_replays_strict_with_no_key(
    provider: str, tmp_path: Path
) -> None:
    replies, base_var, host, agent, recording, replaying = PROVIDERS[provider]
    cassette = tmp_path / "cassettes" / f"test_{provider}.yaml"
    out = record(cassette, replies(), base_var, host, agent, **recording)
    fixtures_dir = tmp_path / "fixtures"

    imported = import_cassettes([cassette], provider, fixtures_dir, secrets=Secrets())

    doc = fx.read_fixture(imported.path, Secrets())
    model = fx.model_interactions(doc)
    assert {i["provider"] for i in model} == {provider}
    assert len(model) == len(replies()) and fx.plain_interactions(doc) == []
    assert imported.plain == {}
    done = replay(fixtures_dir, provider, agent, **replaying)
    assert done.returncode == 0, done.stderr
    calls = len(model)
    assert done.stdout == out + f"attest replay: {calls} replayed · 0 live model calls · $0.00\n"


def test_bedrocks_binary_event_streams_import_frame_by_frame(tmp_path: Path) -> None:
    """boto3's event streams are binary: vcrpy's YAML holds them as `!!binary`; the fixture as frames."""
    replies, base_var, host, agent, recording, _ = PROVIDERS["bedrock"]
    cassette = tmp_path / "bedrock.yaml"
    record(cassette, replies(), base_var, host, agent, **recording)
    assert "!!binary" in cassette.read_text(encoding="utf-8")

    model = fx.model_interactions(fx.read_fixture(import_cassettes([cassette], "b", tmp_path).path))

    # boto3 escapes the model id's `:`; the fixture has the path as capture stores it.
    assert model[0]["path"] == "/model/us.amazon.nova-pro-v1:0/converse"
    stream = model[2]["response"]["body"]["eventstream"]
    assert [dict(e["headers"])[":event-type"] for e in stream][:2] == ["messageStart", "contentBlockDelta"]
    assert json.loads(stream[1]["payload"])["delta"] == {"text": "Two million, "}


def vcr_interaction(method: str, uri: str, content_type: str, body: str) -> dict:
    return {
        "request": {"body": None, "headers": {}, "method": method, "uri": uri},
        "response": {
            "status": {"code": 200, "message": "OK"},
            "headers": {"Content-Type": [content_type]},
            "body": {"string": body},
        },
    }


@pytest.mark.parametrize(
    "uri",
    [
        "https://storage.googleapis.com/bucket/cat.png",  # Google, not the Gemini or Vertex AI API
        "https://my-bucket.s3.amazonaws.com/doc.pdf",  # AWS, not Bedrock Runtime
        "https://myaccount.blob.core.windows.net/c/doc.txt",  # Azure, not Azure OpenAI
        "https://api.cerebras.ai/v1/chat/completions",  # not a provider of the registry
    ],
)
def test_a_host_that_is_no_providers_api_stays_plain_http(uri: str, tmp_path: Path) -> None:
    cassette = tmp_path / "c.yaml"
    cassette.write_text(
        yaml.safe_dump({"interactions": [vcr_interaction("GET", uri, "text/plain", "bytes")], "version": 1})
    )

    imported = import_cassettes([cassette], "c", tmp_path, secrets=Secrets())

    doc = fx.read_fixture(imported.path, Secrets())
    assert fx.model_interactions(doc) == []
    assert [i["url"] for i in fx.plain_interactions(doc)] == [uri]


RECORDED_ID = "chatcmpl-" + "CmQ5dYv0pSgL2xKf8uNw3RtZ7aBe"
RECORDED_CALL = "call_" + "Hq2Wk9Zr4Tn7Lp1Xv6Bs3Mc8"


def test_a_replayed_import_serves_the_ids_and_times_the_cassette_recorded(tmp_path: Path) -> None:
    """A migrated suite's snapshots assert the recorded ids: replay serves them as the cassette has them."""
    tool_call = {"id": RECORDED_CALL, "type": "function", "function": {"name": "f", "arguments": "{}"}}
    first = chat_response(ident=RECORDED_ID, tool_calls=[tool_call])
    second = chat_response("done", ident=RECORDED_ID[:-4] + "Zz90")
    ask = [{"role": "user", "content": "go"}]

    def echoed(call_id: str) -> list[dict]:
        call = {**tool_call, "id": call_id}
        return [
            *ask,
            {"role": "assistant", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": call_id, "content": "1"},
        ]

    uri = "https://api.openai.com/v1/chat/completions"
    interactions = []
    for messages, answer in ((ask, first), (echoed(RECORDED_CALL), second)):
        item = vcr_interaction("POST", uri, "application/json", json.dumps(answer))
        item["request"]["body"] = json.dumps({"model": "gpt-4o-mini", "messages": messages})
        interactions.append(item)
    cassette = tmp_path / "c.yaml"
    cassette.write_text(yaml.safe_dump({"interactions": interactions, "version": 1}))
    path = import_cassettes([cassette], "c", tmp_path, secrets=Secrets()).path

    with Engine(env={}, secrets=Secrets()) as engine:
        sid, base = engine.open_session([path], "strict")
        client = openai.OpenAI(base_url=base["OPENAI_BASE_URL"], api_key="unused", max_retries=0)
        reply = client.chat.completions.create(model="gpt-4o-mini", messages=ask)
        call = reply.choices[0].message.tool_calls[0]
        again = client.chat.completions.create(model="gpt-4o-mini", messages=echoed(call.id))
        summary = engine.close_session(sid)

    assert (reply.id, call.id, reply.created) == (RECORDED_ID, RECORDED_CALL, 1764569740)
    assert again.id == RECORDED_ID[:-4] + "Zz90"
    assert (summary["replayed"], summary["misses"]) == (2, 0)


def test_an_imported_tool_loop_is_rebased_keeping_the_recorded_tool_ids(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cassette's tool call id stays as recorded in the reply and in the request that answers it,
    so a rebase of drifted requests sees the same tool calls answered and goes ahead."""
    scrub(monkeypatch)
    write_anthropic_agent(pytester, ["Weather in Paris?", "Be brief."])
    pytester.makepyfile(test_agent=ANTHROPIC_TESTS, run_agent="import agent\nprint(agent.run())\n")
    cassette = pytester.path / "weather.yaml"
    replies = [reply(tool_use_response()), reply(message_response("It is sunny."))]
    record(
        cassette, replies, "ANTHROPIC_BASE_URL", "api.anthropic.com",
        [sys.executable, str(pytester.path / "run_agent.py")],
        ANTHROPIC_API_KEY=ANTHROPIC_KEY, PYTHONPATH=str(pytester.path),
    )  # fmt: skip
    path = import_cassettes([cassette], "weather", pytester.path / "tests" / "attest" / "fixtures").path
    recorded_id = tool_use_response()["content"][0]["id"]
    write_anthropic_agent(pytester, ["Be brief.", "Weather in Paris?"])  # the code's requests drifted
    strict(pytester).assert_outcomes(failed=1)

    result, upstream_calls = rebase(pytester, monkeypatch)

    result.assert_outcomes(passed=1)
    assert upstream_calls == 0
    assert "attest rebase: weather: 2 of 2 calls drifted" in result.stdout.str()
    second = fx.model_interactions(fx.read_fixture(path))[1]
    assert second["request"]["json"]["messages"][2]["content"][0]["tool_use_id"] == recorded_id
    strict(pytester).assert_outcomes(passed=1)
