"""The tool channel's parts: declarations, matching and its misses, re-addressed replies, the report,
the summary line and the policy's `max_live_tool_calls`."""

from __future__ import annotations

import json

import pytest
from attest_toolkit.credentials.scan import Secrets
from attest_toolkit.errors import UsageError
from attest_toolkit.replay.tool_index import ToolChannel
from attest_toolkit.report.policy import evaluate, parse_policy
from attest_toolkit.report.summary import summary_line
from attest_toolkit.tools.declare import parse_tool, server_name, stored_upstream
from attest_toolkit.tools.match import ToolRecording, call_key
from attest_toolkit.tools.mcp import readdress_event, readdress_json
from report_factory import make_report, make_test, replay_facts

NO_SECRETS = Secrets.of([])


def rpc_call(name: str, arguments: dict, rpc_id: int = 1) -> dict:
    message = {
        "jsonrpc": "2.0",
        "id": rpc_id,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }
    return {"json": message}


def recording(name: str, arguments: dict) -> ToolRecording:
    call = call_key("weather", "POST", "/", "", rpc_call(name, arguments), NO_SECRETS)
    return ToolRecording("weather", call, 200, (), b'{"jsonrpc":"2.0","id":1,"result":{}}', None)


def lookup(channel: ToolChannel, name: str, arguments: dict) -> object:
    return channel.lookup(
        call_key("weather", "POST", "/", "", rpc_call(name, arguments, 9), NO_SECRETS), "weather"
    )


def test_server_names_come_from_the_variable():
    assert server_name("WEATHER_MCP_URL") == "weather"
    assert server_name("ORDERS_API_URL") == "orders"
    assert server_name("SEARCH") == "search"
    assert parse_tool("WEATHER_MCP_URL", {"WEATHER_MCP_URL": "http://127.0.0.1:9/mcp/"}).upstream == (
        "http://127.0.0.1:9/mcp"
    )
    with pytest.raises(UsageError, match="not an http"):
        parse_tool("X_URL=ftp://host/", {})


def test_a_stored_upstream_keeps_no_credentials():
    url = "https://user:pa55@tools.example/api?api_key=abc&region=eu"
    assert stored_upstream(url, NO_SECRETS) == "https://tools.example/api?region=eu"


def test_identical_calls_are_consumed_in_order_then_an_extra_one_misses():
    channel = ToolChannel((recording("get_forecast", {"city": "Oslo"}),))
    assert isinstance(lookup(channel, "get_forecast", {"city": "Oslo"}), ToolRecording)
    miss = lookup(channel, "get_forecast", {"city": "Oslo"})
    assert miss.message == (
        "replay miss: the agent made an extra identical tool call; re-record with `attest capture --refresh weather`"
    )
    assert miss.component == "tool"


def test_more_calls_of_a_tool_than_recorded_is_an_overflow():
    channel = ToolChannel((recording("get_forecast", {"city": "Oslo"}),))
    lookup(channel, "get_forecast", {"city": "Oslo"})
    miss = lookup(channel, "get_forecast", {"city": "Bergen"})
    assert miss.message.startswith("replay miss: the agent made more tool calls than the 1 recorded;")


def test_arguments_match_whatever_their_key_order_and_volatile_ids():
    channel = ToolChannel((recording("lookup", {"id": "3f2b8c1e-9d4a-4f7b-8e2c-1a5d6b7c8d9e", "n": 1}),))
    found = lookup(channel, "lookup", {"n": 1, "id": "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"})
    assert isinstance(found, ToolRecording)


def test_a_reply_carries_the_callers_id_in_json_and_in_an_event():
    assert json.loads(readdress_json(b'{"jsonrpc":"2.0","id":3,"result":{"x":1}}', "abc"))["id"] == "abc"
    event = 'event: message\r\ndata: {"jsonrpc":"2.0","id":3,"result":{}}\r\n\r\n'
    assert readdress_event(event, 7) == 'event: message\r\ndata: {"jsonrpc":"2.0","id":7,"result":{}}\r\n\r\n'
    notification = 'data: {"jsonrpc":"2.0","method":"notifications/progress"}\n\n'
    assert readdress_event(notification, 7) == notification


def test_the_summary_line_counts_tool_calls_only_when_there_were_some():
    assert summary_line(2, 0, 0.0) == "2 replayed · 0 live model calls · $0.00"
    assert summary_line(2, 0, 0.0, tools=(3, 0)) == (
        "2 replayed · 0 live model calls · $0.00 · 3 tool calls replayed · 0 live tool calls"
    )


