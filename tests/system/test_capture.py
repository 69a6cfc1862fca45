"""`attest capture`: a real agent recorded through the proxy, then replayed strict with no key."""

from __future__ import annotations

import json
import os
import pty
import re
import socket
import stat
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import scripted
from attest_toolkit.fixtures import document as fx
from capture_helpers import (
    ANTHROPIC_KEY,
    KEY,
    GatedUpstream,
    agent,
    attest_argv,
    capture_env,
    cassette_replies,
    run_attest,
)
from conftest import chat_request, chat_response, clean_env, exchange, needs_shared, write_fixture
from upstream import FakeUpstream, Reply

FLOW_CASSETTES = (
    "openai/chat_tools_stream_roundtrip.yaml",
    "openai/responses_tool_use_nonstream_gzip.yaml",
    "anthropic/messages_tool_use_stream_gzip.yaml",
)
ONE_LINE_ERROR = re.compile(r"^attest: \S+: [^\n]+$")


def json_reply(doc: dict, status: int = 200) -> Reply:
    return Reply(status=status, body=json.dumps(doc).encode())


def capture(fixtures_dir: Path, upstream_url: str, *args: str, name: str = "t", **env: str):
    return run_attest(
        "capture", "--name", name, "--fixtures-dir", str(fixtures_dir), *args,
        env=capture_env(upstream_url, **env), cwd=fixtures_dir.parent,
    )  # fmt: skip


def interactions(path: Path) -> list[dict]:
    return fx.model_interactions(fx.read_fixture(path))


def placeholders(text: str, prefix: str) -> set[str]:
    return set(re.findall(re.escape(prefix) + r"\{\{id_\d+\}\}", text))


@dataclass
class Flow:
    fixtures_dir: Path
    upstream: FakeUpstream
    captured: subprocess.CompletedProcess[str]


def flow_replies_from(source: str) -> list[Reply]:
    if source == "scripted":
        return scripted.flow_replies()
    return [reply for cassette in FLOW_CASSETTES for reply in cassette_replies(cassette)]


@pytest.fixture(scope="module", params=["scripted", pytest.param("real", marks=needs_shared)])
def flow(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Flow]:
    """The multi-turn agent captured once, against the project's scripted answers and against the
    real cassettes' bytes; the upstream stays up."""
    fixtures_dir = tmp_path_factory.mktemp("flow") / "fixtures"
    replies = flow_replies_from(request.param)
    with FakeUpstream(replies) as upstream:
        yield Flow(
            fixtures_dir, upstream, capture(fixtures_dir, upstream.url, "--", *agent("flow"), name="flow")
        )


def test_a_captured_run_replays_strict_with_no_key_and_no_upstream_call(flow):
    captured, upstream, fixtures_dir = flow.captured, flow.upstream, flow.fixtures_dir
    assert captured.returncode == 0, captured.stderr
    assert captured.stderr.splitlines()[-1] == (
        "attest capture: 6 calls recorded (1 OTLP request accepted, not stored); "
        f"wrote {fixtures_dir / 'flow.attest.json'}"
    )
    # The agent's own keys went upstream.
    sent = [{k.lower(): v for k, v in seen.headers.items()} for seen in upstream.requests]
    assert sent[0]["authorization"] == f"Bearer {KEY}"
    assert ANTHROPIC_KEY in sent[4].get("x-api-key", "") + sent[4].get("authorization", "")
    assert len(upstream.requests) == 6

    replay_env = clean_env(
        ATTEST_OPENAI_UPSTREAM=upstream.url, ATTEST_ANTHROPIC_UPSTREAM=upstream.url, PYTHONIOENCODING="utf-8"
    )
    replayed = run_attest(
        "replay", "--mode", "strict", "--name", "flow", "--fixtures-dir", str(fixtures_dir), "--", *agent("flow"),
        env=replay_env, cwd=fixtures_dir.parent,
    )  # fmt: skip
    assert replayed.returncode == 0, replayed.stderr
    assert len(upstream.requests) == 6

    assert "chat tool multiply(" in captured.stdout and "= 2869461" in captured.stdout
    assert "responses answer: 1231 * 2331 = 2,869,461" in captured.stdout
    assert "messages answer: Here are two great names" in captured.stdout
    assert replayed.stdout == captured.stdout + "attest replay: 6 replayed · 0 live model calls · $0.00\n"


