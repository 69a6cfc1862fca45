"""Capture of the tool channel: forward each tool request to the real server and keep the exchange.

What is stored is what the agent sent and what the server answered, before any credential is added
and without request headers: a tool's auth header never reaches the fixture, and its value is added
to the write-time credential scan. Tool results are only redacted, never templated, because the model
channel stores the tool results it is sent literally and the two must agree.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from aiohttp import web

from ..credentials.scan import Secrets
from ..fixtures.document import Interaction
from ..normalize import Exchange, body_bytes, parse_body, redact_query
from ..normalize.walk import Walker
from ..proxy.live import LiveForwarder, reason_of
from ..tools.declare import HttpTool
from ..tools.match import SESSION_HEADER, SESSION_MARK, call_key, is_session_plumbing
from ..tools.mcp import rpc_of, rpc_reply

_KEPT_HEADERS = ("content-type",)


def served_as_sent(raw: bytes, content_type: str | None) -> dict:
    """The stored form of a tool's answer. A plain JSON answer the replay could not serve byte for
    byte from its parsed form (spacing, key order) is kept as text: an agent may hand those exact bytes
    to the model, whose recorded request holds them literally. JSON-RPC answers are parsed, since
    a replay re-addresses them anyway and MCP clients read them as JSON."""
    body = parse_body(raw, content_type)
    value = body.get("json")
    if "json" in body and rpc_reply(value) is None and body_bytes(body) != raw:
        return {"text": raw.decode("utf-8")}
    return body


class ToolRecorder:
    """The tool routes of the recording proxy, and what they recorded, in order."""

    def __init__(
        self,
        tools: list[HttpTool],
        secrets: Secrets,
        live: LiveForwarder,
        fail: Callable[[str], None],
        remember: Callable[[web.Request], None],
    ) -> None:
        self.tools = {t.name: t for t in tools}
        self.secrets = secrets
        self.live = live
        self.fail = fail
        self.remember = remember
        self.walker = Walker(secrets)
        self.interactions: list[Interaction] = []
        self.stdio: dict[str, list[str]] = {}

    def add_routes(self, app: web.Application) -> None:
        app.router.add_route("*", "/tool/{server}{tail:(/.*)?}", self.handle)
        app.router.add_post("/stdio/{server}", self.handle_stdio)

    def child_env(self, base_url: str) -> dict[str, str]:
        from ..tools.declare import CAPTURE_URL_VAR

        env = {t.var: f"{base_url}/tool/{t.name}" for t in self.tools.values()}
        env[CAPTURE_URL_VAR] = f"{base_url}/stdio"
        return env

    # --- HTTP servers (MCP over streamable HTTP, plain HTTP tools) ---------------------------------

    async def handle(self, request: web.Request) -> web.StreamResponse:
        tool = self.tools.get(request.match_info["server"])
        if tool is None:
            return web.json_response({"error": "attest capture: no such tool server"}, status=404)
        tail = request.match_info["tail"] or ""
        raw = await request.read()
        self.remember(request)
        plumbing = is_session_plumbing(request)
        on_exchange = None if plumbing else (lambda ex: self.record_http(tool.name, ex))
        try:
            response, _ = await self.live.forward_to(
                request,
                tool.upstream + tail,
                tail or "/",
                raw,
                on_exchange,
                keep_reading=not plumbing,
                tool=True,
            )
            return response
        except Exception as exc:  # the run fails with one line; the agent gets a 502
            if plumbing:  # the client closing its event stream early is how such a stream ends
                return web.Response(status=502)
            what = f"{request.method} {tail or '/'}"
            self.fail(f"tool {tool.name}: {what}: cannot reach {tool.upstream} ({reason_of(exc)})")
            return web.json_response({"error": "attest capture: tool server unreachable"}, status=502)

    def record_http(self, server: str, exchange: Exchange) -> None:
        headers = dict(exchange.response_headers)
        content_type = next((v for k, v in headers.items() if k.lower() == "content-type"), None)
        request = parse_body(exchange.request_body, None)
        kept = {k.lower(): v for k, v in headers.items() if k.lower() in _KEPT_HEADERS}
        if any(k.lower() == SESSION_HEADER for k in headers):
            kept[SESSION_HEADER] = SESSION_MARK  # the server's own id is volatile: replay makes one
        query = redact_query(exchange.query, self.secrets)
        item: dict[str, Any] = {"server": server, "method": exchange.method.upper(), "path": exchange.path}
        if query:
            item["query"] = query
        self._finish(
            item,
            request,
            {
                "status": exchange.status,
                "headers": kept,
                "body": served_as_sent(exchange.response_body, content_type),
            },
            exchange.method,
            exchange.path,
            query,
        )

    # --- stdio servers (pairs posted by `attest tool stdio`) ---------------------------------------

    async def handle_stdio(self, request: web.Request) -> web.Response:
        try:
            posted = json.loads(await request.read())
            server, message = request.match_info["server"], posted["request"]
        except (ValueError, KeyError, TypeError):
            return web.json_response({"error": "not a recorded stdio exchange"}, status=400)
        self.stdio.setdefault(server, list(posted.get("command") or []))
        reply = posted.get("response")
        response = {"status": 202 if reply is None else 200, "body": {} if reply is None else {"json": reply}}
        self._finish({"server": server}, {"json": message}, response, "POST", "/", "")
        return web.json_response({})

    # --- both ---------------------------------------------------------------------------------------

    def _finish(
        self, item: dict[str, Any], request: dict, response: dict, method: str, path: str, query: str
    ) -> None:
        request = self._body(request)
        call = call_key(item["server"], method, path, query, request, self.secrets)
        rpc = rpc_of(request.get("json"))
        if rpc is not None:
            item["rpc"] = {"method": rpc.method, **({"name": rpc.name} if rpc.name else {})}
        item["request"] = request
        item["hash"] = call.hash
        response["body"] = self._body(response["body"])
        item["response"] = response
        self.interactions.append(item)

    def _body(self, body: dict) -> dict:
        if "json" in body:
            return {"json": self.walker.walk(body["json"])}
        if "sse" in body:
            return {"sse": [self.secrets.redact(e) for e in body["sse"]]}
        if "text" in body:
            return {"text": self.secrets.redact(body["text"])}
        return dict(body)
