"""A call a runner sends on its control link instead of over HTTP (`{"call": ...}`, what the Vitest
helper's lane sends for its process's fetch): the engine answers the hit its HTTP fast path would
serve, the same head and bytes, one chunk per recorded event, counted; anything else is answered
"not here" with nothing taken, and the same call over HTTP is then diagnosed as always."""

from __future__ import annotations

import base64
import json
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import requests
from attest_toolkit.replay.runner import ControlPipe
from attest_toolkit.replay.server import Engine
from conftest import chat_request, chat_response, clean_env, exchange, sse_exchange, write_fixture

WORDS = ["one", "two", "three"]


class Link:
    """The runner's end of a control link to an in-process engine (a socket both ways, as claimed)."""

    def __init__(self, engine: Engine, sock: socket.socket) -> None:
        self.engine, self.sock, self.lines = engine, sock, sock.makefile("rb")

    def send(self, *messages: dict) -> None:
        self.sock.sendall(b"".join((json.dumps(m) + "\n").encode() for m in messages))

    def answer(self) -> dict:
        return json.loads(self.lines.readline())

    def ask(self, message: dict) -> dict:
        self.send(message)
        return self.answer()

    def open(self, fixture: Path) -> tuple[str, str]:
        opened = self.ask({"open": {"fixtures": [str(fixture)], "mode": "strict"}})
        return opened["id"], opened["env"]["OPENAI_BASE_URL"]


@contextmanager
def linked() -> Iterator[Link]:
    ours, theirs = socket.socketpair()
    with Engine(clean_env()) as engine:
        pipe = ControlPipe(engine.app, theirs.fileno(), theirs.fileno())
        serving = threading.Thread(target=pipe.run, args=(engine.server,))
        serving.start()
        try:
            yield Link(engine, ours)
        finally:
            ours.sendall(b"stop\n")
            serving.join(timeout=30)
            ours.close()
            theirs.close()


def call(sid: str, body: dict | bytes, **extra: object) -> dict:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    return {
        "call": {
            "method": "POST",
            "target": f"/r/{sid}/openai/v1/chat/completions",
            "body": base64.b64encode(raw).decode(),
            "content_type": "application/json",
            "content_encoding": None,
            **extra,
        }
    }


def body_of(hit: dict) -> bytes:
    return b"".join(base64.b64decode(chunk) for chunk in hit["chunks"])


def test_a_call_on_the_link_gets_the_head_and_bytes_http_gets_and_is_counted(fixtures_dir: Path) -> None:
    path = write_fixture(fixtures_dir, "t", [exchange(chat_request(), chat_response("served"))])
    with linked() as link:
        sid, _ = link.open(path)
        hit = link.ask(call(sid, chat_request()))["hit"]
        other, base = link.open(path)
        over_http = requests.post(f"{base}/chat/completions", json=chat_request(), timeout=30)
        status_line, *header_lines = hit["head"].split("\r\n")
        assert status_line == "HTTP/1.1 200 OK" == f"HTTP/1.1 {over_http.status_code} {over_http.reason}"
        headers = dict(line.split(": ", 1) for line in header_lines)
        assert headers["content-type"] == over_http.headers["content-type"] == "application/json"
        assert body_of(hit) == over_http.content
        assert json.loads(body_of(hit))["choices"][0]["message"]["content"] == "served"
        summary = link.ask({"close": sid})["summary"]
        assert (summary["replayed"], summary["misses"]) == (1, 0)
        assert link.ask({"close": other})["summary"]["replayed"] == 1


def test_a_stream_is_one_chunk_per_recorded_event(fixtures_dir: Path) -> None:
    request = chat_request(stream=True)
    events = [f"data: {json.dumps({'choices': [{'delta': {'content': w}}]})}\n\n" for w in WORDS]
    path = write_fixture(fixtures_dir, "s", [sse_exchange(request, [*events, "data: [DONE]\n\n"])])
    with linked() as link:
        sid, _ = link.open(path)
        hit = link.ask(call(sid, request))["hit"]
        chunks = [base64.b64decode(chunk).decode() for chunk in hit["chunks"]]
        assert chunks == [*events, "data: [DONE]\n\n"]
        assert "Transfer-Encoding: chunked" in hit["head"].split("\r\n")


