"""Plain HTTP a test sends from its own process (not a model call): recorded by pytest-recording,
imported with `attest fixture import --tree`, served from the fixture with the server gone, and
refused with one line in strict replay when it was not recorded. Real pytest runs of a project whose
tests fetch a URL with requests, urllib3, aiohttp and httpx from a server on loopback (named
`files.example`, resolved to loopback by the project's conftest: attest leaves loopback addresses
alone, as they are its own engine's and the test's local servers)."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml
from attest_toolkit.fixtures import document as fx
from conftest import chat_response, clean_env, scrub
from upstream import FakeUpstream, Reply

SECRET = "plainsecretvalue" + "q" * 24

CONFTEST = """
import socket

_real = socket.getaddrinfo

def getaddrinfo(host, *args, **kwargs):
    named = host in ("files.example", b"files.example")  # anyio asks with bytes
    return _real("127.0.0.1" if named else host, *args, **kwargs)

socket.getaddrinfo = getaddrinfo
"""

TESTS = """
import asyncio
import os
import urllib.request

import aiohttp
import httpx
import pytest
import requests
import urllib3
from blockbuster import blockbuster_ctx

BASE = f"http://files.example:{os.environ['FILES_PORT']}"
QUERY = "?size=2&api_key=" + os.environ["FILES_KEY"]  # a credential parameter: never stored, never shown

@pytest.mark.vcr
def test_requests():
    assert requests.get(BASE + "/requests.png" + QUERY).content == b"PNG /requests.png"

@pytest.mark.vcr
def test_urllib3():
    assert urllib3.PoolManager().request("GET", BASE + "/urllib3.png" + QUERY).data == b"PNG /urllib3.png"

@pytest.mark.vcr
def test_httpx():
    assert httpx.get(BASE + "/httpx.png" + QUERY).content == b"PNG /httpx.png"

@pytest.mark.vcr
def test_httpx_async():
    async def fetch():
        async with httpx.AsyncClient() as client:
            with blockbuster_ctx(["attest_toolkit"]):  # nothing of attest's may block the loop
                return (await client.get(BASE + "/httpx-async.png" + QUERY)).content
    assert asyncio.run(fetch()) == b"PNG /httpx-async.png"

@pytest.mark.vcr
def test_urllib():
    with urllib.request.urlopen(BASE + "/urllib.png" + QUERY) as response:
        assert response.read() == b"PNG /urllib.png"

@pytest.mark.vcr
def test_aiohttp():
    async def fetch():
        async with aiohttp.ClientSession() as session:
            with blockbuster_ctx(["attest_toolkit"]):
                async with session.get(BASE + "/aiohttp.png" + QUERY) as response:
                    assert response.status == 200 and response.headers["content-type"] == "image/png"
                    return await response.read()
    assert asyncio.run(fetch()) == b"PNG /aiohttp.png"
"""

NEVER_RECORDED = """
import asyncio
import os
import urllib.request

import aiohttp
import httpx
import requests

HOOK = f"http://files.example:{os.environ['FILES_PORT']}/hooks/done?token=abc123"

def test_webhook(attest_replay):
    with attest_replay("hook"):
        requests.post(HOOK, json={})

def test_webhook_httpx(attest_replay):
    with attest_replay("hook"):
        httpx.post(HOOK, json={})

def test_webhook_urllib(attest_replay):
    with attest_replay("hook"):
        urllib.request.urlopen(urllib.request.Request(HOOK, data=b"{}"))

def test_webhook_aiohttp(attest_replay):
    async def post():
        async with aiohttp.ClientSession() as session:
            async with session.post(HOOK, json={}) as response:
                return response.status

    with attest_replay("hook"):
        asyncio.run(post())
"""

CLIENTS = ("requests", "urllib3", "urllib", "httpx", "httpx_async", "aiohttp")


class Files(BaseHTTPRequestHandler):
    def _answer(self) -> None:
        body = b"PNG " + self.path.split("?")[0].encode()
        self.send_response(200)
        self.send_header("Content-Type", "image/png")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _answer

    def log_message(self, *args: object) -> None:
        """Quiet."""


@contextmanager
def serving(handler: type[BaseHTTPRequestHandler]) -> Iterator[ThreadingHTTPServer]:
    """A server on loopback, in a thread, with `hits` for a handler that counts."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.hits = []  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    stopped(server)


