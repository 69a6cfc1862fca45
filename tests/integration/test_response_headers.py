"""Response headers: a recorded provider header is read back through each official SDK's raw response,
from a real engine (`EngineProcess`), on the fast path, the aiohttp path and the lane alike."""

from __future__ import annotations

import json
from pathlib import Path

import anthropic
import boto3
import httpx
import openai
from attest_toolkit.normalize import Exchange
from attest_toolkit.pytest_plugin import lane
from attest_toolkit.pytest_plugin.client import EngineProcess
from conftest import chat_request, chat_response, message_response, write_fixture
from google import genai
from google.genai import types

KEY = "sk-proj-" + "Zq8vN3kR7tW2xY5bC9dF1gH4jL6mP0sT"
# What the transport and the cookie jar add to every answer: never stored, never served.
NOISE = [
    ("Connection", "keep-alive"),
    ("Content-Length", "999"),
    ("Set-Cookie", "__cf_bm=EFUS91v3yF4QTsz8A1dTW1Pd; path=/; HttpOnly"),
    ("X-Echoed-Key", f"Bearer {KEY}"),
]
MESSAGE = {"model": "claude-haiku-4-5", "max_tokens": 64, "messages": [{"role": "user", "content": "Hi"}]}
GEMINI_PATH = "/v1/models/gemini-2.5-flash:generateContent"
CLAUDE = "anthropic.claude-3-5-haiku-20241022-v1:0"
BEDROCK_COUNTS = {
    "x-amzn-bedrock-input-token-count": "25",
    "x-amzn-bedrock-output-token-count": "7",
    "x-amzn-bedrock-cache-read-input-token-count": "3",
    "x-amzn-bedrock-cache-write-input-token-count": "0",
}


def exchange_with(path: str, request: dict, response: dict, headers: dict[str, str]) -> Exchange:
    sent = [("Content-Type", "application/json"), *headers.items(), *NOISE]
    return Exchange("POST", path, "", json.dumps(request).encode(), 200, sent, json.dumps(response).encode())


def session(engine: EngineProcess, fixture: Path) -> dict[str, str]:
    return engine.open_session([fixture], "strict", True)[1]


def openai_fixture(fixtures_dir: Path) -> Path:
    headers = {"openai-processing-ms": "517", "x-ratelimit-remaining-tokens": "149999981"}
    recorded = exchange_with("/v1/chat/completions", chat_request(), chat_response("Hello!"), headers)
    return write_fixture(fixtures_dir, "openai", [recorded] * 2)


def test_openai_with_raw_response_reads_the_recorded_headers(engine, fixtures_dir: Path) -> None:
    env = session(engine, openai_fixture(fixtures_dir))
    client = openai.OpenAI(base_url=env["OPENAI_BASE_URL"], api_key=env["OPENAI_API_KEY"], max_retries=0)
    raw = client.chat.completions.with_raw_response.create(**chat_request())
    assert raw.headers["openai-processing-ms"] == "517"
    assert raw.headers["x-ratelimit-remaining-tokens"] == "149999981"
    assert "set-cookie" not in raw.headers and "x-echoed-key" not in raw.headers
    assert raw.parse().choices[0].message.content == "Hello!"


def test_anthropic_with_raw_response_reads_the_recorded_headers(engine, fixtures_dir: Path) -> None:
    headers = {
        "anthropic-ratelimit-tokens-remaining": "4800000",
        "request-id": "req_011CZkTfmdQovVWg8SG5f6Lq",
    }
    recorded = exchange_with("/v1/messages", MESSAGE, message_response("Hi!"), headers)
    fixture = write_fixture(fixtures_dir, "anthropic", [recorded], "anthropic")
    env = session(engine, fixture)
    client = anthropic.Anthropic(
        base_url=env["ANTHROPIC_BASE_URL"], api_key=env["ANTHROPIC_API_KEY"], max_retries=0
    )
    raw = client.messages.with_raw_response.create(**MESSAGE)
    assert raw.headers["anthropic-ratelimit-tokens-remaining"] == "4800000"
    assert raw.headers["request-id"].startswith("req_")  # templated as ids are, served as an id
    assert "set-cookie" not in raw.headers