def test_the_fixture_holds_no_key_no_request_header_and_consistent_placeholders(flow):
    assert flow.captured.returncode == 0, flow.captured.stderr
    fixtures_dir = flow.fixtures_dir
    path = fixtures_dir / "flow.attest.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    text = path.read_text(encoding="utf-8")
    for never in (KEY, ANTHROPIC_KEY, "x-stainless", "Authorization", "authorization", "resourceSpans"):
        assert never not in text
    model = interactions(path)
    assert [(i["provider"], i["path"], i["response"]["status"]) for i in model] == [
        ("openai", "/v1/chat/completions", 200), ("openai", "/v1/chat/completions", 200),
        ("openai", "/v1/responses", 200), ("openai", "/v1/responses", 200),
        ("anthropic", "/v1/messages", 200), ("anthropic", "/v1/messages", 200),
    ]  # fmt: skip
    transport = {"connection", "keep-alive", "transfer-encoding", "content-length", "content-encoding"}
    assert all({"content-type", "date", "server"} <= set(i["response"]["headers"]) for i in model)
    assert not any((transport | {"set-cookie"}) & set(i["response"]["headers"]) for i in model)
    # Gzip bodies were decoded at capture and are stored as readable JSON / SSE.
    assert model[2]["response"]["body"]["json"]["object"] == "response"
    assert model[4]["response"]["body"]["sse"][0].startswith("event: message_start")
    # An id the model handed out and the agent echoed has the same placeholder in both places.
    call_ids = placeholders("".join(model[0]["response"]["body"]["sse"]), "call_")
    assert len(call_ids) == 1 and model[1]["request"]["json"]["messages"][-1]["tool_call_id"] in call_ids
    assert model[3]["request"]["json"]["previous_response_id"] == model[2]["response"]["body"]["json"]["id"]
    assert model[2]["response"]["body"]["json"]["id"].startswith("resp_{{id_")
    tool_uses = placeholders("".join(model[4]["response"]["body"]["sse"]), "toolu_")
    echoed = {block["tool_use_id"] for block in model[5]["request"]["json"]["messages"][-1]["content"]}
    assert len(tool_uses) == 2 and echoed == tool_uses


def test_streaming_passes_through_as_it_arrives(fixtures_dir):
    reply = scripted.chat_text_stream()
    with GatedUpstream([reply], first_events=2) as upstream:
        env = capture_env(upstream.url)
        args = ["capture", "--name", "t", "--fixtures-dir", str(fixtures_dir), "--", *agent("stream")]
        with subprocess.Popen(
            attest_argv(*args),
            env=env,
            cwd=fixtures_dir.parent,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            encoding="utf-8",
        ) as proc:
            assert proc.stdout is not None
            seen = [proc.stdout.readline() for _ in range(2)]
            # The agent printed two pieces while the upstream still holds the rest of its stream.
            upstream.gate.set()
            _, errors = proc.communicate(timeout=60)
    assert all(line.startswith("piece:") for line in seen)
    assert upstream.released_in_time is True
    assert proc.returncode == 0, errors
    assert len(interactions(fixtures_dir / "t.attest.json")[0]["response"]["body"]["sse"]) == len(
        reply.events or []
    )


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.parametrize("flags", [[], ["--expect-fail"]])
def test_an_unreachable_provider_gets_a_502_is_reported_and_nothing_is_written(fixtures_dir, flags):
    url = f"http://127.0.0.1:{closed_port()}"
    proc = capture(fixtures_dir, url, *flags, "--", *agent("chat", "--retries", "2"))
    assert proc.returncode == 1
    # One report: the SDK did not retry the 502, although it was allowed two retries.
    reports = [line for line in proc.stderr.splitlines() if "cannot reach" in line]
    assert reports == [
        f"attest capture: POST /v1/chat/completions: cannot reach {url} (connection refused); "
        "the command got a 502"
    ]
    assert "error: InternalServerError: Error code: 502" in proc.stdout
    assert f"attest capture: cannot reach {url}" in proc.stdout
    assert ONE_LINE_ERROR.match(proc.stderr.splitlines()[-1])
    assert "1 model call failed on the way" in proc.stderr and "Traceback" not in proc.stderr
    assert list(fixtures_dir.iterdir()) == []


