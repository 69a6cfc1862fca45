"""The tool channel end to end: real MCP servers (the official SDK) and a plain HTTP API on loopback, an
agent that loops the openai SDK over their tools, captured with `attest capture --tool` and replayed
with the servers stopped and no key."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from attest_toolkit.credentials.scan import Secrets
from attest_toolkit.fixtures import document as fx
from attest_toolkit.normalize import canonical_hash
from attest_toolkit.tools.match import normalized
from capture_helpers import KEY, run_attest
from conftest import clean_env
from tool_helpers import ANSWER, FORECAST, OrdersApi, agent, load, model_replies, weather_http
from upstream import FakeUpstream

FORECAST_LINE = "tool get_forecast: Oslo: sunny for 2 day(s), 21 degrees celsius"
REPLAYED = (
    "attest replay: 2 replayed · 0 live model calls · $0.00 · 3 tool calls replayed · 0 live tool calls"
)


def capture(tmp_path: Path, name: str, tools: list[str], argv: list[str], upstream: FakeUpstream, **env: str):
    args = ["capture", "--name", name, "--fixtures-dir", str(tmp_path / "fixtures")]
    for tool in tools:
        args += ["--tool", tool]
    environment = clean_env(
        ATTEST_OPENAI_UPSTREAM=upstream.url, OPENAI_API_KEY=KEY, PYTHONIOENCODING="utf-8", **env
    )
    return run_attest(*args, "--", *argv, env=environment, cwd=tmp_path)


def replay(tmp_path: Path, name: str, argv: list[str], mode: str = "strict", **env: str):
    args = [
        "replay",
        "--name",
        name,
        "--fixtures-dir",
        str(tmp_path / "fixtures"),
        "--mode",
        mode,
        "--",
        *argv,
    ]
    return run_attest(*args, env=clean_env(PYTHONIOENCODING="utf-8", **env), cwd=tmp_path)


def captured_weather(tmp_path: Path, *agent_args: str, **env: str) -> Path:
    """A capture of the MCP agent against the weather server on streamable HTTP, which is then stopped."""
    with weather_http(clean_env(**env)) as url, FakeUpstream(model_replies()) as upstream:
        done = capture(tmp_path, "weather", [f"WEATHER_MCP_URL={url}"], agent(*agent_args), upstream)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [FORECAST_LINE, ANSWER]
    return tmp_path / "fixtures" / "weather.attest.json"


def arguments_hash(arguments: dict) -> str:
    return canonical_hash(normalized(arguments, Secrets.of([])))


@pytest.mark.parametrize("mcp_mode", ["auto", "legacy"])
def test_mcp_over_http_is_captured_and_replayed_offline(tmp_path, mcp_mode):
    calls_log = tmp_path / "calls.log"
    path = captured_weather(tmp_path, "--mcp-mode", mcp_mode, WEATHER_CALLS_LOG=str(calls_log))
    assert calls_log.read_text() == "Oslo 2 celsius\n"  # the real server answered the capture
    doc = load(path)
    assert doc["version"] == 2
    assert doc["tools"]["weather"]["env"] == "WEATHER_MCP_URL"
    calls = [t for t in doc["channels"]["tool"] if t["rpc"]["method"] == "tools/call"]
    assert [c["rpc"] for c in calls] == [{"method": "tools/call", "name": "get_forecast"}]
    assert calls[0]["request"]["json"]["params"]["arguments"] == FORECAST
    if mcp_mode == "legacy":  # SSE answers and a session id: stored as text and as a placeholder
        assert "sse" in calls[0]["response"]["body"]
        assert calls[0]["response"]["headers"]["mcp-session-id"] == "{{session}}"

    # The server is stopped, there is no key, and CI is set: both channels come from the fixture.
    done = replay(tmp_path, "weather", agent("--mcp-mode", mcp_mode), CI="true")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [FORECAST_LINE, ANSWER, REPLAYED]
    assert calls_log.read_text() == "Oslo 2 celsius\n"


def test_mcp_prompts_are_replayed_and_a_changed_prompt_argument_is_a_tool_miss(tmp_path):
    path = captured_weather(tmp_path, "--prompt-city", "Oslo")
    methods = [t["rpc"]["method"] for t in load(path)["channels"]["tool"]]
    assert {"prompts/list", "prompts/get"} <= set(methods)

    done = replay(tmp_path, "weather", agent("--prompt-city", "Oslo"), CI="true")
    assert done.returncode == 0, done.stderr
    *output, summary = done.stdout.splitlines()
    assert output == [FORECAST_LINE, ANSWER]
    assert summary.startswith("attest replay: 2 replayed · 0 live model calls · $0.00 · ")
    assert summary.endswith(" tool calls replayed · 0 live tool calls")

    done = replay(tmp_path, "weather", agent("--prompt-city", "Bergen"))
    assert done.returncode == 2
    assert "replay miss: tool call unrecorded: weather.prompts/get forecast_question (arguments hash " in (
        done.stderr
    )


def test_a_changed_tool_argument_is_a_tool_miss_with_exit_2(tmp_path):
    path = captured_weather(tmp_path)
    recorded = next(t for t in load(path)["channels"]["tool"] if t["rpc"]["method"] == "tools/call")["hash"]
    live = arguments_hash({**FORECAST, "units": "fahrenheit"})
    done = replay(tmp_path, "weather", agent("--units", "fahrenheit"))
    assert done.returncode == 2
    miss = (
        f"replay miss: tool call unrecorded: weather.get_forecast (arguments hash {recorded[:7]}→{live[:7]}); "
        "re-record with `attest capture --refresh weather --fixtures-dir fixtures`"
    )
    assert miss in done.stderr.splitlines()
    assert FORECAST_LINE not in done.stdout  # the agent got the miss as the tool's error, never a live answer


def test_a_removed_tool_recording_is_a_tool_miss_with_exit_2(tmp_path):
    path = captured_weather(tmp_path)
    doc = load(path)
    doc["channels"]["tool"] = [t for t in doc["channels"]["tool"] if t["rpc"]["method"] != "tools/call"]
    fx.write_fixture(path, doc, Secrets.of([]))
    done = replay(tmp_path, "weather", agent())
    assert done.returncode == 2
    live = arguments_hash(FORECAST)
    miss = (
        f"replay miss: tool call unrecorded: weather.get_forecast (arguments hash none→{live[:7]}); "
        "re-record with `attest capture --refresh weather --fixtures-dir fixtures`"
    )
    assert miss in done.stderr.splitlines()


def test_an_auto_mode_tool_miss_goes_to_the_users_server_and_counts_live(tmp_path):
    calls_log = tmp_path / "calls.log"
    with weather_http(clean_env(WEATHER_CALLS_LOG=str(calls_log))) as url:
        with FakeUpstream(model_replies()) as upstream:
            done = capture(tmp_path, "weather", [f"WEATHER_MCP_URL={url}"], agent(), upstream)
        assert done.returncode == 0, done.stderr
        path = tmp_path / "fixtures" / "weather.attest.json"
        doc = load(path)
        doc["channels"]["tool"] = [t for t in doc["channels"]["tool"] if t["rpc"]["method"] != "tools/call"]
        fx.write_fixture(path, doc, Secrets.of([]))
        done = replay(tmp_path, "weather", agent(), mode="auto", WEATHER_MCP_URL=url)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == (
        "attest replay: 2 replayed · 0 live model calls · $0.00 · 2 tool calls replayed · 1 live tool calls"
    )
    assert calls_log.read_text() == "Oslo 2 celsius\nOslo 2 celsius\n"


def test_stdio_servers_are_recorded_by_the_wrapper_and_replayed_without_starting_them(tmp_path):
    calls_log = tmp_path / "calls.log"
    with FakeUpstream(model_replies()) as upstream:
        done = capture(tmp_path, "weather", [], agent("--stdio"), upstream, WEATHER_CALLS_LOG=str(calls_log))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [FORECAST_LINE, ANSWER]
    doc = load(tmp_path / "fixtures" / "weather.attest.json")
    assert doc["tools"]["weather"]["transport"] == "stdio"
    assert doc["tools"]["weather"]["command"][-1] == "stdio"
    methods = [t["rpc"]["method"] for t in doc["channels"]["tool"]]
    assert "tools/call" in methods and "tools/list" in methods

    done = replay(tmp_path, "weather", agent("--stdio"), WEATHER_CALLS_LOG=str(calls_log))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [FORECAST_LINE, ANSWER, REPLAYED]
    assert calls_log.read_text() == "Oslo 2 celsius\n"  # started once, by the capture only

    done = replay(tmp_path, "weather", agent("--stdio", "--units", "fahrenheit"))
    assert done.returncode == 2
    assert "replay miss: tool call unrecorded: weather.get_forecast (arguments hash" in done.stderr


def test_credentials_given_as_arguments_never_reach_the_fixture(tmp_path):
    # No secret shape in these values: only the flag's name tells them apart from a file name.
    key, token, password, bearer, header_key = "hunter2hunter", "t0k", "pw-1234", "b3arer.v4lue", "hk-98"
    server = ["--api-key", key, "--token", token, "--password=" + password]
    server += ["-H", f"Authorization: Bearer {bearer}", "--header", f"X-Api-Key: {header_key}"]
    argv = agent("--stdio", "--api-key", key, f"--token={token}")
    with FakeUpstream(model_replies()) as upstream:
        done = capture(tmp_path, "weather", [], argv, upstream, WEATHER_SERVER_ARGS=json.dumps(server))
    assert done.returncode == 0, done.stderr
    path = tmp_path / "fixtures" / "weather.attest.json"
    text = path.read_text()
    for secret in (key, token, password, bearer, header_key):
        assert secret not in text
    doc = load(path)
    assert doc["source"]["command"][-3:] == ["--api-key", "{{redacted}}", "--token={{redacted}}"]
    assert doc["tools"]["weather"]["command"][-10:] == [
        "stdio",
        "--api-key",
        "{{redacted}}",
        "--token",
        "{{redacted}}",
        "--password={{redacted}}",
        "-H",
        "Authorization: {{redacted}}",
        "--header",
        "X-Api-Key: {{redacted}}",
    ]


def test_outside_capture_and_replay_the_stdio_wrapper_runs_the_server_unchanged(tmp_path):
    calls_log = tmp_path / "calls.log"
    with FakeUpstream(model_replies()) as upstream:
        env = clean_env(
            OPENAI_BASE_URL=upstream.url + "/v1", OPENAI_API_KEY=KEY, WEATHER_CALLS_LOG=str(calls_log)
        )
        import subprocess

        done = subprocess.run(agent("--stdio"), env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [FORECAST_LINE, ANSWER]
    assert calls_log.read_text() == "Oslo 2 celsius\n"


def test_plain_http_tools_are_captured_without_their_token_and_replayed(tmp_path):
    token = "orders-token-" + "q" * 24
    with OrdersApi() as orders, weather_http(clean_env()) as url:
        with FakeUpstream(model_replies(("lookup_order", {"order_id": "O-1042"}))) as upstream:
            done = capture(
                tmp_path,
                "orders",
                [f"WEATHER_MCP_URL={url}", f"ORDERS_API_URL={orders.url}"],
                agent("--orders"),
                upstream,
                ORDERS_TOKEN=token,
            )
        assert done.returncode == 0, done.stderr
        assert orders.seen == ["/api/orders/O-1042?expand=refunds"]
    text = (tmp_path / "fixtures" / "orders.attest.json").read_text()
    assert token not in text
    doc = json.loads(text)
    rest = [t for t in doc["channels"]["tool"] if t["server"] == "orders"]
    assert [(t["method"], t["path"], t["query"]) for t in rest] == [
        ("GET", "/orders/O-1042", "expand=refunds")
    ]

    done = replay(tmp_path, "orders", agent("--orders"), ORDERS_TOKEN=token)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == (
        "attest replay: 2 replayed · 0 live model calls · $0.00 · 4 tool calls replayed · 0 live tool calls"
    )
    assert len(orders.seen) == 1


def test_a_credential_in_a_tool_answer_refuses_the_fixture(tmp_path):
    token = "orders-token-" + "q" * 24
    replies = model_replies(("lookup_order", {"order_id": "O-1042"}))
    with (
        OrdersApi(echo_token=True) as orders,
        weather_http(clean_env()) as url,
        FakeUpstream(replies) as upstream,
    ):
        tools = [f"WEATHER_MCP_URL={url}", f"ORDERS_API_URL={orders.url}"]
        done = capture(tmp_path, "orders", tools, agent("--orders"), upstream, ORDERS_TOKEN=token)
    assert done.returncode == 3
    assert "credential found at /channels/" in done.stderr
    assert token not in done.stderr
    assert not (tmp_path / "fixtures" / "orders.attest.json").exists()


def test_the_serve_protocol_hands_out_the_tool_variables(tmp_path):
    path = captured_weather(tmp_path)
    args = ["replay", "--serve", "--fixture", str(path), "--mode", "strict"]
    from conftest import run_cli

    done = run_cli(args, env=clean_env(), program="attest-engine")
    assert done.returncode == 0, done.stderr
    env = json.loads(done.stdout.splitlines()[0])["env"]
    assert env["WEATHER_MCP_URL"].endswith("/tool/weather")
    assert env["ATTEST_TOOL_REPLAY_URL"].endswith("/stdio")


def test_bad_tool_declarations_are_usage_errors(tmp_path):
    with FakeUpstream([]) as upstream:
        done = capture(tmp_path, "x", ["WEATHER_MCP_URL"], [sys.executable, "-c", "pass"], upstream)
        assert done.returncode == 3
        assert "--tool WEATHER_MCP_URL: give its URL" in done.stderr
        done = capture(tmp_path, "x", ["1BAD=http://x"], [sys.executable, "-c", "pass"], upstream)
        assert done.returncode == 3 and "VAR must be an environment variable name" in done.stderr


def test_the_credential_scan_covers_the_tool_channel(tmp_path):
    token = "orders-token-" + "q" * 24
    doc = fx.new_fixture(
        "t",
        fx.new_source(["agent"]),
        [],
        [
            {
                "server": "orders",
                "method": "GET",
                "path": "/orders/1",
                "request": {},
                "hash": "0" * 64,
                "response": {"status": 200, "body": {"text": f"token {token}"}},
            }
        ],
        {"orders": {"transport": "http", "env": "ORDERS_API_URL", "upstream": "http://127.0.0.1:1/api"}},
    )
    with pytest.raises(fx.CredentialFound, match="credential found at /channels/tool/0/response/body/text"):
        fx.write_fixture(tmp_path / "t.attest.json", doc, Secrets.of([token]))
    assert not (tmp_path / "t.attest.json").exists()


def test_the_pytest_helper_replays_both_channels_and_a_caught_tool_miss_still_fails(
    tmp_path, pytester, monkeypatch
):
    path = captured_weather(tmp_path)
    target = pytester.path / "tests" / "attest" / "fixtures"
    target.mkdir(parents=True)
    (target / path.name).write_bytes(path.read_bytes())
    pytester.makepyfile(
        test_weather=f"""