def test_google_genai_reads_the_recorded_headers_from_its_http_response(engine, fixtures_dir: Path) -> None:
    answer = {
        "candidates": [{"content": {"role": "model", "parts": [{"text": "Hi"}]}, "finishReason": "STOP"}],
        "usageMetadata": {"promptTokenCount": 2, "candidatesTokenCount": 1, "totalTokenCount": 3},
        "modelVersion": "gemini-2.5-flash",
    }
    request = {"contents": [{"parts": [{"text": "Hi"}], "role": "user"}]}
    recorded = exchange_with(GEMINI_PATH, request, answer, {"x-gemini-service-tier": "standard"})
    env = session(engine, write_fixture(fixtures_dir, "gemini", [recorded], "gemini"))
    options = types.HttpOptions(base_url=env["GOOGLE_GEMINI_BASE_URL"])
    client = genai.Client(api_key=env["GEMINI_API_KEY"], http_options=options)
    reply = client.models.generate_content(model="gemini-2.5-flash", contents="Hi")
    assert reply.text == "Hi"
    assert reply.sdk_http_response is not None and reply.sdk_http_response.headers is not None
    assert reply.sdk_http_response.headers["x-gemini-service-tier"] == "standard"


def test_boto3_invoke_model_reads_bedrocks_token_counts_from_the_recorded_headers(
    engine, fixtures_dir: Path
) -> None:
    body = {"anthropic_version": "bedrock-2023-05-31", "max_tokens": 64, "messages": MESSAGE["messages"]}
    path = f"/model/{CLAUDE}/invoke"
    recorded = exchange_with(path, body, message_response("Hi!"), BEDROCK_COUNTS)
    env = session(engine, write_fixture(fixtures_dir, "bedrock", [recorded], "bedrock"))
    client = boto3.client(
        "bedrock-runtime",
        region_name="us-east-1",
        endpoint_url=env["AWS_ENDPOINT_URL_BEDROCK_RUNTIME"],
        aws_access_key_id=env["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"],
    )
    reply = client.invoke_model(modelId=CLAUDE, body=json.dumps(body))
    headers = reply["ResponseMetadata"]["HTTPHeaders"]
    assert {k: headers[k] for k in BEDROCK_COUNTS} == BEDROCK_COUNTS
    assert json.loads(reply["body"].read())["content"][0]["text"] == "Hi!"


def test_the_aiohttp_path_and_the_lane_serve_the_headers_the_fast_path_does(engine, fixtures_dir) -> None:
    fixture = openai_fixture(fixtures_dir)
    env = session(engine, fixture)
    url = env["OPENAI_BASE_URL"] + "/chat/completions"
    body = json.dumps(chat_request()).encode()
    with httpx.Client() as http:
        fast = http.post(url, content=body, headers={"content-type": "application/json"})
        # A chunked request is no fast-path request: aiohttp reads it and serves the hit.
        slow = http.post(url, content=iter([body]), headers={"content-type": "application/json"})
    assert fast.json()["choices"] == slow.json()["choices"]
    for served in (fast.headers, slow.headers):
        assert (served["openai-processing-ms"], served["x-ratelimit-remaining-tokens"]) == (
            "517",
            "149999981",
        )
        assert "set-cookie" not in served and "x-echoed-key" not in served

    sid, env = engine.open_session([fixture], "strict", True)
    lane.route(engine.url, engine.lane)  # the test runner's own client: answered over the lane
    client = openai.OpenAI(base_url=env["OPENAI_BASE_URL"], api_key=env["OPENAI_API_KEY"], max_retries=0)
    raw = client.chat.completions.with_raw_response.create(**chat_request())
    assert raw.headers["openai-processing-ms"] == "517"
    assert engine.close_session(sid)["replayed"] == 1
