"""A runner may open a session with an id of its own and make its calls without waiting for the
answer (the Vitest helper does, once it knows a fixture's variables): the engine takes the id, refuses
one that is malformed or already open, and reads the open line before any call that names the id."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import openai
from attest_toolkit.engine.runner import ControlPipe
from attest_toolkit.engine.server import Engine
from conftest import chat_request, chat_response, clean_env, exchange, write_fixture

ENGINE = str(Path(sys.executable).parent / "attest-engine")
OWN_ID = "0123456789abcdef"


def send(proc: subprocess.Popen[str], message: dict | str) -> None:
    assert proc.stdin is not None
    proc.stdin.write((message if isinstance(message, str) else json.dumps(message)) + "\n")
    proc.stdin.flush()


def answer(proc: subprocess.Popen[str]) -> dict:
    assert proc.stdout is not None
    return json.loads(proc.stdout.readline())


def test_an_open_with_its_own_id_serves_the_calls_sent_before_its_answer_is_read(fixtures_dir: Path) -> None:
    path = write_fixture(fixtures_dir, "t", [exchange(chat_request(), chat_response("served"))])
    proc = subprocess.Popen(
        [ENGINE, "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=clean_env()
    )
    url = answer(proc)["ready"]["url"]
    send(proc, {"open": {"fixtures": [str(path)], "mode": "strict", "id": OWN_ID}})
    client = openai.OpenAI(base_url=f"{url}/r/{OWN_ID}/openai/v1", api_key="x", max_retries=0)
    assert client.chat.completions.create(**chat_request()).choices[0].message.content == "served"
    opened = answer(proc)
    assert opened["id"] == OWN_ID
    assert opened["env"]["OPENAI_BASE_URL"] == f"{url}/r/{OWN_ID}/openai/v1"
    # An id already open, or one that is not a long hex string, is refused: the test fails there.
    send(proc, {"open": {"fixtures": [str(path)], "mode": "strict", "id": OWN_ID}})
    send(proc, {"open": {"fixtures": [str(path)], "mode": "strict", "id": "../x"}})
    for refused in (answer(proc), answer(proc)):
        assert refused == {
            "error": "a session id is 16 to 64 lowercase hex digits, not one already open",
            "exit_code": 3,
        }
    send(proc, {"close": OWN_ID})
    assert answer(proc)["summary"]["replayed"] == 1
    proc.communicate("stop\n", timeout=30)
    assert proc.returncode == 0


def test_a_call_naming_an_id_reads_the_open_line_it_follows(fixtures_dir: Path) -> None:
    """The open line is in the pipe but the engine has not read it yet (the call is looked up in the
    same turn of the engine's loop that wrote it): the lookup reads it first."""
    path = write_fixture(fixtures_dir, "t", [exchange(chat_request(), chat_response("served"))])
    to_engine, from_runner = os.pipe()
    from_engine, to_runner = os.pipe()
    with Engine(clean_env()) as engine:
        pipe = ControlPipe(engine.app, to_engine, to_runner)
        serving = threading.Thread(target=pipe.run, args=(engine.server,))
        serving.start()
        os.write(from_runner, b'{"close": "none"}\n')  # answered: the pipe is being read
        assert "error" in json.loads(os.read(from_engine, 1 << 16))
        line = json.dumps({"open": {"fixtures": [str(path)], "mode": "strict", "id": OWN_ID}}) + "\n"

        def open_then_look_up() -> bool:
            os.write(from_runner, line.encode())
            return engine.app.sessions.get(OWN_ID) is not None

        try:
            assert engine.server.call(open_then_look_up)
            assert json.loads(os.read(from_engine, 1 << 16))["id"] == OWN_ID
        finally:
            os.write(from_runner, b"stop\n")
            serving.join(timeout=30)
    for fd in (to_engine, from_runner, from_engine, to_runner):
        os.close(fd)