def test_a_real_5xx_is_recorded_as_it_happened_and_replays(fixtures_dir):
    error = {
        "error": {"message": "The server had an error", "type": "server_error", "param": None, "code": None}
    }
    replies = [json_reply(error, status=500), json_reply(chat_response("Hello after a retry"))]
    with FakeUpstream(replies) as upstream:
        proc = capture(fixtures_dir, upstream.url, "--", *agent("chat", "--retries", "1"))
        assert proc.returncode == 0, proc.stderr
        replayed = run_attest(
            "replay", "--mode", "strict", "--name", "t", "--fixtures-dir", str(fixtures_dir), "--",
            *agent("chat", "--retries", "1"), env=clean_env(), cwd=fixtures_dir.parent,
        )  # fmt: skip
        assert len(upstream.requests) == 2
    model = interactions(fixtures_dir / "t.attest.json")
    assert [i["response"]["status"] for i in model] == [500, 200]
    assert replayed.returncode == 0, replayed.stderr
    assert (
        replayed.stdout
        == "chat answer: Hello after a retry\nattest replay: 2 replayed · 0 live model calls · $0.00\n"
    )


@pytest.mark.parametrize("flags", [[], ["--expect-fail"]])
def test_a_dropped_stream_reaches_the_agent_is_reported_and_nothing_is_written(fixtures_dir, flags):
    reply = scripted.chat_text_stream()
    reply.drop_after = 3
    old = write_fixture(fixtures_dir, "t", [exchange(chat_request(), chat_response("old answer"))])
    before = old.read_bytes()
    with FakeUpstream([reply]) as upstream:
        proc = capture(fixtures_dir, upstream.url, "--force", *flags, "--", *agent("stream"))
    assert proc.returncode == 1
    assert proc.stdout.count("piece:") == 3  # the events that arrived were passed on
    assert "error:" in proc.stdout
    assert f"{upstream.url} dropped the answer mid-way" in proc.stderr
    assert proc.stderr.splitlines()[-1].endswith("nothing written; the existing fixture is unchanged")
    assert "Traceback" not in proc.stderr
    assert old.read_bytes() == before
    assert sorted(p.name for p in fixtures_dir.iterdir()) == ["t.attest.json"]


def test_a_fixture_recorded_from_another_command_is_not_replaced_without_force(fixtures_dir):
    old = write_fixture(fixtures_dir, "t", [exchange(chat_request(), chat_response("old answer"))])
    before = old.read_bytes()
    replies = [json_reply(chat_response("new answer")), json_reply(chat_response("new answer"))]
    with FakeUpstream(replies) as upstream:
        refused = capture(fixtures_dir, upstream.url, "--", *agent("chat"))
        assert upstream.requests == []  # refused before the command ran: nothing paid for
        assert refused.returncode == 3
        assert refused.stderr.splitlines() == [
            f"attest: {old}: was recorded from `python agent.py`, not from this command; overwrite it "
            "with --force, or pick another --name"
        ]
        assert old.read_bytes() == before
        forced = capture(fixtures_dir, upstream.url, "--force", "--", *agent("chat"))
        assert forced.returncode == 0, forced.stderr
        again = capture(fixtures_dir, upstream.url, "--", *agent("chat"))  # the same command: no refusal
        assert again.returncode == 0, again.stderr


