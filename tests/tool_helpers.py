"""Helpers for the tool-channel tests: a real MCP server on loopback, a plain HTTP tool API, the
scripted model that asks for the tools, and the MCP agent as a command."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from aiohttp import web
from attest_toolkit.proxy.background import BackgroundServer
from conftest import AGENTS, chat_response
from upstream import Reply

AGENT = AGENTS / "mcp_agent.py"
SERVER = AGENTS / "weather_server.py"
ANSWER = "Oslo will be sunny for the next two days."
FORECAST = {"city": "Oslo", "days": 2}


def agent(*args: str) -> list[str]:
    return [sys.executable, str(AGENT), *args]


def tool_call_reply(calls: list[tuple[str, dict]]) -> Reply:
    """A chat completion in which the model asks for `calls` (name, arguments)."""
    tool_calls = [
        {
            "id": f"call_Xb3kQ9mZt2LpV7wR1yNcF4s{i}",
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments)},
        }
        for i, (name, arguments) in enumerate(calls)
    ]
    body = chat_response(ident="chatcmpl-Tool7kQ2mZt9LpV3wR1yNcF4sH", tool_calls=tool_calls)
    return Reply(body=json.dumps(body).encode())


def answer_reply(text: str = ANSWER) -> Reply:
    return Reply(body=json.dumps(chat_response(text, ident="chatcmpl-Ans7kQ2mZt9LpV3wR1yNcF4sH")).encode())


def model_replies(*extra: tuple[str, dict]) -> list[Reply]:
    return [tool_call_reply([("get_forecast", FORECAST), *extra]), answer_reply()]


@contextmanager
def weather_http(env: dict[str, str]) -> Iterator[str]:
    """The MCP server on streamable HTTP, as its own process; yields its URL and stops it after."""
    proc = subprocess.Popen([sys.executable, str(SERVER), "http"], stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdout is not None
        port = proc.stdout.readline().strip()
        assert port.isdigit(), "the weather server did not start"
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(timeout=30)


class OrdersApi:
    """A plain HTTP tool API on loopback that counts its requests; `echo_token` leaks the bearer token
    into its answer (a server that misbehaves)."""

    def __init__(self, echo_token: bool = False) -> None:
        self.echo_token = echo_token
        self.seen: list[str] = []
        self.server = BackgroundServer(self._build, "orders-api")
        self.url = ""

    async def _order(self, request: web.Request) -> web.Response:
        self.seen.append(request.path_qs)
        order = {"order_id": request.match_info["id"], "amount": 42.0, "refunds": [42.0, 42.0]}
        if self.echo_token:
            order["note"] = "called with " + request.headers.get("authorization", "").removeprefix("Bearer ")
        return web.json_response(order)

    def _build(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/api/orders/{id}", self._order)
        return app

    def __enter__(self) -> OrdersApi:
        self.url = self.server.start() + "/api"
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.stop()


def load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))
