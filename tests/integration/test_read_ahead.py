"""Reading ahead (replay/read_ahead.py): once a run has opened two fixtures of a directory, the engine
loads the rest of it between the requests it serves, and every test still gets what it got before:
the recording as the file holds it now, and a broken fixture's one-line error at its own open."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import openai
import pytest
from attest_toolkit.errors import AttestError
from attest_toolkit.replay import read_ahead
from attest_toolkit.replay.server import Engine
from conftest import chat_request, chat_response, clean_env, exchange, write_fixture

TURNS = 10_000  # loop turns to wait for the reading to end: far more than four fixtures take


def suite(directory: Path, count: int) -> list[Path]:
    return [
        write_fixture(directory, f"test-{n}", [exchange(chat_request(f"Q{n}"), chat_response(f"A{n}"))])
        for n in range(count)
    ]


@pytest.fixture
def engine() -> Iterator[Engine]:
    with Engine(clean_env()) as running:
        yield running


def read(engine: Engine) -> None:
    """Wait, on the engine's own loop, until it has read everything queued."""
    for _ in range(TURNS):
        if not engine.server.call(lambda: engine.app.read_ahead.running):
            return
    raise AssertionError("the engine never finished reading ahead")


def held(engine: Engine, paths: list[Path]) -> list[bool]:
    return [engine.app.store.holds(Path(os.path.abspath(p))) for p in paths]


def ask(engine: Engine, fixture: Path, question: str) -> str | None:
    sid, env = engine.open_session([fixture], "strict")
    try:
        with openai.OpenAI(
            base_url=env["OPENAI_BASE_URL"], api_key="sk-placeholder", max_retries=0
        ) as client:
            reply = client.chat.completions.create(**chat_request(question))
    finally:
        engine.close_session(sid)
    return reply.choices[0].message.content


def test_a_directory_is_read_ahead_once_a_run_has_opened_two_of_its_fixtures(tmp_path, engine):
    paths = suite(tmp_path / "fixtures", 4)
    assert ask(engine, paths[0], "Q0") == "A0"
    read(engine)
    assert held(engine, paths) == [True, False, False, False]  # a run of one test reads nothing ahead
    assert ask(engine, paths[1], "Q1") == "A1"
    read(engine)
    assert held(engine, paths) == [True, True, True, True]
    assert [ask(engine, p, f"Q{n}") for n, p in enumerate(paths[2:], 2)] == ["A2", "A3"]


def test_a_fixture_rewritten_after_it_was_read_ahead_serves_what_the_file_holds_now(tmp_path, engine):
    paths = suite(tmp_path / "fixtures", 3)
    ask(engine, paths[0], "Q0"), ask(engine, paths[1], "Q1")
    read(engine)
    assert held(engine, paths)[2]
    write_fixture(
        tmp_path / "fixtures", "test-2", [exchange(chat_request("Q2"), chat_response("A2, re-recorded"))]
    )
    assert ask(engine, paths[2], "Q2") == "A2, re-recorded"


def test_a_fixture_rewritten_within_the_clock_tick_it_was_read_in_is_loaded_again(tmp_path, engine):
    # Same size, same modification time (a filesystem's clock ticks in milliseconds): still a new file.
    paths = suite(tmp_path / "fixtures", 3)
    ask(engine, paths[0], "Q0"), ask(engine, paths[1], "Q1")
    read(engine)
    before = paths[2].stat()
    write_fixture(tmp_path / "fixtures", "test-2", [exchange(chat_request("Q2"), chat_response("B2"))])
    os.utime(paths[2], ns=(before.st_atime_ns, before.st_mtime_ns))
    assert paths[2].stat().st_size == before.st_size
    assert ask(engine, paths[2], "Q2") == "B2"


def test_a_broken_fixture_beside_them_fails_its_own_open_with_its_own_error(tmp_path, engine):
    paths = suite(tmp_path / "fixtures", 4)
    doc = json.loads(paths[2].read_text(encoding="utf-8"))
    doc["source"]["command"] = ["python", "edited-by-hand.py"]
    paths[2].write_text(json.dumps(doc), encoding="utf-8")
    ask(engine, paths[0], "Q0"), ask(engine, paths[1], "Q1")
    read(engine)
    assert held(engine, paths) == [True, True, False, True]
    with pytest.raises(AttestError, match="digest does not match the content") as raised:
        engine.open_session([paths[2]], "strict")
    assert str(paths[2]) in str(raised.value) and "\n" not in str(raised.value)
    assert ask(engine, paths[3], "Q3") == "A3"


def test_a_large_fixture_is_left_to_its_own_open(tmp_path, engine, monkeypatch):
    paths = suite(tmp_path / "fixtures", 3)
    answer = "A long answer. " * 200
    large = write_fixture(
        tmp_path / "fixtures", "test-3", [exchange(chat_request("Q3"), chat_response(answer))]
    )
    monkeypatch.setattr(read_ahead, "MAX_FILE_BYTES", large.stat().st_size - 1)
    ask(engine, paths[0], "Q0"), ask(engine, paths[1], "Q1")
    read(engine)
    assert held(engine, [*paths, large]) == [True, True, True, False]
    assert ask(engine, large, "Q3") == answer


def test_a_run_reads_at_most_its_budget_ahead(tmp_path, engine, monkeypatch):
    paths = suite(tmp_path / "fixtures", 6)
    monkeypatch.setattr(read_ahead, "MAX_FILES", 2)
    ask(engine, paths[0], "Q0"), ask(engine, paths[1], "Q1")
    read(engine)
    assert sum(held(engine, paths[2:])) == 2