import os, subprocess

AGENT = {agent()!r}

def test_replayed(attest_replay):
    with attest_replay("weather"):
        assert os.environ["WEATHER_MCP_URL"].endswith("/tool/weather")
        done = subprocess.run(AGENT, capture_output=True, text=True)
    assert "WEATHER_MCP_URL" not in os.environ
    assert done.stdout.splitlines() == [{FORECAST_LINE!r}, {ANSWER!r}]

def test_changed_argument(attest_replay):
    with attest_replay("weather"):
        subprocess.run(AGENT + ["--units", "fahrenheit"], capture_output=True)  # the failure is caught
"""
    )
    for var in ("CI", "ATTEST_REPLAY", "OPENAI_API_KEY", "OPENAI_BASE_URL", "WEATHER_MCP_URL"):
        monkeypatch.delenv(var, raising=False)
    args = ["--attest-replay=strict", "--attest-report=report.json", "-q", str(pytester.path)]
    result = pytester.run(sys.executable, "-m", "pytest", *args, timeout=300)
    report = json.loads((pytester.path / "report.json").read_text())
    rows = {row["id"].split("::")[1]: row for row in report["tests"]}
    assert rows["test_replayed"]["outcome"] == "passed", result.stdout.str()
    assert rows["test_replayed"]["replay"]["tool_replayed"] == 3
    assert rows["test_changed_argument"]["outcome"] == "failed"
    miss = rows["test_changed_argument"]["replay"]["miss"]
    assert miss["component"] == "tool"
    assert miss["message"].startswith(
        "replay miss: tool call unrecorded: weather.get_forecast (arguments hash "
    )
    assert report["summary"]["replay"]["tool_replayed"] >= 3


def test_refresh_re_records_the_tool_servers_it_recorded(tmp_path):
    path = captured_weather(tmp_path)
    with weather_http(clean_env()) as url, FakeUpstream(model_replies()) as upstream:
        env = clean_env(ATTEST_OPENAI_UPSTREAM=upstream.url, OPENAI_API_KEY=KEY, WEATHER_MCP_URL=url)
        args = ["capture", "--refresh", "weather", "--yes", "--fixtures-dir", str(tmp_path / "fixtures")]
        done = run_attest(*args, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "attest capture: flags: --tool WEATHER_MCP_URL" in done.stderr
    assert load(path)["tools"]["weather"]["upstream"] == url
