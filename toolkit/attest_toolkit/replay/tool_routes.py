"""The engine's tool routes: serve tool calls from the fixture, or forward them live in auto mode.

`/r/<session>/tool/<server>/...` stands in for an HTTP tool server (MCP over streamable HTTP or a
plain HTTP API) and `/r/<session>/stdio/<server>` answers the messages `attest tool stdio` relays. A
strict miss is never forwarded: an MCP caller gets a JSON-RPC error with the miss message, an HTTP
caller a 400 with it, and the miss is counted once with `component: "tool"`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import aiohttp
from aiohttp import web

from ..normalize import parse_body
from ..proxy.live import ForwardRefused, cut_off
from ..tools.match import SESSION_HEADER, SESSION_MARK, CallKey, ToolRecording, call_key, is_session_plumbing
from ..tools.mcp import error_reply, readdress_event, readdress_json
from .diagnose import NO_SESSION, Miss, MissKind

if TYPE_CHECKING:
    from .channel import ChannelContext
    from .session import Session


class ToolReplay:
    """The tool channel of the engine (an `replay.channel.Channel`)."""

    def __init__(self, context: ChannelContext) -> None:
        self.app = context

    def add_routes(self, app: web.Application) -> None:
        app.router.add_route("*", "/r/{sid}/tool/{server}{tail:(/.*)?}", self.handle_http)
        app.router.add_post("/r/{sid}/stdio/{server}", self.handle_stdio)

    # --- transports ----------------------------------------------------------------------------------

    async def handle_http(self, request: web.Request) -> web.StreamResponse:
        sid, server = request.match_info["sid"], request.match_info["server"]
        session = self.app.sessions.get(sid)
        if session is None:
            return web.json_response({"error": NO_SESSION}, status=403)
        tail = request.match_info["tail"] or ""
        raw = await request.read()
        if session.mode == "off":
            return await self.go_live(request, session, server, tail, raw)
        if is_session_plumbing(request):
            # No server-initiated stream to replay; ending the session needs nothing.
            return web.Response(status=405 if request.method == "GET" else 200)
        body = parse_body(raw, request.headers.get("content-type"))
        call = call_key(server, request.method, tail or "/", request.query_string, body, self.app.secrets)
        found = session.lookup_tool(call)
        if isinstance(found, ToolRecording):
            session.counters.tool_replayed += 0 if _is_notification(call) else 1
            return await self.serve(request, found, call, sid)
        if _is_notification(call):
            return web.Response(status=202)
        if session.mode == "auto" and not session.no_live and self.upstream(session, server):
            try:
                return await self.go_live(request, session, server, tail, raw)
            except (aiohttp.ClientError, OSError):
                pass  # the recorded server is not there: the miss stands, as if there were no key
        session.record_miss(found, not_evaluated=session.mode == "auto")
        return self.miss_reply(call, found)

    async def handle_stdio(self, request: web.Request) -> web.Response:
        session = self.app.sessions.get(request.match_info["sid"])
        if session is None:
            return web.json_response({"error": NO_SESSION}, status=403)
        body = parse_body(await request.read(), "application/json")
        call = call_key(request.match_info["server"], "POST", "/", "", body, self.app.secrets)
        found = session.lookup_tool(call)
        if isinstance(found, ToolRecording):
            session.counters.tool_replayed += 0 if _is_notification(call) else 1
            if not found.body:
                return web.Response(status=202)
            return web.Response(
                body=readdress_json(found.body, call.rpc.id if call.rpc else None),
                content_type="application/json",
            )
        if _is_notification(call):
            return web.Response(status=202)
        # A stdio server is not started under replay, so a miss cannot go live.
        session.record_miss(found, not_evaluated=session.mode == "auto")
        return self.miss_reply(call, found)

    # --- answers -------------------------------------------------------------------------------------

    async def serve(
        self, request: web.Request, rec: ToolRecording, call: CallKey, sid: str
    ) -> web.StreamResponse:
        headers = {k: v for k, v in rec.headers if k != SESSION_HEADER}
        if any(k == SESSION_HEADER and v == SESSION_MARK for k, v in rec.headers):
            headers[SESSION_HEADER] = "attest-" + sid  # the engine's own random session id: never reused
        caller_id = call.rpc.id if call.rpc else None
        if rec.events is None:
            body = readdress_json(rec.body, caller_id) if call.rpc and rec.body else rec.body
            return web.Response(status=rec.status, body=body, headers=headers)
        response = web.StreamResponse(status=rec.status, headers=headers)
        await response.prepare(request)
        for event in rec.events:  # one write per recorded event
            text = readdress_event(event, caller_id) if call.rpc else event
            await response.write(text.encode("utf-8"))
        await response.write_eof()
        return response

    @staticmethod
    def miss_reply(call: CallKey, miss: Miss) -> web.Response:
        if call.rpc is not None:
            return web.json_response(error_reply(call.rpc.id, miss.message))
        return web.json_response(
            {"error": {"message": miss.message, "code": "attest_replay_miss"}},
            status=400,
            headers={"x-should-retry": "false"},
        )

    # --- live ----------------------------------------------------------------------------------------

    def upstream(self, session: Session, server: str) -> str | None:
        """Where a live tool call goes: the user's own value of the server's variable, as the engine's
        environment holds it, never the fixture's stored upstream: whoever can edit a fixture must
        not choose where the agent's requests, and the headers they carry, are sent."""
        decl = session.tool_servers.get(server) or {}
        if decl.get("transport") != "http":
            return None
        return self.app.env.get(decl.get("env") or "", "").strip().rstrip("/") or None

    async def go_live(
        self, request: web.Request, session: Session, server: str, tail: str, raw: bytes
    ) -> web.StreamResponse:
        upstream = self.upstream(session, server)
        if upstream is None or session.no_live:
            return web.json_response(
                {"error": "attest replay: live tool calls are off for this run"}, status=400
            )
        try:
            response, _ = await self.app.live.forward_to(
                request, upstream + tail, tail or "/", raw, tool=True
            )
        except ForwardRefused as exc:  # a loop, or a deadline missed: the run fails with this line
            miss = Miss(
                f"attest replay: live tool call {server} {request.method} {tail or '/'}: {exc}",
                MissKind.TOOL,
                session.name,
            )
            session.record_miss(miss, not_evaluated=False)
            if exc.started:
                return cut_off(request)
            return web.json_response({"error": miss.message}, status=502, headers={"x-should-retry": "false"})
        if not is_session_plumbing(request):
            session.counters.tool_live += 1
        return response


def _is_notification(call: CallKey) -> bool:
    return call.rpc is not None and call.rpc.is_notification


__all__ = ["ToolReplay"]
