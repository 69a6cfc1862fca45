"""A test whose fixtures the engine holds loaded opens its session without waiting for the engine
(replay.loaded): the open's answer is read when a call needs the hit table, or at the close.

Every test here runs a real `attest-engine serve` process started the way the pytest helper starts
it (`EngineProcess`), with the official openai SDK as the test's client. Stopping the engine process
(SIGSTOP) shows what waits for it and what does not: an open that waited would never return.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import openai
import pytest
from attest_toolkit.credentials.scan import Secrets
from attest_toolkit.errors import AttestError
from attest_toolkit.pytest_plugin import lane
from attest_toolkit.pytest_plugin.client import EngineProcess
from attest_toolkit.replay import lane as replay_lane
from attest_toolkit.replay.runner import LaneEnd
from attest_toolkit.replay.server import ReplayApp
from conftest import chat_request, chat_response, clean_env, exchange, write_fixture

T = TypeVar("T")
WAIT = 30.0  # seconds a step may take on a loaded machine before the test calls it stuck


@pytest.fixture
def fixtures(fixtures_dir: Path) -> list[Path]:
    """Three fixtures in one directory: opening two of them has the engine read the third ahead."""
    return [
        write_fixture(
            fixtures_dir, name, [exchange(chat_request(), chat_response(f"Hello from {name}!"))] * 2
        )
        for name in ("first", "second", "third")
    ]


def client(env: dict[str, str]) -> openai.OpenAI:
    return openai.OpenAI(base_url=env["OPENAI_BASE_URL"], api_key=env["OPENAI_API_KEY"], max_retries=0)


def answer(env: dict[str, str]) -> str | None:
    return client(env).chat.completions.create(**chat_request()).choices[0].message.content


def open_routed(engine: EngineProcess, path: Path) -> tuple[str, dict[str, str]]:
    sid, env = engine.open_session([path], "strict", True)
    lane.route(engine.url, engine.lane)  # what the pytest helper does once a session is open
    return sid, env


def told_of(engine: EngineProcess, paths: list[Path]) -> None:
    """Open and close the first two fixtures (the engine then reads the rest ahead), and go on with
    round trips until the engine has told of every one of `paths` (it tells with its answers)."""
    for path in paths[:2]:
        engine.close_session(open_routed(engine, path)[0])
    for _ in range(50):
        if engine.told.variables([str(p) for p in paths]) is not None:
            return
        engine.close_session(open_routed(engine, paths[0])[0])
    pytest.fail("the engine never told of the fixtures it read ahead")


def while_stopped(engine: EngineProcess, step: Callable[[], T]) -> T:
    """`step()` run while the engine process is stopped: it must not wait for the engine."""
    os.kill(engine.proc.pid, signal.SIGSTOP)
    try:
        result: list[T] = []
        worker = threading.Thread(target=lambda: result.append(step()), daemon=True)
        worker.start()
        worker.join(WAIT)
        assert not worker.is_alive(), "the step waited for the stopped engine"
        return result[0]
    finally:
        os.kill(engine.proc.pid, signal.SIGCONT)


def test_an_open_of_a_fixture_read_ahead_does_not_wait_and_its_calls_are_answered(engine, fixtures):
    told_of(engine, fixtures)
    sid, env = while_stopped(engine, lambda: open_routed(engine, fixtures[2]))
    assert env["OPENAI_BASE_URL"] == f"{engine.url}/r/{sid}/openai/v1"
    assert answer(env) == answer(env) == "Hello from third!"
    summary = engine.close_session(sid)
    assert (summary["replayed"], summary["misses"], summary["unused"]) == (2, 0, 0)


def test_a_fixture_opened_before_is_answered_while_the_engine_is_stopped_and_counted(engine, fixtures):
    """Its table is held from before: the open and the hit cross nothing, and the engine, reading the
    runner's note after the open it was sent after, counts the hit at the close."""
    told_of(engine, fixtures)
    sid, env = while_stopped(engine, lambda: open_routed(engine, fixtures[0]))
    assert while_stopped(engine, lambda: answer(env)) == "Hello from first!"
    summary = engine.close_session(sid)
    assert (summary["replayed"], summary["unused"]) == (1, 1)


def test_a_fixture_rewritten_after_it_was_told_of_is_opened_as_before(engine, fixtures):
    told_of(engine, fixtures)
    rewritten = write_fixture(
        fixtures[2].parent, "third", [exchange(chat_request(), chat_response("Rewritten!"))]
    )
    sid, env = open_routed(engine, rewritten)
    assert answer(env) == "Rewritten!"
    assert engine.close_session(sid)["replayed"] == 1


def test_a_fixture_broken_after_it_was_told_of_fails_its_open_on_one_line(engine, fixtures):
    told_of(engine, fixtures)
    fixtures[2].write_text("{not json", encoding="utf-8")
    with pytest.raises(AttestError) as raised:
        engine.open_session([fixtures[2]], "strict", True)
    assert "third" in str(raised.value) and "\n" not in str(raised.value)


def test_an_engine_gone_after_an_open_that_did_not_wait_fails_the_close_on_one_line(engine, fixtures):
    told_of(engine, fixtures)
    sid, _ = open_routed(engine, fixtures[2])
    engine.proc.kill()
    engine.proc.wait()
    with pytest.raises(
        AttestError, match=r"^the replay engine exited while serving this replay; the next test"
    ):
        engine.close_session(sid)


def test_a_hit_table_larger_than_the_pipe_does_not_hold_up_a_call_over_http(engine, fixtures):
    """The engine reads the open first when a call over HTTP names the session, and its answer (the
    whole hit table, the runner not holding it) is more than the pipe holds until the runner reads
    it at the close: the engine keeps it in memory and serves the call meanwhile."""
    big = "word " * 100_000  # a 500 kB answer: its table, in base64, is far more than a pipe's 64 KiB
    large = write_fixture(fixtures[0].parent, "large", [exchange(chat_request(), chat_response(big))])
    told_of(engine, [*fixtures, large])
    lane.unroute_all()  # the call goes over HTTP
    sid, env = engine.open_session([large], "strict", True)
    sdk = openai.OpenAI(base_url=env["OPENAI_BASE_URL"], api_key="sk-x", max_retries=0, timeout=WAIT)
    assert sdk.chat.completions.create(**chat_request()).choices[0].message.content == big
    assert engine.close_session(sid)["replayed"] == 1


def test_a_note_read_before_the_open_it_was_sent_after_is_counted(fixtures):
    """The runner sends the open on the control pipe, then a hit's note on the lane: the engine may
    find the note first (both wait when it wakes). It reads the control lines then, so the note is
    counted and the close does not call the hit uncounted."""
    app = ReplayApp(Secrets.of([]), clean_env())
    ours, theirs = socket.socketpair()
    loop = asyncio.new_event_loop()
    sid = "ab" * 8
    # The open, not read yet: what the control pipe holds when the note is read.
    app.sessions.read_pending = lambda: (
        sid in app.sessions or app.open([fixtures[0]], "strict", True, sid=sid)
    )
    try:
        end = LaneEnd(app, theirs, loop)
        ours.sendall(replay_lane.note(sid, 0))
        end.settle()
        app.sessions.read_pending()  # the close is read after the open
        assert app.close(sid, answered=1)["replayed"] == 1
    finally:
        loop.close()
        ours.close()
        theirs.close()
