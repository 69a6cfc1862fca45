"""A runner may open a session with an id of its own and make its calls without waiting for the
answer (the Vitest helper does, once it knows a fixture's variables): the engine takes the id, refuses
one that is malformed or already open, and reads the open line before any call that names the id."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import openai
import pytest
from attest_toolkit.replay.runner import ControlPipe
from attest_toolkit.replay.server import Engine
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


def made_id(ahead: dict, nonce: str = "00112233445566ff") -> str:
    """An id made from the engine's template as engine/ahead.py documents it: prefix, nonce, tag."""
    tag = hmac.new(bytes.fromhex(ahead["key"]), nonce.encode(), hashlib.sha256).hexdigest()[:16]
    return ahead["prefix"] + nonce + tag


def serving_engine() -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [ENGINE, "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=clean_env()
    )
    return proc, answer(proc)["ready"]["url"]


def test_a_session_made_from_a_template_is_opened_by_its_first_call_and_only_once(
    fixtures_dir: Path,
) -> None:
    path = write_fixture(fixtures_dir, "t", [exchange(chat_request(), chat_response("served"))])
    proc, url = serving_engine()
    send(proc, {"open": {"fixtures": [str(path)], "mode": "strict", "ahead": True}})
    first = answer(proc)
    sid = made_id(first["ahead"])
    assert sid != first["id"]
    client = openai.OpenAI(base_url=f"{url}/r/{sid}/openai/v1", api_key="x", max_retries=0)
    assert client.chat.completions.create(**chat_request()).choices[0].message.content == "served"
    send(proc, {"close": sid})
    closed = answer(proc)
    assert closed.keys() == {"summary"}
    assert (closed["summary"]["replayed"], closed["summary"]["misses"]) == (1, 0)
    assert answer_summary(proc, first["id"])["replayed"] == 0  # counted on its own session only
    # Closed, the id is refused like any ended session: a stray call is not served, nor closed again.
    with pytest.raises(openai.PermissionDeniedError):
        client.chat.completions.create(**chat_request())
    send(proc, {"close": sid})
    assert answer(proc)["error"] == f"no replay session {sid!r}"
    proc.communicate("stop\n", timeout=30)


def answer_summary(proc: subprocess.Popen[str], sid: str) -> dict:
    """The summary of an unused session, closed: what another session's summary differs from."""
    send(proc, {"close": sid})
    return answer(proc)["summary"]


def test_a_template_session_with_no_call_closes_with_its_own_empty_summary(fixtures_dir: Path) -> None:
    path = write_fixture(fixtures_dir, "t", [exchange(chat_request(), chat_response("served"))])
    proc, _ = serving_engine()
    send(proc, {"open": {"fixtures": [str(path)], "mode": "strict", "ahead": True}})
    first = answer(proc)
    send(proc, {"close": made_id(first["ahead"])})
    closed = answer(proc)
    assert closed == {"summary": answer_summary(proc, first["id"])}
    assert closed["summary"]["replayed"] == 0
    proc.communicate("stop\n", timeout=30)


def test_an_id_with_a_wrong_tag_or_another_prefix_opens_nothing(fixtures_dir: Path) -> None:
    """Who saw a session's URL knows its prefix, not the key: an id of its own making is refused."""
    path = write_fixture(fixtures_dir, "t", [exchange(chat_request(), chat_response("served"))])
    proc, url = serving_engine()
    send(proc, {"open": {"fixtures": [str(path)], "mode": "strict", "ahead": True}})
    ahead = answer(proc)["ahead"]
    made = made_id(ahead)
    forged = made[:-16] + format(int(made[-16:], 16) ^ 1, "016x")
    elsewhere = "f" * 16 + made[16:]
    for sid in (forged, elsewhere):
        client = openai.OpenAI(base_url=f"{url}/r/{sid}/openai/v1", api_key="x", max_retries=0)
        with pytest.raises(openai.PermissionDeniedError):
            client.chat.completions.create(**chat_request())
        send(proc, {"close": sid})
        assert answer(proc)["error"] == f"no replay session {sid!r}"
    proc.communicate("stop\n", timeout=30)
