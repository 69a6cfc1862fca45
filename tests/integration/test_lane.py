"""The lane: a test runner's own SDK clients answered by its engine over a private socket, not HTTP.

Every test here uses the official SDKs against a real `attest-engine serve` process started the way
the pytest helper starts it (`EngineProcess`), with `pytest_plugin.lane.route` as the helper calls it.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import anthropic
import httpx2
import openai
import pytest
from attest_toolkit.credentials.scan import REDACTED
from attest_toolkit.errors import AttestError
from attest_toolkit.pytest_plugin import lane
from attest_toolkit.pytest_plugin.client import EngineProcess
from attest_toolkit.replay.lane import FD_VAR
from blockbuster import blockbuster_ctx
from conftest import (
    chat_request,
    chat_response,
    clean_env,
    exchange,
    message_response,
    scrub,
    sse_exchange,
    write_fixture,
)

STREAM = [
    'data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini",'
    f'"choices":[{{"index":0,"delta":{{"content":"{word}"}},"finish_reason":null}}]}}\n\n'
    for word in ("Hel", "lo", "!")
] + ["data: [DONE]\n\n"]
MESSAGE = {"model": "claude-haiku-4-5", "max_tokens": 64, "messages": [{"role": "user", "content": "Hi"}]}


@pytest.fixture
def fixture(fixtures_dir: Path) -> Path:
    exchanges = [exchange(chat_request(), chat_response("Hello!"))] * 3
    exchanges += [sse_exchange(chat_request(stream=True), STREAM)] * 2
    return write_fixture(fixtures_dir, "flow", exchanges)


def open_routed(engine: EngineProcess, path: Path) -> tuple[str, dict[str, str]]:
    sid, env = engine.open_session([path], "strict", True)
    lane.route(engine.url, engine.lane)  # what the pytest helper does once a session is open
    return sid, env


def connections(client: openai.OpenAI | anthropic.Anthropic) -> int:
    """How many HTTP connections the SDK's own transport has opened (and keeps)."""
    return len(client._client._transport._pool.connections)  # type: ignore[attr-defined]


def openai_client(env: dict[str, str]) -> openai.OpenAI:
    return openai.OpenAI(base_url=env["OPENAI_BASE_URL"], api_key=env["OPENAI_API_KEY"], max_retries=0)


def test_the_runners_own_calls_are_answered_over_the_lane_with_no_connection(engine, fixture, fixtures_dir):
    anthropic_fixture = write_fixture(
        fixtures_dir,
        "messages",
        [exchange(MESSAGE, message_response("Hi!"), path="/v1/messages")] * 2,
        "anthropic",
    )
    sid, env = open_routed(engine, fixture)
    client = openai_client(env)
    assert client.chat.completions.create(**chat_request()).choices[0].message.content == "Hello!"
    streamed = client.chat.completions.create(**chat_request(stream=True))
    assert "".join(c.choices[0].delta.content or "" for c in streamed) == "Hello!"

    async def from_async_client() -> str:
        async_client = openai.AsyncOpenAI(base_url=env["OPENAI_BASE_URL"], api_key="x", max_retries=0)
        reply = await async_client.chat.completions.create(**chat_request())
        return reply.choices[0].message.content or ""

    assert asyncio.run(from_async_client()) == "Hello!"
    assert connections(client) == 0
    summary = engine.close_session(sid)
    assert (summary["replayed"], summary["misses"], summary["unused"]) == (3, 0, 2)

    sid, env = open_routed(engine, anthropic_fixture)
    claude = anthropic.Anthropic(base_url=env["ANTHROPIC_BASE_URL"], api_key="x", max_retries=0)
    assert claude.messages.create(**MESSAGE).content[0].text == "Hi!"  # type: ignore[union-attr]
    assert connections(claude) == 0
    assert engine.close_session(sid)["replayed"] == 1


