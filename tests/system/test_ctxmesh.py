"""ctxmesh fixtures, written by these tests in ctxmesh's documented format (a file, or a directory of
the snapshot blobs its recorders leave), imported with `attest fixture import` and replayed; and
`attest replay --match lenient`, ctxmesh's matching."""

from __future__ import annotations

import base64
import hashlib
import json
import sys
from pathlib import Path

from capture_helpers import KEY, run_attest
from conftest import clean_env, run_cli
from test_tools import FORECAST_LINE, REPLAYED, replay
from tool_helpers import ANSWER, agent, load, model_replies, weather_http
from upstream import FakeUpstream

RUN = {"schemaVersion": 1, "runId": "run-42", "agent": "team/weather", "recordedAt": "2026-05-01T10:00:00Z"}


def digest(value: object) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


def recorded_run(tmp_path: Path) -> tuple[list[dict], list[dict]]:
    """A real run of the MCP agent (handshake-era MCP, as ctxmesh speaks it), as ctxmesh's gateway
    and sidecar would have stored it: model and tool interactions with their bytes."""
    replies = model_replies()
    with weather_http(clean_env()) as url, FakeUpstream(list(replies)) as upstream:
        env = clean_env(ATTEST_OPENAI_UPSTREAM=upstream.url, OPENAI_API_KEY=KEY)
        args = ["capture", "--name", "run", "--fixtures-dir", str(tmp_path / "captured")]
        done = run_attest(
            *args,
            "--tool",
            f"WEATHER_MCP_URL={url}",
            "--",
            *agent("--mcp-mode", "legacy"),
            env=env,
            cwd=tmp_path,
        )
        assert done.returncode == 0, done.stderr
        seen = list(upstream.requests)
    model = [
        {
            "index": i,
            "requestHash": digest(json.loads(request.body)),
            "request": json.loads(request.body),
            "responseBytes": b64(reply.body),
            "contentType": "application/json",
            "statusCode": 200,
        }
        for i, (request, reply) in enumerate(zip(seen, replies, strict=True))
    ]
    tools = []
    for item in load(tmp_path / "captured" / "run.attest.json")["channels"]["tool"]:
        message = item["request"]["json"]
        body = item["response"]["body"]
        raw = "".join(body["sse"]).encode() if "sse" in body else b""
        entry = {
            "toolName": message.get("params", {}).get("name", "")
            if message["method"] == "tools/call"
            else "",
            "argsHash": digest(message),
            "request": message,
            "responseBytes": b64(raw),
        }
        if "id" in message:
            entry["callId"] = str(message["id"])
        if raw:
            entry["contentType"] = item["response"]["headers"]["content-type"]
        tools.append(entry)
    return model, tools


def import_ctxmesh(tmp_path: Path, source: Path, *extra: str):
    args = [
        "fixture",
        "import",
        "--name",
        "weather",
        "--fixtures-dir",
        str(tmp_path / "fixtures"),
        *extra,
        str(source),
    ]
    return run_cli(args, env=clean_env(), cwd=tmp_path)


def test_a_ctxmesh_fixture_file_imports_and_replays_both_channels(tmp_path):
    model, tools = recorded_run(tmp_path)
    source = tmp_path / "run-42.fixture.json"
    source.write_text(json.dumps({**RUN, "model": model, "tools": tools}, separators=(",", ":")))
    done = import_ctxmesh(tmp_path, source, "--mcp-env", "WEATHER_MCP_URL")
    assert done.returncode == 0, done.stderr
    doc = load(tmp_path / "fixtures" / "weather.attest.json")
    assert doc["tools"] == {"weather": {"transport": "http", "env": "WEATHER_MCP_URL"}}
    assert len(doc["channels"]["model"]) == 2 and len(doc["channels"]["tool"]) == 4
    assert doc["source"]["imported_from"] == "ctxmesh run run-42"
    call = next(t for t in doc["channels"]["tool"] if t["rpc"]["method"] == "tools/call")
    assert "".join(call["response"]["body"]["sse"]).startswith(
        "event: message\r\ndata: "
    )  # SSE kept verbatim

    done = replay(tmp_path, "weather", agent("--mcp-mode", "legacy"), CI="true")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [FORECAST_LINE, ANSWER, REPLAYED]


def test_a_directory_of_snapshot_blobs_imports_each_interaction_once(tmp_path):
    model, tools = recorded_run(tmp_path)
    blobs = tmp_path / "blobs"
    blobs.mkdir()
    # The gateway and the sidecar each write the whole growing run after every call, under content keys.
    snapshots = [{**RUN, "model": model[: n + 1], "tools": []} for n in range(len(model))]
    snapshots += [{**RUN, "model": [], "tools": tools[: n + 1]} for n in range(len(tools))]
    for snapshot in snapshots:
        (blobs / f"{digest(snapshot)}.json").write_text(json.dumps(snapshot))
    done = import_ctxmesh(tmp_path, blobs, "--mcp-env", "WEATHER_MCP_URL")
    assert done.returncode == 0, done.stderr
    doc = load(tmp_path / "fixtures" / "weather.attest.json")
    assert len(doc["channels"]["model"]) == 2 and len(doc["channels"]["tool"]) == 4
    done = replay(tmp_path, "weather", agent("--mcp-mode", "legacy"), CI="true")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == REPLAYED


