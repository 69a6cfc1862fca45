"""The engine serves the channels it is handed, as mitmproxy its addons: the tool channel unless whoever
starts it names others, and a channel it is not handed has no route."""

from __future__ import annotations

from pathlib import Path

import requests
from aiohttp import web
from attest_toolkit.replay.channel import ChannelContext
from attest_toolkit.replay.server import Engine
from conftest import chat_request, chat_response, clean_env, exchange, write_fixture

TOOL_CALL = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "get_forecast"}}


class Echo:
    """A channel of the test's own: one route, answering whether the engine's sessions are its context's."""

    def __init__(self, context: ChannelContext) -> None:
        self.context = context

    def add_routes(self, app: web.Application) -> None:
        app.router.add_get("/r/{sid}/echo/{tail:.*}", self.answer)

    async def answer(self, request: web.Request) -> web.Response:
        return web.Response(text=f"echo {request.match_info['sid'] in self.context.sessions}")


def test_the_engine_serves_the_channels_it_is_handed_and_no_other(fixtures_dir: Path) -> None:
    path = write_fixture(fixtures_dir, "t", [exchange(chat_request(), chat_response())])
    with Engine(clean_env(), channels=lambda: [Echo]) as engine:
        sid, _ = engine.open_session([path], "strict")
        echoed = requests.get(f"{engine.base_url}/r/{sid}/echo/x", timeout=30)
        tool = requests.post(f"{engine.base_url}/r/{sid}/tool/weather/mcp", json=TOOL_CALL, timeout=30)
        summary = engine.close_session(sid)
    assert echoed.text == "echo True"
    assert "tool call unrecorded" not in tool.text and summary["misses"] == 0


def test_an_engine_handed_nothing_serves_the_tool_channel(fixtures_dir: Path) -> None:
    path = write_fixture(fixtures_dir, "t", [exchange(chat_request(), chat_response())])
    with Engine(clean_env()) as engine:
        sid, _ = engine.open_session([path], "strict")
        tool = requests.post(f"{engine.base_url}/r/{sid}/tool/weather/mcp", json=TOOL_CALL, timeout=30)
        summary = engine.close_session(sid)
    assert "tool call unrecorded" in tool.text and summary["miss_list"][0]["component"] == "tool"