def test_what_the_fast_path_would_not_serve_is_not_here_and_takes_nothing(fixtures_dir: Path) -> None:
    path = write_fixture(fixtures_dir, "t", [exchange(chat_request(), chat_response("served"))])
    with linked() as link:
        sid, base = link.open(path)
        changed = chat_request(temperature=0.5)
        assert link.ask(call(sid, changed)) == {"hit": None}  # a miss: HTTP diagnoses it
        assert link.ask(call(sid, chat_request(), method="TRACE")) == {"hit": None}
        assert link.ask(call("0" * 16, chat_request())) == {"hit": None}  # no such session
        assert link.ask(call(sid, chat_request(), target="/v1/chat/completions")) == {"hit": None}
        bad = call(sid, chat_request())
        bad["call"]["body"] = "not base64!"
        refused = link.ask(bad)
        assert refused["exit_code"] == 3 and refused["error"].startswith("not a control request")
        # Nothing was taken or counted: over HTTP the changed call is the miss it always was, against
        # the recording still there, which then answers the call it was made for.
        missed = requests.post(f"{base}/chat/completions", json=changed, timeout=30)
        assert (
            missed.status_code == 400
            and "params changed: temperature added" in missed.json()["error"]["message"]
        )
        assert link.ask(call(sid, chat_request()))["hit"] is not None
        summary = link.ask({"close": sid})["summary"]
        assert (summary["replayed"], summary["misses"]) == (1, 1)


def test_answers_keep_the_order_asked_when_a_call_names_a_session_not_open(fixtures_dir: Path) -> None:
    """A call naming a session the engine does not know reads the link for an open sent before it;
    the lines after it must not be answered first. Both lines are longer than half of one read (64 KiB),
    so the first call is answered while the second is still arriving."""
    path = write_fixture(fixtures_dir, "t", [exchange(chat_request(), chat_response("served"))])
    pad = "x" * 40_000
    with linked() as link:
        sid, _ = link.open(path)
        link.send({**call("0" * 16, chat_request()), "pad": pad}, {**call(sid, chat_request()), "pad": pad})
        assert link.answer() == {"hit": None}
        assert link.answer()["hit"] is not None


def test_a_runner_that_holds_the_hit_table_answers_itself_and_the_engine_takes_turns_with_it(
    fixtures_dir: Path,
) -> None:
    """What the Vitest helper's worker does once it knows a call's key: it answers from the session's
    hit table and says so in a line the engine does not answer (`took`); a call that reaches the engine
    over HTTP meanwhile gets the next recording, and the worker is told (`taken`) before its answer."""
    answers = [f"answer {n}" for n in range(3)]
    path = write_fixture(fixtures_dir, "t", [exchange(chat_request(), chat_response(a)) for a in answers])
    with linked() as link:
        opened = link.ask({"open": {"fixtures": [str(path)], "mode": "strict", "lane": {}}})
        sid, base, table = opened["id"], opened["env"]["OPENAI_BASE_URL"], opened["table"]
        assert table["keys"] == [table["keys"][0]] * 3 and len(table["heads"]) == 3
        link.send({"took": [sid, 0, table["token"]]})
        over_http = requests.post(base + "/chat/completions", json=chat_request(), timeout=30)
        assert over_http.json()["choices"][0]["message"]["content"] == "answer 1"
        assert link.answer() == {"taken": [sid, 1]}
        summary = link.ask({"close": sid, "answered": 1})["summary"]
        assert (summary["replayed"], summary["unused"], summary["misses"]) == (2, 1, 0)

        again = link.ask(
            {"open": {"fixtures": [str(path)], "mode": "strict", "lane": {"have": table["token"]}}}
        )
        assert again["table"] == {"token": table["token"]}  # the runner holds it: named, not sent again
        link.send({"took": [again["id"], 0, "another load"]})  # a table of another load of the fixture
        refused = link.ask({"close": again["id"], "answered": 1})
        assert refused["error"].startswith("the replay engine counted 0 of the 1 calls")