def test_an_async_client_is_answered_over_the_lane_with_no_blocking_call_on_its_loop(engine, fixture):
    """A detector of blocking calls on the event loop (blockbuster, as pydantic-ai's suite runs it)
    finds none in an async client's calls, plain and streamed, answered over the lane."""
    sid, env = open_routed(engine, fixture)

    async def calls(client: openai.AsyncOpenAI) -> list[str]:
        plain = await client.chat.completions.create(**chat_request())
        streamed = await client.chat.completions.create(**chat_request(stream=True))
        text = "".join([c.choices[0].delta.content or "" async for c in streamed])
        return [plain.choices[0].message.content or "", text, str(connections(client))]

    async def detected() -> list[str]:
        # Built first: the SDK reads files as it builds a client, which is no call's doing.
        client = openai.AsyncOpenAI(base_url=env["OPENAI_BASE_URL"], api_key="x", max_retries=0)
        with blockbuster_ctx(["openai", "httpx2", "attest_toolkit"]):
            return await calls(client)

    assert asyncio.run(detected()) == ["Hello!", "Hello!", "0"]
    assert (engine.close_session(sid)["replayed"], engine.lane.closed) == (2, False)


def test_async_calls_at_once_share_the_lane_and_each_gets_its_own_answer(engine, fixtures_dir):
    """Tasks that ask at the same time: one has the lane, the others go over HTTP; every answer is
    the recording for its own request, in order per request."""
    exchanges = [
        exchange(chat_request(f"q{k}"), chat_response(f"a{k}-{n}")) for k in range(4) for n in range(2)
    ]
    sid, env = open_routed(engine, write_fixture(fixtures_dir, "t", exchanges))

    async def calls() -> dict[int, list[str]]:
        client = openai.AsyncOpenAI(base_url=env["OPENAI_BASE_URL"], api_key="x", max_retries=0)

        async def twice(k: int) -> list[str]:
            replies = [await client.chat.completions.create(**chat_request(f"q{k}")) for _ in "12"]
            return [r.choices[0].message.content or "" for r in replies]

        return dict(enumerate(await asyncio.gather(*(twice(k) for k in range(4)))))

    assert asyncio.run(calls()) == {k: [f"a{k}-0", f"a{k}-1"] for k in range(4)}
    assert engine.close_session(sid)["replayed"] == 8 and not engine.lane.closed


def test_an_async_call_cancelled_before_its_answer_takes_nothing(engine, fixtures_dir):
    """A task cancelled before it is answered leaves its recording for the next call, as a request that
    never left does over HTTP (a hit is answered with no wait: there is no answer left owed)."""
    exchanges = [exchange(chat_request(f"q{k}"), chat_response(f"a{k}")) for k in range(2)]
    sid, env = open_routed(engine, write_fixture(fixtures_dir, "t", exchanges))

    async def cancelled_then_next() -> list[str]:
        client = openai.AsyncOpenAI(base_url=env["OPENAI_BASE_URL"], api_key="x", max_retries=0)
        first = asyncio.ensure_future(client.chat.completions.create(**chat_request("q0")))
        first.cancel()
        with pytest.raises(asyncio.CancelledError):
            await first
        replies = [await client.chat.completions.create(**chat_request(q)) for q in ("q0", "q1")]
        return [reply.choices[0].message.content or "" for reply in replies]

    assert asyncio.run(cancelled_then_next()) == ["a0", "a1"]
    assert not engine.lane.closed
    assert engine.close_session(sid)["replayed"] == 2


def raw_answer(env: dict[str, str], body: dict) -> tuple[int, bytes, list, bytes]:
    with httpx2.Client() as http:
        request = http.build_request("POST", env["OPENAI_BASE_URL"] + "/chat/completions", json=body)
        response = http.send(request, stream=True)
        raw = b"".join(response.iter_raw())
        response.close()
    return response.status_code, response.extensions["reason_phrase"], response.headers.raw, raw