def test_a_credential_in_a_ctxmesh_blob_refuses_the_import(tmp_path):
    leak = {
        "index": 0,
        "requestHash": "0" * 64,
        "request": {"model": "m", "messages": []},
        "responseBytes": b64(b"HTTP/1.1 200 OK\r\nAuthorization: Bearer abc123\r\n\r\n{}"),
    }
    source = tmp_path / "leak.json"
    source.write_text(json.dumps({**RUN, "model": [leak], "tools": []}))
    done = import_ctxmesh(tmp_path, source)
    assert done.returncode == 3
    assert "credential found at model[0].responseBytes (Authorization header)" in done.stderr
    assert "abc123" not in done.stderr
    assert not (tmp_path / "fixtures" / "weather.attest.json").exists()


def test_ctxmesh_versions_are_checked(tmp_path):
    source = tmp_path / "run.json"
    source.write_text(json.dumps({**RUN, "schemaVersion": 0, "model": [], "tools": []}))
    assert "no schemaVersion" in import_ctxmesh(tmp_path, source).stderr
    source.write_text(json.dumps({**RUN, "schemaVersion": 2, "model": [], "tools": []}))
    done = import_ctxmesh(tmp_path, source)
    assert done.returncode == 3 and "schemaVersion 2 is newer than this importer reads (1)" in done.stderr


def test_lenient_matching_serves_a_changed_request_as_drift_and_still_misses_tools(tmp_path):
    model, tools = recorded_run(tmp_path)
    source = tmp_path / "run-42.fixture.json"
    source.write_text(json.dumps({**RUN, "model": model, "tools": tools}))
    assert import_ctxmesh(tmp_path, source, "--mcp-env", "WEATHER_MCP_URL").returncode == 0
    changed = agent("--mcp-mode", "legacy", "--question", "Weather in Oslo, please?")

    strict = replay(tmp_path, "weather", changed)
    assert strict.returncode == 2 and "replay miss: messages changed: messages[" in strict.stderr

    args = ["replay", "--name", "weather", "--fixtures-dir", str(tmp_path / "fixtures"), "--match", "lenient"]
    lenient = run_attest(*args, "--", *changed, env=clean_env(), cwd=tmp_path)
    assert lenient.returncode == 0, lenient.stderr
    assert lenient.stdout.splitlines() == [FORECAST_LINE, ANSWER, REPLAYED]
    drifts = [line for line in lenient.stderr.splitlines() if line.startswith("replay drift:")]
    assert len(drifts) == 2 and drifts[0].startswith(
        "replay drift: model call 1: messages changed: messages["
    )

    tool_changed = run_attest(*args, "--", *changed, "--units", "fahrenheit", env=clean_env(), cwd=tmp_path)
    assert tool_changed.returncode == 2
    assert "replay miss: tool call unrecorded: weather.get_forecast" in tool_changed.stderr


def test_lenient_drift_is_a_warning_in_the_report_and_the_comment(tmp_path, pytester, monkeypatch):
    model, tools = recorded_run(tmp_path)
    source = tmp_path / "run-42.fixture.json"
    source.write_text(json.dumps({**RUN, "model": model, "tools": tools}))
    fixtures = pytester.path / "tests" / "attest" / "fixtures"
    done = import_ctxmesh(tmp_path, source, "--mcp-env", "WEATHER_MCP_URL", "--fixtures-dir", str(fixtures))
    assert done.returncode == 0, done.stderr
    changed = agent("--mcp-mode", "legacy", "--question", "Weather in Oslo, please?")
    pytester.makepyfile(
        test_weather=f"""
import subprocess

def test_drifted(attest_replay):
    with attest_replay("weather"):
        done = subprocess.run({changed!r}, capture_output=True, text=True)
    assert done.returncode == 0
"""
    )
    for var in (
        "CI",
        "ATTEST_REPLAY",
        "ATTEST_MATCH",
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "WEATHER_MCP_URL",
    ):
        monkeypatch.delenv(var, raising=False)
    args = [
        "--attest-replay=strict",
        "--attest-match=lenient",
        "--attest-report=report.json",
        str(pytester.path),
    ]
    pytester.run(sys.executable, "-m", "pytest", "-q", *args, timeout=300)
    report = json.loads((pytester.path / "report.json").read_text())
    row = report["tests"][0]
    assert row["outcome"] == "passed"
    assert row["replay"]["drift"] == 2 and row["replay"]["misses"] == 0
    assert row["replay"]["drift_message"].startswith(
        "replay drift: model call 1: messages changed: messages["
    )
    assert report["summary"]["replay"]["drift"] == 2
    comment = run_cli(["report", "summary", "--report", str(pytester.path / "report.json")], env=clean_env())
    assert (
        "2 model request(s) changed and were served from the recording (model_request_drift)"
        in comment.stdout
    )
