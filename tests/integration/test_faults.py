"""Faults injected on replay (`--fault SPEC`), met by the official SDKs' own retry logic: a status in
the provider's own shape, a timeout, a disconnect, a cut stream, latency and pacing."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

import anthropic
import httpx
import openai
import pytest
from attest_toolkit.replay import faults
from attest_toolkit.replay.server import Engine
from conftest import (
    chat_request,
    chat_response,
    clean_env,
    exchange,
    message_response,
    sse_exchange,
    write_fixture,
)

RECORDINGS = Path(__file__).parents[1] / "recordings"
STREAM = RECORDINGS / "stream.attest.json"  # "Hello! How can I help you today?" in 11 events
STREAM_REQUEST = {
    "model": "gpt-4o-mini",
    "messages": [{"role": "user", "content": "Say hello"}],
    "stream": True,
}
CLAUDE = {"model": "claude-haiku-4-5", "max_tokens": 64, "messages": [{"role": "user", "content": "Hi"}]}
# Anthropic's stream of "Hello! How can I help?": its start, a text block in three deltas, its end.
CLAUDE_EVENTS = [
    ("message_start", {"message": {**message_response(""), "content": [], "stop_reason": None}}),
    ("content_block_start", {"index": 0, "content_block": {"type": "text", "text": ""}}),
    *(
        ("content_block_delta", {"index": 0, "delta": {"type": "text_delta", "text": piece}})
        for piece in ("Hello!", " How", " can I help?")
    ),
    ("content_block_stop", {"index": 0}),
    (
        "message_delta",
        {"delta": {"stop_reason": "end_turn", "stop_sequence": None}, "usage": {"output_tokens": 7}},
    ),
    ("message_stop", {}),
]


def chat_fixture(fixtures_dir: Path) -> Path:
    return write_fixture(fixtures_dir, "chat", [exchange(chat_request(), chat_response("served"))])


def openai_client(env: dict[str, str], **options: object) -> openai.OpenAI:
    return openai.OpenAI(base_url=env["OPENAI_BASE_URL"], api_key="x", **options)  # type: ignore[arg-type]


def test_openai_max_retries_recovers_from_a_429_and_the_retry_gets_the_recording(fixtures_dir: Path) -> None:
    path = chat_fixture(fixtures_dir)
    with Engine(clean_env()) as engine:
        sid, env = engine.open_session([path], faults=["status=429,retry-after=0"])
        client = openai_client(env, max_retries=1)
        raw = client.chat.completions.with_raw_response.create(**chat_request())
        summary = engine.close_session(sid)
    assert raw.retries_taken == 1
    assert raw.parse().choices[0].message.content == "served"
    assert summary["replayed"] == 1 and summary["misses"] == 0 and summary["unused"] == 0
    assert summary["fault_list"] == [{"call": 1, "fault": "status=429,retry-after=0", "kind": "status"}]


def test_a_500_on_every_request_outlasts_max_retries_as_openais_own_error(fixtures_dir: Path) -> None:
    path = chat_fixture(fixtures_dir)
    with Engine(clean_env()) as engine:
        sid, env = engine.open_session([path], faults=["every:status=500,retry-after=0"])
        with pytest.raises(openai.InternalServerError) as raised:
            openai_client(env, max_retries=2).chat.completions.create(**chat_request())
        summary = engine.close_session(sid)
    assert raised.value.status_code == 500
    assert raised.value.body["type"] == "server_error"  # type: ignore[index]
    assert "injected fault every:status=500" in raised.value.message
    assert summary["faults"] == 3 and summary["replayed"] == 0 and summary["misses"] == 0


def test_anthropic_retries_a_529_overload_and_a_429_rate_limit(fixtures_dir: Path) -> None:
    path = write_fixture(
        fixtures_dir, "claude", [exchange(CLAUDE, message_response("Hi!"), path="/v1/messages")], "anthropic"
    )
    for spec, error in (
        ("status=529", anthropic.InternalServerError),
        ("status=429", anthropic.RateLimitError),
    ):
        with Engine(clean_env()) as engine:
            sid, env = engine.open_session([path], faults=[f"{spec},retry-after=0"])
            with pytest.raises(error) as raised:
                anthropic.Anthropic(
                    base_url=env["ANTHROPIC_BASE_URL"], api_key="x", max_retries=0
                ).messages.create(**CLAUDE)
            assert raised.value.body["error"]["type"] in ("overloaded_error", "rate_limit_error")  # type: ignore[index]
            client = anthropic.Anthropic(base_url=env["ANTHROPIC_BASE_URL"], api_key="x", max_retries=2)
            raw = client.messages.with_raw_response.create(**CLAUDE)  # request 2 is not faulted
            summary = engine.close_session(sid)
        assert raw.parse().content[0].text == "Hi!"  # type: ignore[union-attr]
        assert raw.retries_taken == 0 and summary["replayed"] == 1 and summary["faults"] == 1


def test_a_cut_stream_is_the_clients_error_after_exactly_the_first_k_events_text() -> None:
    with Engine(clean_env()) as engine:
        sid, env = engine.open_session([STREAM], faults=["cut=3"])
        text: list[str] = []
        with pytest.raises(openai.APIConnectionError) as raised:
            for chunk in openai_client(env, max_retries=0).chat.completions.create(**STREAM_REQUEST):
                text.append(chunk.choices[0].delta.content or "")
        summary = engine.close_session(sid)
    # the body ended short (openai sends through httpx2, a fork of httpx with the same errors)
    assert type(raised.value.__cause__).__name__ == "RemoteProtocolError"
    assert "".join(text) == "Hello! How"  # the role event, "Hello!", " How"
    assert summary["replayed"] == 1 and summary["faults"] == 1


def test_a_cut_anthropic_stream_is_the_sdks_error_after_exactly_the_first_k_events_text(
    fixtures_dir: Path,
) -> None:
    events = [
        f"event: {name}\ndata: {json.dumps({'type': name, **data})}\n\n" for name, data in CLAUDE_EVENTS
    ]
    request = {**CLAUDE, "stream": True}
    path = write_fixture(
        fixtures_dir, "claude-stream", [sse_exchange(request, events, path="/v1/messages")], "anthropic"
    )
    with Engine(clean_env()) as engine:
        sid, env = engine.open_session([path], faults=["cut=4"])
        client = anthropic.Anthropic(base_url=env["ANTHROPIC_BASE_URL"], api_key="x", max_retries=0)
        text: list[str] = []
        with (
            pytest.raises(anthropic.APIConnectionError) as raised,
            client.messages.stream(**CLAUDE) as stream,
        ):
            for piece in stream.text_stream:
                text.append(piece)
        summary = engine.close_session(sid)
    assert type(raised.value.__cause__).__name__ == "RemoteProtocolError"  # the body ended short
    assert "".join(text) == "Hello! How"  # the message's and the block's start, "Hello!", " How"
    assert summary["replayed"] == 1 and summary["faults"] == 1


def test_a_cut_past_the_last_event_still_ends_as_an_error() -> None:
    with Engine(clean_env()) as engine:
        sid, env = engine.open_session([STREAM], faults=["cut=99"])
        with pytest.raises(openai.APIConnectionError):
            list(openai_client(env, max_retries=0).chat.completions.create(**STREAM_REQUEST))
        engine.close_session(sid)


def test_a_timeout_is_the_clients_own_timeout_and_the_retry_is_served(fixtures_dir: Path) -> None:
    path = chat_fixture(fixtures_dir)
    with Engine(clean_env()) as engine:
        sid, env = engine.open_session([path], faults=["timeout"])
        with pytest.raises(openai.APITimeoutError):
            openai_client(env, max_retries=0, timeout=1.0).chat.completions.create(**chat_request())
        reply = openai_client(env, max_retries=0).chat.completions.create(**chat_request())
        summary = engine.close_session(sid)
    assert reply.choices[0].message.content == "served"
    assert summary["faults"] == 1 and summary["fault_notes"] == []


def test_a_held_request_is_let_go_when_its_session_closes(
    fixtures_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = chat_fixture(fixtures_dir)
    held = threading.Event()
    hold = faults.SessionFaults.hold

    async def holding(self: faults.SessionFaults) -> bool:
        held.set()
        return await hold(self)

    monkeypatch.setattr(faults.SessionFaults, "hold", holding)
    monkeypatch.setattr(faults, "TIMEOUT_CEILING", 3600.0)  # only the close can let it go in time
    raised: list[BaseException] = []
    with Engine(clean_env()) as engine:
        sid, env = engine.open_session([path], faults=["timeout"])
        waiting = threading.Thread(target=post_without_timeout, args=(env, raised))
        waiting.start()
        assert held.wait(30)
        summary = engine.close_session(sid)  # returns: the close does not wait for the held request
        waiting.join(30)
        assert not waiting.is_alive()  # the close let it go (not the engine's stop, nor the ceiling)
    assert [type(e) for e in raised] == [httpx.RemoteProtocolError]
    assert summary["fault_notes"] == []


def test_with_no_client_timeout_the_engine_gives_up_at_its_ceiling_and_says_so(
    fixtures_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(faults, "TIMEOUT_CEILING", 0.2)
    path = chat_fixture(fixtures_dir)
    raised: list[BaseException] = []
    with Engine(clean_env()) as engine:
        sid, env = engine.open_session([path], faults=["timeout"])
        post_without_timeout(env, raised)
        summary = engine.close_session(sid)
    assert [type(e) for e in raised] == [httpx.RemoteProtocolError]
    assert summary["fault_notes"] == [
        "attest replay: injected fault timeout (model request 1): no client timeout ended it within the "
        "engine's 0.2 s ceiling, so the engine closed the connection"
    ]


def post_without_timeout(env: dict[str, str], raised: list[BaseException]) -> None:
    try:
        httpx.post(env["OPENAI_BASE_URL"] + "/chat/completions", json=chat_request(), timeout=None)
    except httpx.HTTPError as exc:
        raised.append(exc)


def test_a_disconnect_is_a_connection_error_and_max_retries_recovers(fixtures_dir: Path) -> None:
    path = chat_fixture(fixtures_dir)
    with Engine(clean_env()) as engine:
        sid, env = engine.open_session([path], faults=["disconnect"])
        with pytest.raises(openai.APIConnectionError):
            openai_client(env, max_retries=0).chat.completions.create(**chat_request())
        sid2, env2 = engine.open_session([path], faults=["disconnect"])
        raw = openai_client(env2, max_retries=1).chat.completions.with_raw_response.create(**chat_request())
        engine.close_session(sid)
        summary = engine.close_session(sid2)
    assert raw.retries_taken == 1 and raw.parse().choices[0].message.content == "served"
    assert summary["replayed"] == 1 and summary["faults"] == 1


def test_latency_holds_the_head_past_a_client_timeout_then_serves_the_recording(fixtures_dir: Path) -> None:
    path = chat_fixture(fixtures_dir)
    with Engine(clean_env()) as engine:
        sid, env = engine.open_session([path], faults=["latency=5000"])
        with pytest.raises(openai.APITimeoutError):
            openai_client(env, max_retries=0, timeout=0.5).chat.completions.create(**chat_request())
        engine.close_session(sid)
        sid, env = engine.open_session([path], faults=["latency=50"])
        reply = openai_client(env, max_retries=0).chat.completions.create(**chat_request())
        summary = engine.close_session(sid)
    assert reply.choices[0].message.content == "served"
    assert summary["replayed"] == 1 and summary["fault_list"][0]["kind"] == "latency"


def test_pace_keeps_a_stream_going_while_a_whole_other_call_is_answered() -> None:
    """What the client sees: the paced stream's first event, then a whole unpaced stream on another
    session, start to end, and only then the rest of the paced one (unpaced, it would all be there)."""
    with Engine(clean_env()) as engine:
        sid, env = engine.open_session([STREAM], faults=["pace=300"])
        other, other_env = engine.open_session([STREAM])
        with paced(env["OPENAI_BASE_URL"] + "/chat/completions") as (sock, first):
            whole = httpx.post(other_env["OPENAI_BASE_URL"] + "/chat/completions", json=STREAM_REQUEST).text
            meanwhile = available(sock)
            rest = meanwhile + until_closed(sock)
        summary = engine.close_session(sid)
        engine.close_session(other)
    assert first.count(b"data: ") == 1 and whole.endswith("data: [DONE]\n\n")
    assert b"[DONE]" not in meanwhile
    assert rest.endswith(b"data: [DONE]\n\n\r\n0\r\n\r\n") and summary["faults"] == 1


@contextmanager
def paced(url: str) -> Iterator[tuple[socket.socket, bytes]]:
    """A raw connection that posted the stream request, and the body's bytes up to its first event."""
    where = urlsplit(url)
    body = json.dumps(STREAM_REQUEST).encode()
    head = (
        f"POST {where.path} HTTP/1.1\r\nHost: {where.netloc}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    ).encode()
    with socket.create_connection((where.hostname, where.port)) as sock:
        sock.sendall(head + body)
        received = b""
        while b"data: " not in received.partition(b"\r\n\r\n")[2] or not received.endswith(b"\n\n\r\n"):
            received += sock.recv(65536)
        yield sock, received.partition(b"\r\n\r\n")[2]


def available(sock: socket.socket) -> bytes:
    """What has arrived on `sock` by now, without waiting for more."""
    sock.setblocking(False)
    received = b""
    try:
        while chunk := sock.recv(65536):
            received += chunk
    except BlockingIOError:
        pass
    finally:
        sock.setblocking(True)
    return received


def until_closed(sock: socket.socket) -> bytes:
    received = b""
    while chunk := sock.recv(65536):
        received += chunk
    return received