def test_a_hit_over_the_lane_is_the_answer_http_gives(engine, fixture):
    sid, env = open_routed(engine, fixture)
    over_lane = [raw_answer(env, chat_request()), raw_answer(env, chat_request(stream=True))]
    engine.close_session(sid)
    lane.unroute_all()
    sid, env = engine.open_session([fixture], "strict", True)  # the same recordings, over HTTP
    over_http = [raw_answer(env, chat_request()), raw_answer(env, chat_request(stream=True))]
    engine.close_session(sid)
    assert over_lane == over_http
    assert over_lane[1][3].endswith(b"data: [DONE]\n\n")


def test_a_miss_goes_over_http_is_diagnosed_once_and_takes_nothing(engine, fixture):
    sid, env = open_routed(engine, fixture)
    client = openai_client(env)
    with pytest.raises(openai.BadRequestError, match="replay miss: messages changed"):
        client.chat.completions.create(**chat_request("changed"))
    assert client.chat.completions.create(**chat_request()).choices[0].message.content == "Hello!"
    summary = engine.close_session(sid)
    assert (summary["replayed"], summary["misses"]) == (1, 1)


def test_concurrent_threads_get_deterministic_answers_over_the_lane(engine, fixtures_dir):
    exchanges = [
        exchange(chat_request(f"q{k}"), chat_response(f"a{k}-{n}")) for k in range(8) for n in range(3)
    ]
    sid, env = open_routed(engine, write_fixture(fixtures_dir, "t", exchanges))

    def client_for(k: int) -> tuple[list[str | None], int]:
        client = openai_client(env)
        answers = [
            client.chat.completions.create(**chat_request(f"q{k}")).choices[0].message.content for _ in "123"
        ]
        return answers, connections(client)

    with ThreadPoolExecutor(max_workers=8) as pool:  # the clients at once, up to a thread each
        outcomes = dict(zip(range(8), pool.map(client_for, range(8)), strict=True))
    results = {k: answers for k, (answers, _) in outcomes.items()}
    opened = {k: count for k, (_, count) in outcomes.items()}
    summary = engine.close_session(sid)
    assert results == {k: [f"a{k}-0", f"a{k}-1", f"a{k}-2"] for k in range(8)}
    assert opened == dict.fromkeys(range(8), 0)
    assert (summary["replayed"], summary["misses"]) == (24, 0)


def test_a_forked_child_uses_http_while_the_parent_keeps_the_lane(engine, fixture):
    """A child made by fork shares the lane's socket: it must not write into the parent's exchange."""
    sid, env = open_routed(engine, fixture)
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: one call, then report what it got and whether it opened a connection
        os.close(read_end)
        try:
            client = openai_client(env)
            answer = client.chat.completions.create(**chat_request()).choices[0].message.content
            os.write(write_end, json.dumps([answer, connections(client)]).encode())
        finally:
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end) as pipe:
        child = json.loads(pipe.read())
    os.waitpid(pid, 0)
    client = openai_client(env)
    assert client.chat.completions.create(**chat_request()).choices[0].message.content == "Hello!"
    assert child == ["Hello!", 1]
    assert connections(client) == 0 and not engine.lane.closed
    assert engine.close_session(sid)["replayed"] == 2


def test_an_engine_that_does_not_serve_the_lane_is_used_over_http(tmp_path, fixture):
    """An engine that never reads the lane (one that predates it) must not leave calls waiting on it."""
    wrapper = tmp_path / "engine-without-lane"
    wrapper.write_text(f'#!/bin/sh\nunset {FD_VAR}\nexec "{sys.executable}" -m attest_toolkit.replay "$@"\n')
    wrapper.chmod(0o755)
    engine = EngineProcess(str(wrapper), env=clean_env())
    try:
        sid, env = open_routed(engine, fixture)
        assert engine.lane.closed
        client = openai_client(env)
        assert client.chat.completions.create(**chat_request()).choices[0].message.content == "Hello!"
        assert connections(client) == 1
        assert engine.close_session(sid)["replayed"] == 1
    finally:
        lane.unroute_all()
        engine.stop()


