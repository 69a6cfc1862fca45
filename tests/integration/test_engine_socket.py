"""`attest-engine serve --socket PATH`: the engine a test runner starts before it has a worker to give
it to (Vitest's attestReplay()). It serves `serve`'s control lines to the first connection to the
Unix socket and to no other, and ends with that connection, or, unclaimed, with its own input."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from io import BufferedRWPair
from pathlib import Path

import openai
from conftest import chat_request, chat_response, clean_env, exchange, write_fixture

ENGINE = str(Path(sys.executable).parent / "attest-engine")


def start(path: Path, *, spelled: str = "--socket") -> subprocess.Popen[str]:
    args = [spelled, str(path)] if spelled == "--socket" else [f"--socket={path}"]
    proc = subprocess.Popen(
        [ENGINE, "serve", *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=clean_env(PYTHONPROFILEIMPORTTIME="1"),
    )
    assert proc.stdout is not None
    assert "ready" in json.loads(proc.stdout.readline())  # the runner's own copy
    return proc


def claim(path: Path) -> tuple[socket.socket, BufferedRWPair]:
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(str(path))
    return conn, conn.makefile("rwb")


def ask(stream: BufferedRWPair, message: dict) -> dict:
    stream.write((json.dumps(message) + "\n").encode())
    stream.flush()
    return json.loads(stream.readline())


def test_the_first_connection_gets_the_engine_and_no_other_does(tmp_path: Path) -> None:
    path = write_fixture(tmp_path / "fx", "t", [exchange(chat_request(), chat_response("served"))])
    where = tmp_path / "engine.sock"
    proc = start(where)
    conn, stream = claim(where)
    assert "ready" in json.loads(stream.readline())
    assert not where.exists()
    second = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        second.connect(str(where))
        refused = False
    except OSError:
        refused = True
    finally:
        second.close()
    assert refused

    opened = ask(stream, {"open": {"fixtures": [str(path)], "mode": "strict"}})
    client = openai.OpenAI(base_url=opened["env"]["OPENAI_BASE_URL"], api_key="x", max_retries=0)
    assert client.chat.completions.create(**chat_request()).choices[0].message.content == "served"
    assert ask(stream, {"close": opened["id"]})["summary"]["replayed"] == 1

    stream.close()
    conn.close()  # the claimant ended: so does the engine
    _, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 0
    assert not [line for line in stderr.splitlines() if "typer" in line or "Traceback" in line]


def test_an_unclaimed_engine_ends_with_its_input(tmp_path: Path) -> None:
    where = tmp_path / "engine.sock"
    proc = start(where, spelled="--socket=")
    _, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 0 and "Traceback" not in stderr
    assert not where.exists()


def test_a_claimed_engine_ends_when_its_runner_does(tmp_path: Path) -> None:
    where = tmp_path / "engine.sock"
    proc = start(where)
    conn, stream = claim(where)
    assert "ready" in json.loads(stream.readline())
    assert proc.stdin is not None
    proc.stdin.close()
    assert proc.wait(timeout=30) == 0
    assert stream.read() == b""
    conn.close()


def test_a_socket_it_cannot_listen_on_is_one_line_exit_3(tmp_path: Path) -> None:
    where = tmp_path / "missing" / "engine.sock"
    done = subprocess.run(
        [ENGINE, "serve", "--socket", str(where)], capture_output=True, text=True, env=clean_env(), timeout=60
    )
    assert (done.returncode, done.stderr) == (
        3,
        f"attest-engine: cannot listen on {where}: No such file or directory\n",
    )
