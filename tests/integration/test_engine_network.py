"""The engine as a network citizen: request bodies forwarded as sent, clients that leave mid-stream,
bodies over the size limit, connections that never send a request."""

from __future__ import annotations

import gzip
import json
import logging
import socket
from pathlib import Path

import h11
import pytest
import requests
from attest_toolkit.replay.server import Engine
from conftest import chat_request, chat_response, clean_env, exchange, sse_exchange, write_fixture
from upstream import FakeUpstream, Reply

KEY = "sk-test-" + "n" * 40
MAX_REQUEST_BYTES = 64 * 1024 * 1024  # the documented limit


def post(url: str, body: bytes, **headers: str) -> requests.Response:
    return requests.post(url, data=body, headers={"content-type": "application/json", **headers}, timeout=60)


def test_a_gzip_request_body_is_forwarded_as_sent(fixtures_dir: Path) -> None:
    path = write_fixture(fixtures_dir, "t", [exchange(chat_request(), chat_response())])
    sent = json.dumps(chat_request("not recorded")).encode()
    live = Reply(body=json.dumps(chat_response("live")).encode())
    with (
        FakeUpstream([live]) as upstream,
        Engine(clean_env(OPENAI_API_KEY=KEY, ATTEST_OPENAI_UPSTREAM=upstream.url)) as engine,
    ):
        sid, env = engine.open_session([path], "auto")
        url = env["OPENAI_BASE_URL"] + "/chat/completions"
        answer = post(url, gzip.compress(sent), authorization=f"Bearer {KEY}", **{"content-encoding": "gzip"})
        engine.close_session(sid)
    assert answer.status_code == 200 and answer.json()["choices"][0]["message"]["content"] == "live"
    (seen,) = upstream.requests  # the upstream decoded the gzip it was sent, labelled as such
    assert seen.headers["Content-Encoding"] == "gzip" and seen.body == sent


def test_a_gzip_request_body_matches_its_recording(fixtures_dir: Path) -> None:
    path = write_fixture(fixtures_dir, "t", [exchange(chat_request(), chat_response("recorded"))])
    with Engine(clean_env()) as engine:
        sid, env = engine.open_session([path], "strict")
        body = gzip.compress(json.dumps(chat_request()).encode())
        answer = post(env["OPENAI_BASE_URL"] + "/chat/completions", body, **{"content-encoding": "gzip"})
        summary = engine.close_session(sid)
    assert answer.json()["choices"][0]["message"]["content"] == "recorded"
    assert summary["replayed"] == 1 and summary["misses"] == 0