def test_the_report_totals_tool_calls_and_the_policy_caps_live_ones():
    facts = {**replay_facts(2), "tool_replayed": 2, "tool_live": 1}
    report = make_report([make_test("tests/test_a.py::test_tools", replay=facts)])
    assert report["summary"]["replay"]["tool_replayed"] == 2
    assert report["summary"]["replay"]["tool_live"] == 1
    verdict = evaluate(report, parse_policy({}))
    rule = next(r for r in verdict.rules if r.rule == "max_live_tool_calls")
    assert (verdict.verdict, rule.ok, rule.tests) == ("blocked", False, ["tests/test_a.py::test_tools"])
    assert evaluate(report, parse_policy({"max_live_tool_calls": 1})).verdict == "pass"


def test_fixture_show_lists_the_tool_channel():
    from attest_toolkit.fixtures import document as fx
    from attest_toolkit.fixtures.view import describe
    from conftest import REPO

    path = REPO / "examples" / "fixtures" / "example.attest.json"
    text = describe(fx.read_fixture(path), path)
    assert "  2. orders (ORDERS_MCP_URL)  tools/call lookup_order  → 200 json" in text.splitlines()


def test_fixture_verify_finds_a_stale_tool_hash(tmp_path):
    from attest_toolkit.errors import FixtureError
    from attest_toolkit.fixtures import document as fx
    from attest_toolkit.fixtures.verify import verify_fixture
    from conftest import REPO

    doc = fx.read_fixture(REPO / "examples" / "fixtures" / "example.attest.json")
    assert verify_fixture(REPO / "examples" / "fixtures" / "example.attest.json").interactions == 2
    doc["channels"]["tool"][1]["request"]["json"]["params"]["arguments"]["order_id"] = "O-9"
    fx.write_fixture(tmp_path / "t.attest.json", doc)
    with pytest.raises(FixtureError, match="tool interaction 2: stored hash does not match its request"):
        verify_fixture(tmp_path / "t.attest.json")


def test_an_http_tool_answer_and_mcp_resources_are_served_from_a_fixture(tmp_path):
    import requests
    from attest_toolkit.fixtures import document as fx
    from attest_toolkit.replay.server import Engine

    events = ["event: progress\ndata: 1\n\n", 'event: done\ndata: {"rows": 2}\n\n']
    read = {"jsonrpc": "2.0", "id": 4, "method": "resources/read", "params": {"uri": "file:///orders.csv"}}
    items = [
        {
            "server": "orders",
            "method": "GET",
            "path": "/export",
            "query": "format=csv",
            "request": {},
            "hash": call_key("orders", "GET", "/export", "format=csv", {}, NO_SECRETS).hash,
            "response": {
                "status": 200,
                "headers": {"content-type": "text/event-stream"},
                "body": {"sse": events},
            },
        },
        {
            "server": "orders",
            "method": "POST",
            "path": "/",
            "rpc": {"method": "resources/read", "name": "file:///orders.csv"},
            "request": {"json": read},
            "hash": call_key("orders", "POST", "/", "", {"json": read}, NO_SECRETS).hash,
            "response": {
                "status": 200,
                "body": {"json": {"jsonrpc": "2.0", "id": 4, "result": {"contents": []}}},
            },
        },
    ]
    servers = {"orders": {"transport": "http", "env": "ORDERS_API_URL", "upstream": "http://127.0.0.1:9/api"}}
    path = fx.write_fixture(
        tmp_path / "t.attest.json", fx.new_fixture("t", fx.new_source(["a"]), [], items, servers)
    )
    with Engine(env={}) as engine:
        sid, env = engine.open_session([path], "strict")
        base = env["ORDERS_API_URL"]
        streamed = requests.get(f"{base}/export?format=csv", timeout=30)
        assert streamed.headers["content-type"].startswith("text/event-stream")
        assert streamed.text == "".join(events)
        reply = requests.post(base, json={**read, "id": "r-1"}, timeout=30).json()
        assert reply == {"jsonrpc": "2.0", "id": "r-1", "result": {"contents": []}}
        miss = requests.post(base, json={**read, "params": {"uri": "file:///other.csv"}}, timeout=30).json()
        assert miss["error"]["message"].startswith(
            "replay miss: tool call unrecorded: orders.resources/read file:///other.csv (arguments hash "
        )
        summary = engine.close_session(sid)
    assert (summary["tool_replayed"], summary["tool_live"], summary["misses"]) == (2, 0, 1)
    assert summary["miss_list"][0]["component"] == "tool"