def test_a_run_with_no_model_calls_writes_nothing(fixtures_dir):
    with FakeUpstream([]) as upstream:
        proc = capture(fixtures_dir, upstream.url, "--", *agent("none"))
    assert proc.returncode == 1
    assert proc.stderr.splitlines() == [
        "attest capture: 0 calls recorded; nothing written",
        f"attest: {fixtures_dir / 't.attest.json'}: the command made no model calls through the capture proxy "
        "(a client built with a hard-coded base_url bypasses it); nothing written",
    ]
    assert list(fixtures_dir.iterdir()) == []


@pytest.mark.parametrize(
    ("agent_exit", "flags", "expected", "problem"),
    [
        (0, [], 0, None),
        (3, [], 1, "the command exited 3 (use --expect-fail to record a run that is meant to fail)"),
        (3, ["--expect-fail"], 0, None),
        (0, ["--expect-fail"], 1, "the command exited 0 but --expect-fail says it must fail"),
    ],
)
def test_the_command_must_end_as_expected(fixtures_dir, agent_exit, flags, expected, problem):
    with FakeUpstream([json_reply(chat_response())]) as upstream:
        proc = capture(fixtures_dir, upstream.url, *flags, "--", *agent("chat", "--exit", str(agent_exit)))
    assert proc.returncode == expected, proc.stderr
    path = fixtures_dir / "t.attest.json"
    if problem:
        assert proc.stderr.splitlines()[-1] == f"attest: {path}: {problem}; nothing written"
        assert not path.exists()
        return
    source = fx.read_fixture(path)["source"]
    # The interpreter is stored by name, so `--refresh` runs on another machine (with attest's own python).
    assert source["command"] == ["python", *agent("chat", "--exit", str(agent_exit))[1:]]
    assert source["flags"] == {"expect_fail": bool(flags)}
    assert source["exit_code"] == agent_exit


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        (["capture", "--name", "t"], "no command given; put it after `--`"),
        (["capture", "--name", "t", "--refresh", "t"], "give either --name N -- CMD"),
        (["capture", "--name", "../t", "--", "true"], "fixture name '../t' must be"),
        (["capture", "--name", "t", "--", "no-such-program-attest"], "cannot run 'no-such-program-attest'"),
        (
            ["capture", "--refresh", "t", "--", "true"],
            "--refresh re-runs the command recorded in the fixture",
        ),
        (["capture", "--name", "t", "--bogus", "--", "true"], "No such option: --bogus"),
    ],
)
def test_could_not_run_is_one_line_and_exit_3(tmp_path, args, problem):
    proc = run_attest(*args, env=clean_env(), cwd=tmp_path)
    assert proc.returncode == 3
    assert len(proc.stderr.splitlines()) == 1 and problem in proc.stderr
    assert not (tmp_path / "tests").exists()


def test_the_help_documents_the_exit_codes(tmp_path):
    proc = run_attest("capture", "--help", env=clean_env(COLUMNS="200"), cwd=tmp_path)
    assert proc.returncode == 0
    text = " ".join(proc.stdout.split())
    assert "0 fixture written; 1 the command did not end as expected" in text
    assert "3 could not run" in text


def test_this_process_keys_are_never_stored_whatever_their_shape(fixtures_dir):
    plain_key = "plain-local-key-0123456789"  # matches no token shape: only its value identifies it
    echoed = chat_response(f"your key is {plain_key}")
    with FakeUpstream([json_reply(echoed)]) as upstream:
        env = {**capture_env(upstream.url), "OPENAI_API_KEY": plain_key}
        args = ["capture", "--name", "t", "--fixtures-dir", str(fixtures_dir), "--", *agent("chat")]
        proc = run_attest(*args, env=env, cwd=fixtures_dir.parent)
    assert proc.returncode == 0, proc.stderr
    text = (fixtures_dir / "t.attest.json").read_text(encoding="utf-8")
    assert plain_key not in text and "your key is {{redacted}}" in text


