"""The replay engine through the CLIs and the official SDKs: hits, each kind of miss, live forwarding."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
from pathlib import Path

import anthropic
import openai
import pytest
from attest_toolkit.fixtures import document as fx
from attest_toolkit.replay.server import Engine
from conftest import (
    agent_cmd,
    calls_file,
    chat_request,
    chat_response,
    clean_env,
    exchange,
    run_cli,
    sse_exchange,
    write_fixture,
)
from upstream import FakeUpstream, Reply

SUMMARY_OK = "attest replay: 1 replayed · 0 live model calls · $0.00"
KEY = "sk-test-" + "k" * 40


def replay_args(fixtures_dir: Path, *extra: str, command: list[str]) -> list[str]:
    return ["replay", "--name", "t", "--fixtures-dir", str(fixtures_dir), *extra, "--", *command]


def replay(
    fixtures_dir: Path, calls: Path, *extra: str, env: dict | None = None
) -> subprocess.CompletedProcess:
    return run_cli(
        replay_args(fixtures_dir, *extra, command=agent_cmd(calls)), env=env, cwd=fixtures_dir.parent
    )


def outputs(proc: subprocess.CompletedProcess) -> list[dict]:
    return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]


def test_hit_serves_the_recording_and_prints_the_summary_line(tmp_path, fixtures_dir):
    write_fixture(fixtures_dir, "t", [exchange(chat_request(), chat_response("Hello there!"))])
    proc = replay(fixtures_dir, calls_file(tmp_path, [{"body": chat_request()}]), "--mode", "strict")
    assert proc.returncode == 0, proc.stderr
    assert outputs(proc)[0]["ok"]["choices"][0]["message"]["content"] == "Hello there!"
    assert proc.stdout.splitlines()[-1] == SUMMARY_OK


def test_identical_requests_consume_successive_recordings(tmp_path, fixtures_dir):
    write_fixture(
        fixtures_dir,
        "t",
        [exchange(chat_request(), chat_response("first")), exchange(chat_request(), chat_response("second"))],
    )
    proc = replay(fixtures_dir, calls_file(tmp_path, [{"body": chat_request()}] * 2), "--mode", "strict")
    assert proc.returncode == 0, proc.stderr
    assert [o["ok"]["choices"][0]["message"]["content"] for o in outputs(proc)] == ["first", "second"]


HASH = "[0-9a-f]{7}→[0-9a-f]{7}"
# The fixtures are not in the default place, so the re-record command names their directory.
REFRESH = re.escape("; re-record with `attest capture --refresh t --fixtures-dir fixtures`")


@pytest.mark.parametrize(
    ("changed", "expected"),
    [
        (
            chat_request(system="You are verbose."),
            rf"replay miss: system prompt changed: system\[0\]\.content \(hash {HASH}\){REFRESH}",
        ),
        (
            chat_request("Say goodbye"),
            rf"replay miss: messages changed: messages\[0\]\.content \(hash {HASH}\){REFRESH}",
        ),
        (
            chat_request(
                tools=[{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
            ),
            rf"replay miss: tools changed: tools added \(hash {HASH}\){REFRESH}",
        ),
        (
            chat_request(temperature=0.5),
            rf"replay miss: params changed: temperature added \(hash {HASH}\){REFRESH}",
        ),
        (
            chat_request(model="gpt-4.1"),
            re.escape('replay miss: model changed ("gpt-4o-mini"→"gpt-4.1")') + REFRESH,
        ),
    ],
    ids=["system", "messages", "tools", "params", "model"],
)
def test_each_changed_component_is_named_once_and_exits_2(tmp_path, fixtures_dir, changed, expected):
    write_fixture(fixtures_dir, "t", [exchange(chat_request(), chat_response())])
    proc = replay(fixtures_dir, calls_file(tmp_path, [{"body": changed}]), "--mode", "strict")
    assert proc.returncode == 2
    misses = [line for line in proc.stderr.splitlines() if line.startswith("replay miss")]
    assert len(misses) == 1 and re.fullmatch(expected, misses[0]), proc.stderr
    agent = outputs(proc)[0]
    assert agent["error"] == "BadRequestError" and "replay miss" in agent["message"]
    last = "attest replay: 0 replayed · 0 live model calls · $0.00 · 1 missed · 1 failed"
    assert proc.stdout.splitlines()[-1] == last


def test_more_calls_than_recorded(tmp_path, fixtures_dir):
    write_fixture(fixtures_dir, "t", [exchange(chat_request(), chat_response())])
    calls = calls_file(tmp_path, [{"body": chat_request()}, {"body": chat_request("And again?")}])
    proc = replay(fixtures_dir, calls, "--mode", "strict")
    assert proc.returncode == 2
    assert (
        "replay miss: the agent made more model calls than the 1 recorded; "
        "re-record with `attest capture --refresh t --fixtures-dir fixtures`"
    ) in proc.stderr.splitlines()


def test_an_extra_identical_call(tmp_path, fixtures_dir):
    write_fixture(fixtures_dir, "t", [exchange(chat_request(), chat_response())])
    proc = replay(fixtures_dir, calls_file(tmp_path, [{"body": chat_request()}] * 2), "--mode", "strict")
    assert proc.returncode == 2
    assert (
        "replay miss: the agent made an extra identical call; "
        "re-record with `attest capture --refresh t --fixtures-dir fixtures`"
    ) in proc.stderr.splitlines()


def test_the_re_record_hint_names_no_fixtures_dir_in_the_default_place(tmp_path):
    write_fixture(
        tmp_path / "tests" / "attest" / "fixtures", "t", [exchange(chat_request(), chat_response())]
    )
    command = [
        "replay",
        "--name",
        "t",
        "--mode",
        "strict",
        "--",
        *agent_cmd(calls_file(tmp_path, [{"body": chat_request("x")}])),
    ]
    proc = run_cli(command, cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.splitlines()[0].endswith("; re-record with `attest capture --refresh t`")


def test_a_miss_on_an_imported_fixture_no_test_replays_names_a_capture_of_the_command(tmp_path, fixtures_dir):
    path = write_fixture(fixtures_dir, "t", [exchange(chat_request(), chat_response())])
    doc = fx.read_fixture(path)
    doc["source"] = {**doc["source"], "command": [], "imported_from": "tests/cassettes/t.yaml"}
    fx.write_fixture(path, doc)
    proc = replay(fixtures_dir, calls_file(tmp_path, [{"body": chat_request("x")}]), "--mode", "strict")
    assert proc.returncode == 2
    assert proc.stderr.splitlines()[0].endswith(
        "; re-record with `attest capture --name t --fixtures-dir fixtures -- CMD`"
    )
    assert "pytest" not in proc.stderr


def test_control_characters_in_model_names_are_escaped(tmp_path, fixtures_dir):
    write_fixture(fixtures_dir, "t", [exchange(chat_request(), chat_response())])
    proc = replay(
        fixtures_dir, calls_file(tmp_path, [{"body": chat_request(model="gpt\x1b[31m")}]), "--mode", "strict"
    )
    miss = next(line for line in proc.stderr.splitlines() if line.startswith("replay miss"))
    assert "\x1b" not in miss
    assert 'model changed ("gpt-4o-mini"→"gpt\\u001b[31m")' in miss


def test_a_failing_command_exits_1(tmp_path, fixtures_dir):
    write_fixture(fixtures_dir, "t", [exchange(chat_request(), chat_response())])
    proc = run_cli(
        replay_args(fixtures_dir, "--mode", "strict", command=[sys.executable, "-c", "raise SystemExit(4)"])
    )
    assert proc.returncode == 1
    last = "attest replay: 0 replayed · 0 live model calls · $0.00 · 1 failed · 1 recording unused"
    assert proc.stdout.splitlines()[-1] == last


def test_strict_never_forwards_even_with_the_key(tmp_path, fixtures_dir):
    write_fixture(fixtures_dir, "t", [exchange(chat_request(), chat_response())])
    with FakeUpstream([Reply(body=json.dumps(chat_response()).encode())]) as upstream:
        env = clean_env(OPENAI_API_KEY=KEY, ATTEST_OPENAI_UPSTREAM=upstream.url)
        proc = replay(
            fixtures_dir, calls_file(tmp_path, [{"body": chat_request("new")}]), "--mode", "strict", env=env
        )
    assert proc.returncode == 2
    assert upstream.requests == []


def test_auto_forwards_a_miss_only_with_exactly_the_engine_key(tmp_path, fixtures_dir):
    write_fixture(fixtures_dir, "t", [exchange(chat_request(), chat_response())])
    calls = calls_file(
        tmp_path, [{"body": chat_request("new")}, {"body": chat_request("other"), "api_key": KEY + "x"}]
    )
    live = chat_response("live answer", model="gpt-4o-mini")
    live["usage"] = {"prompt_tokens": 1_000_000, "completion_tokens": 1_000_000, "total_tokens": 2_000_000}
    with FakeUpstream([Reply(body=json.dumps(live).encode())]) as upstream:
        env = clean_env(OPENAI_API_KEY=KEY, ATTEST_OPENAI_UPSTREAM=upstream.url)
        proc = replay(fixtures_dir, calls, "--mode", "auto", env=env)
    assert len(upstream.requests) == 1
    assert upstream.requests[0].path == "/v1/chat/completions"
    assert upstream.requests[0].headers["Authorization"] == f"Bearer {KEY}"
    first, second = outputs(proc)
    assert first["ok"]["choices"][0]["message"]["content"] == "live answer"
    assert second["error"] == "BadRequestError"
    # gpt-4o-mini: $0.15 per 1M input + $0.60 per 1M output
    last = "attest replay: 0 replayed · 1 live model calls · $0.75 · 1 missed · 1 failed"
    assert proc.stdout.splitlines()[-1] == last
    assert proc.returncode == 2


def test_auto_with_no_live_never_forwards(tmp_path, fixtures_dir):
    write_fixture(fixtures_dir, "t", [exchange(chat_request(), chat_response())])
    with FakeUpstream([Reply(body=json.dumps(chat_response()).encode())]) as upstream:
        env = clean_env(OPENAI_API_KEY=KEY, ATTEST_OPENAI_UPSTREAM=upstream.url)
        proc = replay(
            fixtures_dir,
            calls_file(tmp_path, [{"body": chat_request("new")}]),
            "--mode",
            "auto",
            "--no-live",
            env=env,
        )
    assert proc.returncode == 2 and upstream.requests == []


def test_unpriced_live_calls_are_shown(tmp_path, fixtures_dir):
    write_fixture(fixtures_dir, "t", [exchange(chat_request(), chat_response())])
    with FakeUpstream([Reply(body=json.dumps(chat_response(model="my-finetune")).encode())]) as upstream:
        env = clean_env(OPENAI_API_KEY=KEY, ATTEST_OPENAI_UPSTREAM=upstream.url)
        proc = replay(
            fixtures_dir,
            calls_file(tmp_path, [{"body": chat_request(model="my-finetune")}]),
            "--mode",
            "auto",
            env=env,
        )
    assert (
        proc.stdout.splitlines()[-1]
        == "attest replay: 0 replayed · 1 live model calls · $0.00 (+1 unpriced) · 1 recording unused"
    )


STREAM = [
    'data: {"id":"chatcmpl-Bx1AbC9dEf2GhI3jKl4MnO5pQr","object":"chat.completion.chunk","created":1,'
    '"model":"gpt-4o-mini","choices":[{"index":0,"delta":{"role":"assistant","content":"Hel"},"finish_reason":null}]}\n\n',
    'data: {"id":"chatcmpl-Bx1AbC9dEf2GhI3jKl4MnO5pQr","object":"chat.completion.chunk","created":1,'
    '"model":"gpt-4o-mini","choices":[{"index":0,"delta":{"content":"lo!"},"finish_reason":"stop"}]}\n\n',
    "data: [DONE]\n\n",
]


def test_a_stream_is_served_event_by_event_byte_for_byte(tmp_path, fixtures_dir):
    request = chat_request(stream=True)
    path = write_fixture(fixtures_dir, "t", [sse_exchange(request, STREAM)])
    stored = json.loads(path.read_text())["channels"]["model"][0]["response"]["body"]["sse"]
    with Engine(clean_env()) as engine:
        _, env = engine.open_session([path], "strict")
        client = openai.OpenAI(base_url=env["OPENAI_BASE_URL"], api_key="x", max_retries=0)
        with client.chat.completions.with_streaming_response.create(**request) as response:
            raw = b"".join(response.iter_bytes())
        # The recorded bytes, but for the id: a valid one of OpenAI's shape in place of its placeholder.
        served = re.sub(r"chatcmpl-[0-9A-Za-z]{29}(?=\")", "chatcmpl-{{id_1}}", raw.decode())
        assert served == "".join(stored)
        _, env = engine.open_session([path], "strict")
        client = openai.OpenAI(base_url=env["OPENAI_BASE_URL"], api_key="x", max_retries=0)
        text = "".join(c.choices[0].delta.content or "" for c in client.chat.completions.create(**request))
        assert text == "Hello!"


def test_anthropic_messages_replay_sync_and_async(tmp_path, fixtures_dir):
    request = {
        "model": "claude-haiku-4-5",
        "max_tokens": 64,
        "system": "Be brief.",
        "messages": [{"role": "user", "content": "Hi"}],
    }
    response = {
        "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
        "type": "message",
        "role": "assistant",
        "model": "claude-haiku-4-5",
        "content": [{"type": "text", "text": "Hi!"}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 5, "output_tokens": 2},
    }
    path = write_fixture(
        fixtures_dir, "t", [exchange(request, response, path="/v1/messages")] * 2, "anthropic"
    )
    with Engine(clean_env()) as engine:
        sid, env = engine.open_session([path], "strict")
        message = anthropic.Anthropic(
            base_url=env["ANTHROPIC_BASE_URL"], api_key="x", max_retries=0
        ).messages.create(**request)
        assert message.content[0].text == "Hi!"

        async def go() -> str:
            client = anthropic.AsyncAnthropic(base_url=env["ANTHROPIC_BASE_URL"], api_key="x", max_retries=0)
            return (await client.messages.create(**request)).content[0].text

        import asyncio

        assert asyncio.run(go()) == "Hi!"
        summary = engine.close_session(sid)
    assert summary["replayed"] == 2 and summary["misses"] == 0


def test_a_miss_is_not_retried_by_the_sdks(tmp_path, fixtures_dir):
    path = write_fixture(fixtures_dir, "t", [exchange(chat_request(), chat_response())])
    with Engine(clean_env()) as engine:
        sid, env = engine.open_session([path], "strict")
        client = openai.OpenAI(base_url=env["OPENAI_BASE_URL"], api_key="x")  # default retries on
        with pytest.raises(openai.BadRequestError, match="replay miss: messages changed"):
            client.chat.completions.create(**chat_request("changed"))
        summary = engine.close_session(sid)
    assert summary["misses"] == 1


def test_concurrent_clients_get_deterministic_answers(tmp_path, fixtures_dir):
    exchanges = [
        exchange(chat_request(f"q{k}"), chat_response(f"a{k}-{n}")) for k in range(8) for n in range(3)
    ]
    path = write_fixture(fixtures_dir, "t", exchanges)
    results: dict[int, list[str]] = {k: [] for k in range(8)}
    with Engine(clean_env()) as engine:
        sid, env = engine.open_session([path], "strict")

        def client_for(k: int) -> None:
            client = openai.OpenAI(base_url=env["OPENAI_BASE_URL"], api_key="x", max_retries=0)
            for _ in range(3):
                reply = client.chat.completions.create(**chat_request(f"q{k}"))
                results[k].append(reply.choices[0].message.content)

        threads = [threading.Thread(target=client_for, args=(k,)) for k in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        summary = engine.close_session(sid)
    assert results == {k: [f"a{k}-0", f"a{k}-1", f"a{k}-2"] for k in range(8)}
    assert summary["replayed"] == 24 and summary["misses"] == 0


def test_otlp_traces_are_accepted_and_counted(tmp_path, fixtures_dir):
    import requests

    path = write_fixture(fixtures_dir, "t", [exchange(chat_request(), chat_response())])
    with Engine(clean_env()) as engine:
        sid, env = engine.open_session([path], "strict")
        reply = requests.post(
            env["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"],
            data=b"\x0a\x00",
            headers={"content-type": "application/x-protobuf"},
            timeout=10,
        )
        assert reply.status_code == 200
        assert engine.close_session(sid)["otlp_requests"] == 1


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ("{not json", "not valid JSON"),
        ('{"format": "attest-fixture", "version": 1, "name": "t"', "not valid JSON"),
        ('{"format": "attest-fixture", "version": 9, "name": "t"}', "newer than this toolkit reads"),
        ('{"format": "attest-fixture", "version": 1, "name": "t"}', "invalid at"),
        ("[1, 2]", "not an attest fixture"),
    ],
    ids=["malformed", "truncated", "future-version", "schema", "not-a-fixture"],
)
def test_bad_fixtures_give_one_line_and_exit_3(tmp_path, fixtures_dir, content, problem):
    (fixtures_dir / "t.attest.json").write_text(content)
    proc = replay(fixtures_dir, calls_file(tmp_path, [{"body": chat_request()}]), "--mode", "strict")
    assert proc.returncode == 3
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "t.attest.json" in lines[0] and problem in lines[0]
    assert "Traceback" not in proc.stderr


def test_a_fixture_holding_a_credential_is_refused_without_showing_it(tmp_path, fixtures_dir):
    path = write_fixture(fixtures_dir, "t", [exchange(chat_request(), chat_response())])
    secret = "sk-proj-" + "Z" * 40
    doc = json.loads(path.read_text())
    doc["channels"]["model"][0]["response"]["body"]["json"]["choices"][0]["message"]["content"] = secret
    path.write_text(json.dumps(doc))
    proc = replay(fixtures_dir, calls_file(tmp_path, [{"body": chat_request()}]), "--mode", "strict")
    assert proc.returncode == 3
    assert "credential found at /channels/model/0/response/body/json/choices/0/message/content" in proc.stderr
    assert secret not in proc.stderr + proc.stdout


def test_a_missing_fixture_exits_3(tmp_path, fixtures_dir):
    proc = replay(fixtures_dir, calls_file(tmp_path, []), "--mode", "strict")
    assert proc.returncode == 3 and "no such fixture" in proc.stderr


def test_usage_errors_exit_3_not_2(tmp_path):
    proc = run_cli(["replay", "--mode", "sometimes", "--name", "t", "--", "true"])
    assert proc.returncode == 3
    proc = run_cli(["replay", "--bogus"])
    assert proc.returncode == 3 and "Traceback" not in proc.stderr


def test_engine_replay_exits_1_on_a_miss(tmp_path, fixtures_dir):
    write_fixture(fixtures_dir, "t", [exchange(chat_request(), chat_response())])
    calls = calls_file(tmp_path, [{"body": chat_request("changed")}])
    args = replay_args(fixtures_dir, "--mode", "strict", command=agent_cmd(calls))
    assert run_cli(args, program="attest-engine").returncode == 1
    calls = calls_file(tmp_path, [{"body": chat_request()}])
    args = replay_args(fixtures_dir, "--mode", "strict", command=agent_cmd(calls))
    proc = run_cli(args, program="attest-engine")
    assert proc.returncode == 0 and proc.stdout.splitlines()[-1] == SUMMARY_OK


def test_serve_protocol(tmp_path, fixtures_dir):
    write_fixture(fixtures_dir, "t", [exchange(chat_request(), chat_response("served"))])
    code = "import sys; from attest_toolkit.cli.engine import main; sys.argv[0]='attest-engine'; main()"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            code,
            "replay",
            "--serve",
            "--name",
            "t",
            "--fixtures-dir",
            str(fixtures_dir),
            "--mode",
            "strict",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=clean_env(),
    )
    env = json.loads(proc.stdout.readline())["env"]
    assert set(env) >= {"OPENAI_BASE_URL", "ANTHROPIC_BASE_URL", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"}
    client = openai.OpenAI(base_url=env["OPENAI_BASE_URL"], api_key="x", max_retries=0)
    assert client.chat.completions.create(**chat_request()).choices[0].message.content == "served"
    out, _ = proc.communicate("stop\n", timeout=30)
    summary = json.loads(out)["summary"]
    assert summary["replayed"] == 1 and summary["misses"] == 0 and proc.returncode == 0


def test_replay_with_the_network_off_runs_in_a_verified_namespace(tmp_path, fixtures_dir):
    write_fixture(fixtures_dir, "t", [exchange(chat_request(), chat_response("isolated"))])
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import socket, sys\n"
        "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
        "try:\n    s.connect(('192.0.2.1', 9))\nexcept OSError as e:\n    print('no route', e.errno)\n"
        "else:\n    sys.exit('a route leaves the namespace')\n"
    )
    calls = calls_file(tmp_path, [{"body": chat_request()}])
    script = f"{sys.executable} {probe} && {' '.join(agent_cmd(calls))}"
    proc = run_cli(
        replay_args(fixtures_dir, "--mode", "strict", "--network", "none", command=["sh", "-c", script])
    )
    if proc.returncode == 3 and "cannot turn the network off" in proc.stderr:
        pytest.skip("no way to make a network namespace here: " + proc.stderr.strip())
    assert proc.returncode == 0, proc.stderr
    assert "no route" in proc.stdout and "isolation verified" in proc.stderr
    assert proc.stdout.splitlines()[-1] == SUMMARY_OK


def test_the_runner_control_protocol_answers_every_line(tmp_path, fixtures_dir):
    path = write_fixture(fixtures_dir, "t", [exchange(chat_request(), chat_response("served"))])
    code = "import sys; from attest_toolkit.cli.engine import main; sys.argv[0]='attest-engine'; main()"
    proc = subprocess.Popen(
        [sys.executable, "-c", code, "serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=clean_env(),
    )

    def ask(line: str) -> dict:
        proc.stdin.write(line + "\n")
        proc.stdin.flush()
        return json.loads(proc.stdout.readline())

    assert json.loads(proc.stdout.readline())["ready"]["url"].startswith("http://127.0.0.1:")
    assert "not a control request" in ask("hello")["error"]
    missing = ask(json.dumps({"open": {"fixtures": [str(tmp_path / "nope.attest.json")]}}))
    assert "no such fixture" in missing["error"] and missing["exit_code"] == 3
    opened = ask(json.dumps({"open": {"fixtures": [str(path)], "mode": "strict"}}))
    client = openai.OpenAI(base_url=opened["env"]["OPENAI_BASE_URL"], api_key="x", max_retries=0)
    assert client.chat.completions.create(**chat_request()).choices[0].message.content == "served"
    assert ask(json.dumps({"close": opened["id"]}))["summary"]["replayed"] == 1
    proc.stdin.close()
    assert proc.wait(timeout=30) == 0