def test_a_dead_engine_closes_the_lane_and_the_call_fails_as_over_http(engine, fixture):
    _, env = open_routed(engine, fixture)
    engine.proc.kill()
    engine.proc.wait()
    with pytest.raises(openai.APIConnectionError):
        openai_client(env).chat.completions.create(**chat_request())
    assert engine.lane.closed


def test_other_addresses_are_untouched_and_httpx_gets_its_methods_back(engine, fixture):
    original = httpx2.HTTPTransport.handle_request, httpx2.AsyncHTTPTransport.handle_async_request
    _, env = open_routed(engine, fixture)
    assert httpx2.HTTPTransport.handle_request is not original[0]
    elsewhere = env["OPENAI_BASE_URL"].replace("127.0.0.1", "localhost")  # the same engine, another name
    client = openai.OpenAI(base_url=elsewhere, api_key="x", max_retries=0)
    assert client.chat.completions.create(**chat_request()).choices[0].message.content == "Hello!"
    assert connections(client) == 1
    lane.unroute_all()
    assert (httpx2.HTTPTransport.handle_request, httpx2.AsyncHTTPTransport.handle_async_request) == original


@pytest.mark.parametrize("setting", ["on", "off"])
def test_the_pytest_helper_answers_the_tests_own_client_over_the_lane(pytester, monkeypatch, setting):
    scrub(monkeypatch)
    monkeypatch.setenv(lane.OFF_VAR, setting)
    fixtures = pytester.path / "tests" / "attest" / "fixtures"
    write_fixture(fixtures, "hello", [exchange(chat_request(), chat_response("Hello!"))])
    pytester.makepyfile(
        test_agent=f"""
import openai

def test_hello(attest_replay):
    with attest_replay("hello"):
        client = openai.OpenAI(max_retries=0)
        reply = client.chat.completions.create(**{chat_request()!r})
    assert reply.choices[0].message.content == "Hello!"
    assert len(client._client._transport._pool.connections) == {0 if setting == "on" else 1}
"""
    )
    result = pytester.runpytest_subprocess("--attest-replay=strict", "-p", "no:randomly")
    result.assert_outcomes(passed=1)
    assert "attest replay: 1 replayed · 0 live model calls · $0.00" in result.outlines


def test_a_secret_from_env_is_redacted_in_the_lanes_key_as_in_the_engines(
    tmp_path, fixtures_dir, monkeypatch
):
    """The recording holds the `.env` secret redacted; the agent sends it in clear. The test process
    must key the call with the same `.env` secrets as the engine, or the call would leave the lane."""
    secret = "s3cr3t-" + "v" * 24
    (tmp_path / ".env").write_text(f"APP_TOKEN={secret}\n")
    monkeypatch.chdir(tmp_path)
    recorded = write_fixture(
        fixtures_dir, "t", [exchange(chat_request(f"token {REDACTED}"), chat_response("ok"))]
    )
    engine = EngineProcess(env=clean_env())
    try:
        sid, env = open_routed(engine, recorded)
        client = openai_client(env)
        assert (
            client.chat.completions.create(**chat_request(f"token {secret}")).choices[0].message.content
            == "ok"
        )
        assert connections(client) == 0
        assert engine.close_session(sid)["replayed"] == 1
    finally:
        lane.unroute_all()
        engine.stop()