def stopped(server: ThreadingHTTPServer) -> None:
    """Nothing listens at the server's port now: a call that left the process would fail."""
    server.shutdown()
    server.server_close()


@pytest.fixture
def files() -> Iterator[ThreadingHTTPServer]:
    with serving(Files) as server:
        yield server


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, files: ThreadingHTTPServer) -> Path:
    scrub(monkeypatch)
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setenv("FILES_PORT", str(files.server_address[1]))
    monkeypatch.setenv("FILES_KEY", SECRET)
    pytester.makeconftest(CONFTEST)
    (pytester.path / "tests").mkdir()
    pytester.makepyfile(**{"tests/test_fetch": TESTS})
    return pytester.path


def attest_cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "attest_toolkit.cli", *args]
    return subprocess.run(argv, cwd=cwd, env=clean_env(), capture_output=True, text=True, timeout=300)


def test_plain_http_recorded_by_vcrpy_is_served_from_the_fixture_with_the_server_gone(
    project: Path, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, files: ThreadingHTTPServer
) -> None:
    recorded = pytester.runpytest_subprocess("--record-mode=once")  # pytest-recording, as the suite ships
    recorded.assert_outcomes(passed=len(CLIENTS))
    imported = attest_cli(project, "fixture", "import", "--tree", "tests")
    assert imported.returncode == 0, imported.stderr
    assert (
        "imported  tests/cassettes/test_fetch/test_aiohttp.yaml → tests.test_fetch.test_aiohttp "
        in imported.stdout
    )
    assert "not a model provider, kept as plain HTTP: files.example (1)" in imported.stdout
    stored = fx.read_fixture(project / "tests/attest/fixtures/tests.test_fetch.test_requests.attest.json")
    item = fx.plain_interactions(stored)[0]
    assert item["url"] == f"http://files.example:{files.server_address[1]}/requests.png?size=2"
    assert (item["response"]["body"], item["response"]["headers"]) == (
        {"text": "PNG /requests.png"},
        {"content-type": "image/png"},
    )
    assert SECRET not in "".join(p.read_text() for p in (project / "tests/attest/fixtures").iterdir())

    stopped(files)
    monkeypatch.setenv("CI", "1")
    replayed = pytester.runpytest_subprocess("-p", "no:recording")
    replayed.assert_outcomes(passed=len(CLIENTS))


def with_hook_test(project: Path, pytester: pytest.Pytester) -> None:
    """A test that calls a webhook inside a replay of a fixture that recorded nothing."""
    pytester.makepyfile(test_hook=NEVER_RECORDED)
    fixtures = project / "tests/attest/fixtures"
    fixtures.mkdir(parents=True)
    fx.write_fixture(fixtures / f"hook{fx.SUFFIX}", fx.new_fixture("hook", fx.new_source([]), []))