def test_a_client_that_leaves_mid_stream_is_not_an_error(
    fixtures_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    request = chat_request(stream=True)
    events = [f"data: {json.dumps({'n': i, 'pad': 'x' * 2000})}\n\n" for i in range(3000)]  # ~6 MB
    path = write_fixture(fixtures_dir, "t", [sse_exchange(request, events)])
    caplog.set_level(logging.DEBUG, logger="aiohttp")
    with Engine(clean_env()) as engine:
        sid, env = engine.open_session([path], "strict")
        base = env["OPENAI_BASE_URL"].removeprefix("http://")
        host_port, prefix = base.split("/", 1)
        host, port = host_port.split(":")
        body = json.dumps(request).encode()
        with socket.create_connection((host, int(port)), timeout=30) as sock:
            head = f"POST /{prefix}/chat/completions HTTP/1.1\r\nHost: {host_port}\r\nContent-Length: {len(body)}\r\n"
            sock.sendall(head.encode() + b"Content-Type: application/json\r\n\r\n" + body)
            assert sock.recv(4096).startswith(b"HTTP/1.1 200")  # the stream started; now the client leaves
        summary = engine.close_session(sid)
    # Stopping the engine waited for the handler: it ended without an error trace.
    assert summary["replayed"] == 1
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []


def test_a_request_over_the_size_limit_is_a_miss_that_says_so(fixtures_dir: Path) -> None:
    path = write_fixture(fixtures_dir, "t", [exchange(chat_request(), chat_response())])
    with Engine(clean_env()) as engine:
        sid, env = engine.open_session([path], "strict")
        answer = post(env["OPENAI_BASE_URL"] + "/chat/completions", b"x" * (MAX_REQUEST_BYTES + 1))
        summary = engine.close_session(sid)
    message = "replay miss: the request body is larger than the engine's 64 MiB limit, so it cannot match a recording"
    assert answer.status_code == 400 and answer.json()["error"]["message"] == message
    assert [m["message"] for m in summary["miss_list"]] == [message]


def test_a_connection_that_sends_no_complete_request_is_dropped(fixtures_dir: Path) -> None:
    path = write_fixture(fixtures_dir, "t", [exchange(chat_request(), chat_response("recorded"))])
    with Engine(clean_env(), request_timeout=0.5) as engine:
        _, env = engine.open_session([path], "strict")
        host, port = env["OPENAI_BASE_URL"].removeprefix("http://").split("/", 1)[0].split(":")
        with socket.create_connection((host, int(port)), timeout=30) as idle:
            idle.sendall(b"POST /r/x/openai/v1/chat/completions HTTP/1.1\r\nHost: x\r\n")  # and nothing more
            assert idle.recv(1024) == b""  # the engine closed it
        # A client that sends its request in time is still served.
        answer = post(env["OPENAI_BASE_URL"] + "/chat/completions", json.dumps(chat_request()).encode())
    assert answer.json()["choices"][0]["message"]["content"] == "recorded"


def _host_port(base_url: str) -> tuple[str, int]:
    host, port = base_url.removeprefix("http://").split("/", 1)[0].split(":")
    return host, int(port)


def _request(path: str, body: bytes) -> h11.Request:
    headers = [
        ("host", "127.0.0.1"),
        ("content-type", "application/json"),
        ("content-length", str(len(body))),
    ]
    return h11.Request(method="POST", target=path, headers=headers)


def _exchange(sock: socket.socket, conn: h11.Connection, path: str, body: bytes) -> tuple[int, list[bytes]]:
    """One request on a kept-alive connection; the status and the body as the chunks that came."""
    sock.sendall(
        conn.send(_request(path, body)) + conn.send(h11.Data(data=body)) + conn.send(h11.EndOfMessage())
    )
    status, chunks = 0, []
    while True:
        event = conn.next_event()
        if event is h11.NEED_DATA:
            conn.receive_data(sock.recv(1 << 16))
        elif isinstance(event, h11.Response):
            status = event.status_code
        elif isinstance(event, h11.Data):
            chunks.append(bytes(event.data))
        elif isinstance(event, h11.EndOfMessage):
            conn.start_next_cycle()
            return status, chunks


def test_one_connection_serves_hits_misses_and_streams_in_turn(fixtures_dir: Path) -> None:
    events = [f"data: {json.dumps({'n': i})}\n\n" for i in range(5)] + ["data: [DONE]\n\n"]
    path = write_fixture(
        fixtures_dir,
        "t",
        [
            exchange(chat_request("first"), chat_response("one")),
            sse_exchange(chat_request("streamed", stream=True), events),
            exchange(chat_request("first"), chat_response("two")),
        ],
    )
    with Engine(clean_env()) as engine:
        sid, env = engine.open_session([path], "strict")
        target = env["OPENAI_BASE_URL"].split("/", 3)[3]
        url = f"/{target}/chat/completions"
        conn = h11.Connection(h11.CLIENT)
        with socket.create_connection(_host_port(env["OPENAI_BASE_URL"]), timeout=30) as sock:
            first = _exchange(sock, conn, url, json.dumps(chat_request("first")).encode())
            missed = _exchange(sock, conn, url, json.dumps(chat_request("never recorded")).encode())
            streamed = _exchange(sock, conn, url, json.dumps(chat_request("streamed", stream=True)).encode())
            again = _exchange(sock, conn, url, json.dumps(chat_request("first")).encode())
        summary = engine.close_session(sid)
    assert first[0] == 200 and json.loads(b"".join(first[1]))["choices"][0]["message"]["content"] == "one"
    assert missed[0] == 400 and b"replay miss" in b"".join(missed[1])
    assert streamed == (200, [e.encode() for e in events])  # each recorded event its own chunk
    assert again[0] == 200 and json.loads(b"".join(again[1]))["choices"][0]["message"]["content"] == "two"
    assert (summary["replayed"], summary["misses"]) == (3, 1)


def test_pipelined_requests_are_answered_in_order(fixtures_dir: Path) -> None:
    path = write_fixture(
        fixtures_dir,
        "t",
        [exchange(chat_request(q), chat_response(a)) for q, a in (("a", "first"), ("b", "second"))],
    )
    with Engine(clean_env()) as engine:
        sid, env = engine.open_session([path], "strict")
        url = "/" + env["OPENAI_BASE_URL"].split("/", 3)[3] + "/chat/completions"
        bodies = [json.dumps(chat_request(question)).encode() for question in ("a", "b")]
        # h11 takes one request per cycle: a connection state for each request, sent in one write.
        states = [h11.Connection(h11.CLIENT) for _ in bodies]
        wire = b"".join(
            c.send(_request(url, body)) + c.send(h11.Data(data=body)) + c.send(h11.EndOfMessage())
            for c, body in zip(states, bodies, strict=True)
        )
        answers: list[str] = []
        with socket.create_connection(_host_port(env["OPENAI_BASE_URL"]), timeout=30) as sock:
            sock.sendall(wire)  # both requests before any answer
            leftover = b""
            for state in states:
                if leftover:  # (no bytes would tell h11 the connection closed)
                    state.receive_data(leftover)
                body = b""
                while (event := state.next_event()) is not h11.PAUSED and not isinstance(
                    event, h11.EndOfMessage
                ):
                    if event is h11.NEED_DATA:
                        state.receive_data(sock.recv(1 << 16))
                    elif isinstance(event, h11.Data):
                        body += bytes(event.data)
                answers.append(json.loads(body)["choices"][0]["message"]["content"])
                leftover = state.trailing_data[0]
        summary = engine.close_session(sid)
    assert answers == ["first", "second"] and summary["replayed"] == 2