def test_a_library_that_patches_httpx_too_keeps_its_patch_and_the_lane_comes_back(
    engine, fixture, monkeypatch
):
    """A mocking library (pytest-httpx, respx) swaps httpx's transport method in for a test and puts
    back what it found when the test ends: ours, from an earlier session."""
    real = httpx2.HTTPTransport.handle_request
    sid, env = open_routed(engine, fixture)

    def mocked(self, request):
        return httpx2.Response(418, request=request)

    for _ in range(3):  # three tests that use the mock, each with its session
        monkeypatch.setattr(httpx2.HTTPTransport, "handle_request", mocked)
        lane.route(engine.url, engine.lane)  # a session opens while the mock is in place
        client = openai_client(env)
        assert client.chat.completions.create(**chat_request()).choices[0].message.content == "Hello!"
        assert connections(client) == 0
        monkeypatch.undo()  # the mock's teardown
    lane.route(engine.url, engine.lane)
    assert httpx2.HTTPTransport.handle_request._attest_lane_wraps is real  # never stacked
    lane.unroute_all()
    assert httpx2.HTTPTransport.handle_request is real
    assert engine.close_session(sid)["replayed"] == 3


SUBPROCESS_CALL = """
import json, os, sys
import openai
client = openai.OpenAI(base_url=os.environ["OPENAI_BASE_URL"], api_key="x", max_retries=0)
print(client.chat.completions.create(**json.loads(sys.argv[1])).choices[0].message.content)
"""


def test_a_recording_serves_once_in_order_whichever_process_asks(engine, fixtures_dir):
    """The test's process answers its hits itself; a subprocess's call goes to the engine over HTTP.
    Taking turns on one request, they get the recordings in order, none twice, and all are counted."""
    answers = [f"answer {n}" for n in range(4)]
    sid, env = open_routed(
        engine,
        write_fixture(fixtures_dir, "t", [exchange(chat_request(), chat_response(a)) for a in answers]),
    )
    client = openai_client(env)

    def here() -> str | None:
        return client.chat.completions.create(**chat_request()).choices[0].message.content

    def there() -> str:
        argv = [sys.executable, "-c", SUBPROCESS_CALL, json.dumps(chat_request())]
        done = subprocess.run(argv, env={**clean_env(), **env}, capture_output=True, text=True, check=True)
        return done.stdout.strip()

    assert [here(), there(), there(), here()] == answers
    assert connections(client) == 0
    summary = engine.close_session(sid)
    assert (summary["replayed"], summary["unused"], summary["misses"]) == (4, 0, 0)


def test_a_call_after_the_last_recording_is_diagnosed_by_the_engine_as_over_http(engine, fixture):
    sid, env = open_routed(engine, fixture)
    client = openai_client(env)
    for _ in range(3):
        client.chat.completions.create(**chat_request())
    with pytest.raises(openai.BadRequestError, match="replay miss"):
        client.chat.completions.create(**chat_request())
    summary = engine.close_session(sid)
    assert (summary["replayed"], summary["misses"]) == (3, 1)


def test_a_fixture_the_runner_holds_is_named_not_sent_again(engine, fixture):
    sid, env = open_routed(engine, fixture)
    held = engine.lane.tables[str(fixture)]
    engine.close_session(sid)
    sid, env = open_routed(engine, fixture)
    assert engine.lane.tables[str(fixture)] is held and engine.lane.held[sid].table is held
    assert openai_client(env).chat.completions.create(**chat_request()).choices[0].message.content == "Hello!"
    assert engine.close_session(sid)["replayed"] == 1


def test_the_close_fails_on_one_line_when_the_engine_did_not_count_a_call_the_runner_answered(
    engine, fixture
):
    """The engine checks at the close that it counted every hit the test's process answered: a hit
    answered in process is never left uncounted (here the runner's note is lost on its way)."""
    sid, env = open_routed(engine, fixture)
    engine.lane._send = lambda line: None  # type: ignore[method-assign]  # the note never arrives
    assert openai_client(env).chat.completions.create(**chat_request()).choices[0].message.content == "Hello!"
    with pytest.raises(
        AttestError, match=r"^the replay engine counted 0 of the 1 calls this test's process answered"
    ):
        engine.close_session(sid)
