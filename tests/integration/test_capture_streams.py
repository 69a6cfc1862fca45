"""Streamed capture is reliable when the provider's last bytes come after the terminal event."""

from __future__ import annotations

import asyncio
import threading

import openai
from aiohttp import web
from attest_toolkit.capture.proxy import RecordingProxy
from attest_toolkit.credentials.scan import Secrets
from attest_toolkit.replay.server import Engine
from conftest import chat_request, chat_response, clean_env, exchange, write_fixture
from upstream import FakeUpstream

EVENTS = [
    b'data: {"id":"chatcmpl-Bx1AbC9dEf2GhI3jKl4MnO5pQr","object":"chat.completion.chunk","created":1,'
    b'"model":"gpt-4o-mini","choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":"stop"}]}\n\n',
    b"data: [DONE]\n\n",
]
LAST = b": end of stream\n\n"  # what the provider sends after [DONE], once the client has gone
RUNS = 20
KEY = "sk-test-" + "s" * 40


class LateEndUpstream(FakeUpstream):
    """Sends the events up to [DONE], then its last bytes only once the test says the client left."""

    def __init__(self) -> None:
        super().__init__([])
        self.client_left = threading.Event()

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        await request.read()
        response = web.StreamResponse(headers={"content-type": "text/event-stream"})
        await response.prepare(request)
        for event in EVENTS:
            await response.write(event)
        await asyncio.get_running_loop().run_in_executor(None, self.client_left.wait, 30)
        self.client_left.clear()
        await response.write(LAST)
        await response.write_eof()
        return response


def test_a_stream_whose_end_arrived_is_recorded_though_the_client_left_first():
    with LateEndUpstream() as upstream:
        env = clean_env(ATTEST_OPENAI_UPSTREAM=upstream.url)
        with RecordingProxy(Secrets(), env) as proxy:
            client = openai.OpenAI(
                base_url=proxy.app.child_env()["OPENAI_BASE_URL"], api_key="sk-test", max_retries=0
            )
            for _ in range(RUNS):
                chunks = list(client.chat.completions.create(**chat_request(stream=True)))
                assert chunks[0].choices[0].delta.content == "Hi"  # the SDK stopped reading at [DONE]
                upstream.client_left.set()
    assert proxy.app.failures == []
    assert len(proxy.app.interactions) == RUNS
    assert all(i["response"]["body"]["sse"][-1] == LAST.decode() for i in proxy.app.interactions)


def test_auto_mode_counts_each_live_stream_whose_end_arrived_once(fixtures_dir):
    write_fixture(fixtures_dir, "t", [exchange(chat_request("recorded"), chat_response())])
    with LateEndUpstream() as upstream:
        env = clean_env(OPENAI_API_KEY=KEY, ATTEST_OPENAI_UPSTREAM=upstream.url)
        with Engine(env) as engine:
            sid, session = engine.open_session([fixtures_dir / "t.attest.json"], "auto")
            client = openai.OpenAI(base_url=session["OPENAI_BASE_URL"], api_key=KEY, max_retries=0)
            for _ in range(RUNS):
                assert len(list(client.chat.completions.create(**chat_request(stream=True)))) == 1
                upstream.client_left.set()
            counted = engine.app.sessions[sid]
        # Stopping the engine waits for the answers in flight, the last one's end included.
        summary = counted.summary()
    assert (summary["live"], summary["misses"]) == (RUNS, 0)