def test_plain_http_not_recorded_is_refused_in_strict_replay_with_one_line(
    project: Path, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    with_hook_test(project, pytester)
    monkeypatch.setenv("CI", "1")
    result = pytester.runpytest_subprocess("-p", "no:recording", "test_hook.py")
    result.assert_outcomes(failed=4)
    for test in ("test_webhook", "test_webhook_httpx", "test_webhook_urllib", "test_webhook_aiohttp"):
        line = (
            "attest replay: plain HTTP POST files.example/hooks/done is not in the fixture; strict replay "
            f"refuses it (re-record with `pytest --attest-record=all test_hook.py::{test}`, or allow it with "
            "--attest-replay=auto)"
        )
        assert f"FAILED test_hook.py::{test} - {line}" in result.outlines  # nothing of the query


def test_plain_http_not_recorded_goes_out_in_auto_mode(project: Path, pytester: pytest.Pytester) -> None:
    with_hook_test(project, pytester)
    result = pytester.runpytest_subprocess("-p", "no:recording", "--attest-replay=auto", "test_hook.py")
    result.assert_outcomes(passed=4)


IGNORED = """
import os

import pytest
import requests

@pytest.fixture
def vcr_config():
    return {"ignore_hosts": ["files.example"]}

@pytest.mark.vcr
def test_ignored():
    assert requests.get(f"http://files.example:{os.environ['FILES_PORT']}/live.png").content == b"PNG /live.png"
"""


def test_a_host_the_vcr_config_ignores_is_left_alone_in_strict_replay(
    project: Path, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_ignored=IGNORED)
    monkeypatch.setenv("CI", "1")
    result = pytester.runpytest_subprocess("-p", "no:recording", "test_ignored.py")
    result.assert_outcomes(passed=1)


CHAT_AND_FETCH = """
import os

import openai
import requests

def test_flow(attest_replay):
    with attest_replay("flow"):
        client = openai.OpenAI(max_retries=0)
        reply = client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}])
        assert reply.choices[0].message.content == "Hello!"
        requests.get(f"http://files.example:{os.environ['FILES_PORT']}/cat.png")
        new = client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "bye"}])
        assert new.choices[0].message.content == "Bye!"
"""


def import_flow(project: Path, files: ThreadingHTTPServer) -> None:
    """The fixture `flow`, imported from a cassette: a chat call answered "Hello!", then an image fetch."""
    chat = {
        "request": {
            "method": "POST",
            "uri": "https://api.openai.com/v1/chat/completions",
            "body": json.dumps({"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]}),
            "headers": {},
        },
        "response": {
            "status": {"code": 200, "message": "OK"},
            "headers": {"Content-Type": ["application/json"]},
            "body": {"string": json.dumps(chat_response("Hello!"))},
        },
    }
    image = {
        "request": {
            "method": "GET",
            "uri": f"http://files.example:{files.server_address[1]}/cat.png",
            "body": None,
        },
        "response": {"status": {"code": 200, "message": "OK"}, "headers": {}, "body": {"string": "PNG"}},
    }
    (project / "flow.yaml").write_text(
        yaml.safe_dump({"interactions": [chat, image], "version": 1}), encoding="utf-8"
    )
    assert attest_cli(project, "fixture", "import", "--name", "flow", "flow.yaml").returncode == 0


def test_a_partial_refresh_keeps_the_fixtures_plain_http(
    project: Path, pytester: pytest.Pytester, files: ThreadingHTTPServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--attest-record=new` records a new model call: the recorded plain HTTP stays in the fixture."""
    import_flow(project, files)
    pytester.makepyfile(test_flow=CHAT_AND_FETCH)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-" + "r" * 40)
    with FakeUpstream([Reply(body=json.dumps(chat_response("Bye!")).encode())]) as upstream:
        monkeypatch.setenv("ATTEST_OPENAI_UPSTREAM", upstream.url)
        result = pytester.runpytest_subprocess("-p", "no:recording", "--attest-record=new", "test_flow.py")
        result.assert_outcomes(passed=1)
        assert len(upstream.requests) == 1
    stored = fx.read_fixture(project / f"tests/attest/fixtures/flow{fx.SUFFIX}")
    assert [i["url"] for i in fx.plain_interactions(stored)] == [
        f"http://files.example:{files.server_address[1]}/cat.png"
    ]


DRIFTED_FLOW = """
import os

import openai
import requests

def test_flow(attest_replay):
    with attest_replay("flow"):
        client = openai.OpenAI(max_retries=0)
        reply = client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}], max_tokens=64
        )
        assert reply.choices[0].message.content == "Hello!"
        assert requests.get(f"http://files.example:{os.environ['FILES_PORT']}/cat.png").text == "PNG"
"""


def test_a_rebase_serves_the_fixtures_plain_http_and_rewrites_the_drifted_call(
    project: Path, pytester: pytest.Pytester, files: ThreadingHTTPServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The code now sends max_tokens, and its image fetch has nowhere to go: a rebase serves the fetch
    # from the fixture, rewrites the call, and the strict replay that follows passes.
    import_flow(project, files)
    pytester.makepyfile(test_flow=DRIFTED_FLOW)
    stopped(files)

    rebased = pytester.runpytest_subprocess("-p", "no:recording", "--attest-record=rebase", "test_flow.py")
    rebased.assert_outcomes(passed=1)
    assert "max_tokens" in rebased.stdout.str()

    monkeypatch.setenv("CI", "1")
    pytester.runpytest_subprocess("-p", "no:recording", "test_flow.py").assert_outcomes(passed=1)


# --- recorded by `pytest --attest-record` -----------------------------------------------------------

RECORDED_TESTS = """
import asyncio
import gzip
import json
import os
import urllib.request

import aiohttp
import httpx
import pytest
import requests

BASE = f"http://127.0.0.1:{os.environ['FILES_PORT']}/" + os.environ.get("FILES_NAME", "cat")
QUERY = "?size=2&api_key=" + os.environ["FILES_KEY"]  # a credential parameter: never stored, never shown

def check(status, body, kind):
    assert status == 203, status
    assert json.loads(body) == {"client": kind, "path": BASE.rpartition("/")[2]}

@pytest.mark.vcr
def test_requests():
    response = requests.get(BASE + "-requests" + QUERY, headers={"x-client": "requests"})
    check(response.status_code, response.content, "requests")
    assert response.headers["content-type"] == "application/json"

@pytest.mark.vcr
def test_httpx():
    response = httpx.get(BASE + "-httpx" + QUERY, headers={"x-client": "httpx"})
    check(response.status_code, response.content, "httpx")

@pytest.mark.vcr
def test_aiohttp():
    async def fetch():
        async with aiohttp.ClientSession() as session:
            async with session.get(BASE + "-aiohttp" + QUERY, headers={"x-client": "aiohttp"}) as response:
                return response.status, await response.read()
    check(*asyncio.run(fetch()), "aiohttp")

@pytest.mark.vcr
def test_urllib():
    request = urllib.request.Request(BASE + "-urllib" + QUERY, headers={"x-client": "urllib"})
    with urllib.request.urlopen(request) as response:
        check(response.status, response.read(), "urllib")
"""

RECORDED_CLIENTS = ("requests", "httpx", "aiohttp", "urllib")


class Counted(BaseHTTPRequestHandler):
    """Answers 203 with the client and path it was asked for, gzipped when the client accepts it,
    and counts each request (`server.hits`)."""

    def do_GET(self) -> None:
        path = self.path.split("?")[0].lstrip("/")
        self.server.hits.append(path)  # type: ignore[attr-defined]
        name, _, _client = path.rpartition("-")
        answer = {"client": self.headers["x-client"], "path": name}
        if name == "echo":  # a server that echoes the caller's key in its answer
            answer["key"] = self.path.partition("api_key=")[2]
        body = json.dumps(answer).encode()
        gzipped = "gzip" in (self.headers.get("accept-encoding") or "")
        if gzipped:
            body = gzip.compress(body)
        self.send_response(203)
        self.send_header("Content-Type", "application/json")
        self.send_header("Set-Cookie", "session=never-stored")
        if gzipped:
            self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        """Quiet."""


@pytest.fixture
def counted() -> Iterator[ThreadingHTTPServer]:
    with serving(Counted) as server:
        yield server


@pytest.fixture
def recording_project(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, counted: ThreadingHTTPServer
) -> Path:
    scrub(monkeypatch)
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setenv("FILES_PORT", str(counted.server_address[1]))
    monkeypatch.setenv("FILES_KEY", SECRET)
    (pytester.path / "tests").mkdir()
    pytester.makepyfile(**{"tests/test_fetch": RECORDED_TESTS})
    return pytester.path


def fixture_of(project: Path, test: str) -> Path:
    return project / f"tests/attest/fixtures/tests.test_fetch.{test}{fx.SUFFIX}"


def test_each_clients_plain_http_is_recorded_by_pytest_and_replayed_with_the_server_gone(
    recording_project: Path,
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    counted: ThreadingHTTPServer,
) -> None:
    recorded = pytester.runpytest_subprocess("-p", "no:recording", "--record-mode=once")
    recorded.assert_outcomes(passed=len(RECORDED_CLIENTS))
    assert sorted(counted.hits) == sorted(f"cat-{c}" for c in RECORDED_CLIENTS)  # type: ignore[attr-defined]
    port = counted.server_address[1]
    for client in RECORDED_CLIENTS:
        (item,) = fx.plain_interactions(fx.read_fixture(fixture_of(recording_project, f"test_{client}")))
        assert item == {
            "method": "GET",
            "url": f"http://127.0.0.1:{port}/cat-{client}?size=2",  # the credential parameter dropped
            "response": {
                "status": 203,
                "headers": {"content-type": "application/json"},  # no cookie, no encoding
                "body": {"text": json.dumps({"client": client, "path": "cat"})},  # decoded, readable
            },
        }
    assert SECRET not in "".join(
        p.read_text() for p in (recording_project / "tests/attest/fixtures").iterdir()
    )

    stopped(counted)
    monkeypatch.setenv("CI", "1")
    pytester.runpytest_subprocess("-p", "no:recording").assert_outcomes(passed=len(RECORDED_CLIENTS))

    monkeypatch.setenv("FILES_NAME", "dog")  # the code now fetches another URL: a miss, in one line
    missed = pytester.runpytest_subprocess("-p", "no:recording")
    missed.assert_outcomes(failed=len(RECORDED_CLIENTS))
    for client in RECORDED_CLIENTS:
        node = f"tests/test_fetch.py::test_{client}"
        line = (
            f"attest replay: plain HTTP GET 127.0.0.1/dog-{client} is not in the fixture; strict replay "
            f"refuses it (re-record with `pytest --attest-record=all {node}`, or allow it with "
            "--attest-replay=auto)"
        )
        assert f"FAILED {node} - {line}" in missed.outlines


SEQUENCE = """
import json
import os

import openai
import pytest
import requests

BASE = f"http://127.0.0.1:{os.environ['FILES_PORT']}/"

@pytest.mark.vcr
def test_sequence():
    if os.environ.get("ASK_MODEL"):  # through attest's own listeners, which are never plain HTTP
        reply = openai.OpenAI(max_retries=0).chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}]
        )
        assert reply.choices[0].message.content == "Hello!"
    for name in os.environ["FILES_NAMES"].split(","):
        response = requests.get(BASE + name + "-requests", headers={"x-client": "requests"})
        assert (response.status_code, response.json()["path"]) == (203, name)
"""


def sequence_project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, names: str) -> Path:
    monkeypatch.setenv("FILES_NAMES", names)
    pytester.makepyfile(**{"tests/test_fetch": SEQUENCE})
    return pytester.path / f"tests/attest/fixtures/tests.test_fetch.test_sequence{fx.SUFFIX}"


def urls(path: Path) -> list[str]:
    return [i["url"].rpartition("/")[2] for i in fx.plain_interactions(fx.read_fixture(path))]


def test_record_new_appends_only_the_plain_calls_that_missed_and_all_records_them_again(
    recording_project: Path,
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    counted: ThreadingHTTPServer,
) -> None:
    hits: list[str] = counted.hits  # type: ignore[attr-defined]
    path = sequence_project(pytester, monkeypatch, "a,b")
    pytester.runpytest_subprocess("-p", "no:recording", "--attest-record=once").assert_outcomes(passed=1)
    assert (hits, urls(path)) == (["a-requests", "b-requests"], ["a-requests", "b-requests"])

    monkeypatch.setenv("FILES_NAMES", "a,c,b,b")  # one new URL, and b once more than recorded
    result = pytester.runpytest_subprocess("-p", "no:recording", "--record-mode=new_episodes")
    result.assert_outcomes(passed=1)
    assert hits[2:] == ["c-requests", "b-requests"]  # only what missed reached the server
    assert urls(path) == ["a-requests", "b-requests", "c-requests", "b-requests"]  # kept, then appended

    before = path.read_bytes()
    pytester.runpytest_subprocess("-p", "no:recording", "--attest-record=new").assert_outcomes(passed=1)
    assert len(hits) == 4 and path.read_bytes() == before  # nothing new: the file byte for byte

    monkeypatch.setenv("FILES_NAMES", "c")
    pytester.runpytest_subprocess("-p", "no:recording", "--record-mode=rewrite").assert_outcomes(passed=1)
    assert (hits[4:], urls(path)) == (["c-requests"], ["c-requests"])  # recorded again, the rest gone


def test_attests_own_listeners_are_never_recorded_as_plain_http(
    recording_project: Path,
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    counted: ThreadingHTTPServer,
) -> None:
    # The model call goes to the recording front, which forwards it to an upstream on loopback from its
    # own thread: neither is the test's plain HTTP. In replay (the lane off) the call reaches the engine
    # over loopback HTTP: served as a model call, not refused as plain HTTP.
    path = sequence_project(pytester, monkeypatch, "a")
    monkeypatch.setenv("ASK_MODEL", "1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-" + "r" * 40)
    with FakeUpstream([Reply(body=json.dumps(chat_response("Hello!")).encode())]) as upstream:
        monkeypatch.setenv("ATTEST_OPENAI_UPSTREAM", upstream.url)
        pytester.runpytest_subprocess("-p", "no:recording", "--record-mode=once").assert_outcomes(passed=1)
        assert len(upstream.requests) == 1
    doc = fx.read_fixture(path)
    assert (len(fx.model_interactions(doc)), urls(path)) == (1, ["a-requests"])

    stopped(counted)
    monkeypatch.setenv("CI", "1")
    monkeypatch.setenv("ATTEST_LANE", "off")
    pytester.runpytest_subprocess("-p", "no:recording").assert_outcomes(passed=1)


IGNORING = """
import os

import pytest
import requests

@pytest.fixture
def vcr_config():
    return CONFIG

@pytest.mark.vcr
def test_live():
    response = requests.get(f"http://127.0.0.1:{os.environ['FILES_PORT']}/live-requests", headers={"x-client": "r"})
    assert response.status_code == 203
"""


@pytest.mark.parametrize(
    "config", [{"ignore_localhost": True}, {"ignore_hosts": ["127.0.0.1"]}], ids=["localhost", "hosts"]
)
def test_hosts_the_vcr_config_ignores_are_neither_recorded_nor_replayed(
    recording_project: Path,
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    counted: ThreadingHTTPServer,
    config: dict[str, object],
) -> None:
    pytester.makepyfile(**{"tests/test_fetch": IGNORING.replace("CONFIG", repr(config))})
    pytester.runpytest_subprocess("-p", "no:recording", "--record-mode=once").assert_outcomes(passed=1)
    assert not (recording_project / "tests/attest").exists()  # nothing but ignored HTTP: nothing written
    monkeypatch.setenv("CI", "1")
    pytester.runpytest_subprocess("-p", "no:recording").assert_outcomes(passed=1)  # goes out again
    assert counted.hits == ["live-requests", "live-requests"]  # type: ignore[attr-defined]


ECHO = """
import os

import pytest
import requests

@pytest.mark.vcr
def test_echo():
    url = f"http://127.0.0.1:{os.environ['FILES_PORT']}/echo-requests?api_key={os.environ['FILES_KEY']}"
    assert requests.get(url, headers={"x-client": "requests"}).json()["key"] == os.environ["FILES_KEY"]
"""


def test_a_recorded_answer_keeps_no_secret_of_the_env_file(
    recording_project: Path, pytester: pytest.Pytester
) -> None:
    (recording_project / ".env").write_text(f"WEBHOOK_KEY={SECRET}\n", encoding="utf-8")
    pytester.makepyfile(**{"tests/test_fetch": ECHO})
    pytester.runpytest_subprocess("-p", "no:recording", "--record-mode=once").assert_outcomes(passed=1)
    path = fixture_of(recording_project, "test_echo")
    (item,) = fx.plain_interactions(fx.read_fixture(path))
    assert json.loads(item["response"]["body"]["text"])["key"] == "{{redacted}}"
    assert item["url"].endswith("/echo-requests") and SECRET not in path.read_text()


BLOCK = """
import os

import requests

def test_fetch(attest_replay):
    with attest_replay("fetch"):
        assert requests.get(f"http://files.example:{os.environ['FILES_PORT']}/block.png").content == b"PNG /block.png"
"""


def test_an_attest_replay_block_records_its_plain_http_too(
    project: Path, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, files: ThreadingHTTPServer
) -> None:
    pytester.makepyfile(test_block=BLOCK)
    pytester.runpytest_subprocess(
        "-p", "no:recording", "--attest-record=once", "test_block.py"
    ).assert_outcomes(passed=1)
    path = project / f"tests/attest/fixtures/fetch{fx.SUFFIX}"
    (item,) = fx.plain_interactions(fx.read_fixture(path))  # a fixture of plain HTTP alone
    assert item["response"]["body"] == {"text": "PNG /block.png"}
    stopped(files)
    monkeypatch.setenv("CI", "1")
    pytester.runpytest_subprocess("-p", "no:recording", "test_block.py").assert_outcomes(passed=1)


def test_a_plain_http_miss_is_in_the_report_with_its_component(
    project: Path, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    with_hook_test(project, pytester)
    monkeypatch.setenv("CI", "1")
    result = pytester.runpytest_subprocess(
        "-p", "no:recording", "test_hook.py::test_webhook", "--attest-report=report.json"
    )
    result.assert_outcomes(failed=1)
    report = json.loads((project / "report.json").read_text(encoding="utf-8"))
    miss = report["tests"][0]["replay"]["miss"]
    assert miss["component"] == "plain_http"
    assert miss["message"].startswith("attest replay: plain HTTP POST files.example/hooks/done is not in")