def read_pty(fd: int) -> str:
    chunks = []
    while True:
        try:
            data = os.read(fd, 4096)
        except OSError:  # the other side closed (EIO on Linux)
            break
        if not data:
            break
        chunks.append(data)
    return b"".join(chunks).decode("utf-8")


def capture_on_a_pty(fixtures_dir: Path, env: dict[str, str], stdout_too: bool = False) -> str:
    """What the terminal shows of a capture: its standard error, and with `stdout_too` the command's output."""
    master, slave = pty.openpty()
    args = ["capture", "--name", "t", "--fixtures-dir", str(fixtures_dir), "--", *agent("chat")]
    with subprocess.Popen(
        attest_argv(*args),
        env=env,
        cwd=fixtures_dir.parent,
        stdout=slave if stdout_too else subprocess.DEVNULL,
        stderr=slave,
        stdin=subprocess.DEVNULL,
    ) as proc:
        os.close(slave)
        output = read_pty(master)
        assert proc.wait(timeout=60) == 0
    os.close(master)
    return output.replace("\r\n", "\n")


def test_progress_is_shown_on_a_terminal_and_quiet_in_ci(fixtures_dir):
    path = fixtures_dir / "t.attest.json"
    with FakeUpstream([json_reply(chat_response())] * 3) as upstream:
        on_terminal = capture_on_a_pty(fixtures_dir, capture_env(upstream.url))
        in_ci = capture_on_a_pty(fixtures_dir, capture_env(upstream.url, CI="true"))
        piped = capture(fixtures_dir, upstream.url, "--", *agent("chat")).stderr
    final = f"attest capture: 1 call recorded; wrote {path}"
    assert on_terminal == f"\rattest capture: 1 call recorded\x1b[K\n{final}\n"
    # The same calls again: the fixture is left as it was, and the line says so.
    assert in_ci == piped == f"attest capture: 1 call recorded; {path} unchanged\n"


def test_the_progress_line_ends_before_the_commands_own_output(fixtures_dir):
    with FakeUpstream([json_reply(chat_response("Hello!"))]) as upstream:
        shown = capture_on_a_pty(fixtures_dir, capture_env(upstream.url), stdout_too=True)
    # The command's line starts a line of its own: it is not glued to the end of the progress line.
    assert "\x1b[K\nchat answer: Hello!\n" in shown


PYTEST_PROJECT_TEST = """
import openai

def test_hello(attest_replay):
    with attest_replay("hello"):
        reply = openai.OpenAI(max_retries=0).chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "Say hello"}])
    assert reply.choices[0].message.content == "Hello from a test!"
"""


def test_a_fixture_recorded_from_a_pytest_test_as_the_readme_says_replays_in_it(tmp_path):
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_agent.py").write_text(PYTEST_PROJECT_TEST)
    pytest_cmd = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "tests/test_agent.py::test_hello",
    ]
    with FakeUpstream([json_reply(chat_response("Hello from a test!"))]) as upstream:
        recorded = run_attest(
            "capture", "--name", "hello", "--", "env", "ATTEST_REPLAY=off", *pytest_cmd,
            env=capture_env(upstream.url), cwd=tmp_path,
        )  # fmt: skip
    assert recorded.returncode == 0, recorded.stdout + recorded.stderr
    assert recorded.stderr.splitlines()[-1].startswith("attest capture: 1 call recorded; wrote")
    replayed = subprocess.run(
        pytest_cmd, cwd=tmp_path, env=clean_env(CI="true"), capture_output=True, text=True
    )
    assert replayed.returncode == 0, replayed.stdout
    assert "attest replay: 1 replayed · 0 live model calls · $0.00" in replayed.stdout
