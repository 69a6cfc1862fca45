"""`attest fixture import|show|verify`: vcrpy cassettes in, readable credential-free fixtures out."""

from __future__ import annotations

import gzip
import json
import stat
import subprocess
import sys
import zlib
from pathlib import Path
from typing import Any

import pytest
import requests
import typer
import vcr
import yaml
from attest_toolkit.cli import run
from attest_toolkit.cli.fixture import register
from attest_toolkit.credentials.scan import REDACTED, Secrets
from attest_toolkit.fixtures import document as fx
from attest_toolkit.fixtures.importer import import_cassettes
from attest_toolkit.replay.server import Engine
from conftest import REAL_CASSETTES, git, needs_shared
from upstream import FakeUpstream, Reply

CASSETTES = REAL_CASSETTES


PLANTED = "sk-proj-" + "Zq8vN3kR7tW2xY5bC9dF1gH4jL6mP0sT"
CHAT_ID = "chatcmpl-" + "Bx7Qz2LmN9pR4sT6vW8yA1cE3gJ5"


def cli(*argv: str | Path) -> int:
    app = typer.Typer()

    @app.callback()
    def root() -> None:
        """attest"""

    register(app)
    return run(app, [str(a) for a in argv])


def interaction(
    body: Any,
    response: Any,
    *,
    uri: str = "https://api.openai.com/v1/chat/completions",
    status: int = 200,
    headers: dict[str, list[str]] | None = None,
) -> dict[str, Any]:
    return {
        "request": {
            "body": body,
            "headers": {"authorization": [f"Bearer {PLANTED}"]},
            "method": "POST",
            "uri": uri,
        },
        "response": {
            "status": {"code": status, "message": "OK"},
            "headers": headers or {"Content-Type": ["application/json"]},
            "body": {"string": response},
        },
    }


def chat_reply(text: str, chat_id: str = CHAT_ID) -> str:
    message = {"role": "assistant", "content": text}
    return json.dumps(
        {
            "id": chat_id,
            "object": "chat.completion",
            "created": 1,
            "model": "gpt-4o-mini",
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        }
    )


def chat_request(*messages: dict[str, Any]) -> str:
    return json.dumps({"model": "gpt-4o-mini", "messages": list(messages)})


def write_cassette(path: Path, *interactions: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump({"interactions": list(interactions), "version": 1}), encoding="utf-8")
    return path


def model(path: Path) -> list[dict[str, Any]]:
    return fx.model_interactions(fx.read_fixture(path, Secrets()))


# --- readable bodies ---------------------------------------------------------------------------------


@pytest.mark.parametrize("encoding", ["gzip", "deflate"])
def test_compressed_binary_bodies_are_stored_as_readable_text(tmp_path: Path, encoding: str) -> None:
    raw = chat_reply("Hello from a compressed body").encode()
    packed = gzip.compress(raw) if encoding == "gzip" else zlib.compress(raw)
    headers = {"Content-Type": ["application/json"], "Content-Encoding": [encoding]}
    cassette = write_cassette(
        tmp_path / "c.yaml",
        interaction(chat_request({"role": "user", "content": "hi"}), packed, headers=headers),
    )
    assert "!!binary" in cassette.read_text()  # what vcrpy writes for a compressed body

    result = import_cassettes([cassette], "gz", tmp_path, secrets=Secrets())

    text = result.path.read_text()
    assert "Hello from a compressed body" in text
    assert '"base64"' not in text
    reply = model(result.path)[0]["response"]
    assert reply["body"]["json"]["choices"][0]["message"]["content"] == "Hello from a compressed body"
    assert "content-encoding" not in reply["headers"]


def test_an_import_keeps_the_cassettes_response_headers_but_cookies_and_keys(tmp_path: Path) -> None:
    headers = {
        "Content-Type": ["application/json"],
        "Content-Length": ["123"],
        "Connection": ["keep-alive"],
        "x-request-id": ["req_63ac5fede8c02f2c750f1f46b39b8bdb"],
        "openai-processing-ms": ["517"],
        "x-ratelimit-remaining-tokens": ["149999981"],
        "Set-Cookie": ["__cf_bm=EFUS91v3yF4QTsz8A1dTW1Pd; path=/; HttpOnly", "_cfuvid=AszuuBQ1hLwW; path=/"],
        "X-Echoed-Key": [f"Bearer {PLANTED}"],
    }
    cassette = write_cassette(
        tmp_path / "c.yaml",
        interaction(chat_request({"role": "user", "content": "hi"}), chat_reply("Hi"), headers=headers),
    )
    result = import_cassettes([cassette], "headers", tmp_path, secrets=Secrets())

    assert model(result.path)[0]["response"]["headers"] == {
        "content-type": "application/json",
        "x-request-id": "req_63ac5fede8c02f2c750f1f46b39b8bdb",  # as the cassette has it, as ids are
        "openai-processing-ms": "517",
        "x-ratelimit-remaining-tokens": "149999981",
    }
    assert PLANTED not in result.path.read_text()


@needs_shared
def test_real_gzip_cassettes_become_json_and_sse_text(tmp_path: Path) -> None:
    chat = import_cassettes([CASSETTES / "openai/chat_tools_chain_nonstream_gzip.yaml"], "chat", tmp_path)
    stream = import_cassettes([CASSETTES / "anthropic/messages_tool_use_stream_gzip.yaml"], "sse", tmp_path)

    final = model(chat.path)[2]["response"]["body"]["json"]
    assert final["choices"][0]["message"]["content"] == "YES"
    events = model(stream.path)[0]["response"]["body"]["sse"]
    assert events[0].startswith("event: message_start\ndata: {")
    assert all(event.endswith("\n\n") for event in events)
    assert '"base64"' not in chat.path.read_text() + stream.path.read_text()


@needs_shared
def test_pydantic_ai_parsed_body_form(tmp_path: Path) -> None:
    result = import_cassettes([CASSETTES / "openai/chat_tools_nonstream_parsed.yaml"], "pai", tmp_path)

    first, second = model(result.path)
    assert first["request"]["json"]["tool_choice"] == "required"
    tool_result = second["request"]["json"]["messages"][-1]
    assert (tool_result["role"], tool_result["content"]) == ("tool", "Mexico")
    # The id the model handed out in reply 1 and echoed back in request 2, both as the cassette has it.
    call_id = first["response"]["body"]["json"]["choices"][0]["message"]["tool_calls"][0]["id"]
    assert call_id == "call_iXFttys57ap0o16JSlC8yhYo"
    assert second["request"]["json"]["messages"][-2]["tool_calls"][0]["id"] == call_id
    assert second["response"]["body"]["json"]["choices"][0]["message"]["tool_calls"][0]["function"][
        "name"
    ] == ("final_result")


def test_folded_yaml_strings_are_read_as_yaml(tmp_path: Path) -> None:
    cassette = tmp_path / "folded.yaml"
    cassette.write_text(
        "interactions:\n"
        "- request:\n"
        '    body: \'{"messages":[{"role":"user","content":"Can the country of Crumpet\n'
        '      have dragons?"}],"model":"gpt-4o-mini"}\'\n'
        "    headers: {}\n"
        "    method: POST\n"
        "    uri: https://api.openai.com/v1/chat/completions\n"
        "  response:\n"
        "    body:\n"
        '      string: "data: {\\"choices\\":[{\\"delta\\":{\\"content\\":\\"YES\\"}}]}\\n\\ndata:\n'
        '        [DONE]\\n\\n"\n'
        "    headers:\n"
        "      Content-Type:\n"
        "      - text/event-stream; charset=utf-8\n"
        "    status:\n"
        "      code: 200\n"
        "      message: OK\n"
        "version: 1\n",
        encoding="utf-8",
    )
    item = model(import_cassettes([cassette], "folded", tmp_path).path)[0]

    assert item["request"]["json"]["messages"][0]["content"] == "Can the country of Crumpet have dragons?"
    assert item["response"]["body"]["sse"] == [
        'data: {"choices":[{"delta":{"content":"YES"}}]}\n\n',
        "data: [DONE]\n\n",
    ]


@needs_shared
def test_mixed_quoted_sse_scalars_round_trip(tmp_path: Path) -> None:
    cassette = CASSETTES / "anthropic/messages_tool_chain_stream.yaml"
    recorded = [i["response"]["body"]["string"] for i in yaml.safe_load(cassette.read_text())["interactions"]]

    stored = model(import_cassettes([cassette], "chain", tmp_path).path)

    for item, text in zip(stored, recorded, strict=True):
        events = item["response"]["body"]["sse"]
        assert len(events) == text.count("\n\n")
        # Byte for byte what the provider sent, ids included.
        assert "".join(events) == text


# --- several cassettes, overwriting -----------------------------------------------------------------


def test_two_cassettes_make_one_fixture_in_order_keeping_the_recorded_ids(tmp_path: Path) -> None:
    first = write_cassette(
        tmp_path / "one.yaml",
        interaction(chat_request({"role": "user", "content": "one"}), chat_reply("first")),
    )
    echoed = chat_request(
        {"role": "user", "content": "two"}, {"role": "assistant", "content": f"see {CHAT_ID}"}
    )
    second = write_cassette(
        tmp_path / "two.yaml", interaction(echoed, chat_reply("second", CHAT_ID[:-4] + "ZZZZ"))
    )

    assert cli("fixture", "import", first, second, "--name", "both", "--fixtures-dir", tmp_path) == 0

    path = fx.fixture_path("both", tmp_path)
    items = model(path)
    assert [i["response"]["body"]["json"]["choices"][0]["message"]["content"] for i in items] == [
        "first",
        "second",
    ]
    assert [i["response"]["body"]["json"]["id"] for i in items] == [CHAT_ID, CHAT_ID[:-4] + "ZZZZ"]
    assert items[1]["request"]["json"]["messages"][1]["content"] == f"see {CHAT_ID}"
    source = fx.read_fixture(path, Secrets())["source"]
    assert source["command"] == []
    # Outside a git repository the cassettes are named from the fixtures directory's parent.
    assert source["imported_from"] == f"{tmp_path.name}/one.yaml, {tmp_path.name}/two.yaml"


def test_the_cassettes_are_named_relative_to_the_repository_never_absolute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = tmp_path / "repo"
    (repo / "cassettes").mkdir(parents=True)
    git(repo, "init", "-q")
    cassette = write_cassette(
        repo / "cassettes" / "chat.yaml",
        interaction(chat_request({"role": "user", "content": "hi"}), chat_reply("a")),
    )
    monkeypatch.chdir(tmp_path)  # imported from elsewhere, into the default place below the repository
    fixtures = repo / "tests" / "attest" / "fixtures"
    assert cli("fixture", "import", cassette, "--name", "chat", "--fixtures-dir", fixtures) == 0
    source = fx.read_fixture(fx.fixture_path("chat", fixtures), Secrets())["source"]
    assert source["imported_from"] == "cassettes/chat.yaml"


def test_cassettes_outside_the_repository_are_named_without_a_path_of_this_machine(tmp_path: Path) -> None:
    # Fixtures outside any repository, cassettes somewhere else again (a download folder): the name
    # stored must mean the same on another machine, so neither an absolute path nor `../../..`.
    (tmp_path / "downloads" / "cassettes").mkdir(parents=True)
    cassette = write_cassette(
        tmp_path / "downloads" / "cassettes" / "chat.yaml",
        interaction(chat_request({"role": "user", "content": "hi"}), chat_reply("a")),
    )
    fixtures = tmp_path / "elsewhere" / "project" / "fixtures"
    assert cli("fixture", "import", cassette, "--name", "chat", "--fixtures-dir", fixtures) == 0
    source = fx.read_fixture(fx.fixture_path("chat", fixtures), Secrets())["source"]
    assert source["imported_from"] == "cassettes/chat.yaml"


def test_refuses_to_overwrite_without_force(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cassette = write_cassette(
        tmp_path / "c.yaml", interaction(chat_request({"role": "user", "content": "a"}), chat_reply("old"))
    )
    assert cli("fixture", "import", cassette, "--name", "n", "--fixtures-dir", tmp_path) == 0
    target = fx.fixture_path("n", tmp_path)
    before = target.read_bytes()
    write_cassette(cassette, interaction(chat_request({"role": "user", "content": "a"}), chat_reply("new")))
    capsys.readouterr()

    assert cli("fixture", "import", cassette, "--name", "n", "--fixtures-dir", tmp_path) == 3
    err = capsys.readouterr().err
    assert err == f"attest: {target}: fixture exists; pass --force to overwrite it\n"
    assert target.read_bytes() == before

    assert cli("fixture", "import", cassette, "--name", "n", "--fixtures-dir", tmp_path, "--force") == 0
    assert model(target)[0]["response"]["body"]["json"]["choices"][0]["message"]["content"] == "new"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600


# --- malformed cassettes ----------------------------------------------------------------------------

GOOD = interaction(chat_request({"role": "user", "content": "x"}), chat_reply("y"))


def without(path: tuple[str, ...]) -> dict[str, Any]:
    doc = json.loads(json.dumps(GOOD))
    node = doc
    for key in path[:-1]:
        node = node[key]
    del node[path[-1]]
    return doc


MALFORMED: dict[str, tuple[str | bytes, str]] = {
    "bad yaml": ("interactions:\n- request: [\n", "not valid YAML (line 3, column 1"),
    "not a cassette": ("- just\n- a list\n", "not a vcrpy cassette (no `interactions` list)"),
    "empty file": ("", "not a vcrpy cassette (no `interactions` list)"),
    "future version": (yaml.safe_dump({"interactions": [], "version": 2}), "cassette format version 2"),
    "no uri": (
        yaml.safe_dump({"interactions": [without(("request", "uri"))]}),
        "interaction 1: request has no `uri`",
    ),
    "no status": (
        yaml.safe_dump({"interactions": [without(("response", "status"))]}),
        "interaction 1: response has no `status`",
    ),
    "text status": (
        yaml.safe_dump(
            {"interactions": [{**GOOD, "response": {**GOOD["response"], "status": {"code": "OK"}}}]}
        ),
        "interaction 1: response `status` `code` is str, not int",
    ),
    "bad gzip": (
        yaml.safe_dump(
            {
                "interactions": [
                    interaction("{}", b"\x1f\x8b\x08garbage\xff", headers={"Content-Encoding": ["gzip"]})
                ]
            }
        ),
        "interaction 1: response body says Content-Encoding: gzip but does not decode",
    ),
    "relative uri": (
        yaml.safe_dump({"interactions": [{**GOOD, "request": {**GOOD["request"], "uri": "/v1/x"}}]}),
        "interaction 1: request `uri` is not an http(s) URL",
    ),
    "binary file": (b"\x89PNG\r\n\x1a\n\x00\xff", "not a text file"),
    "pre-1.0 format": (yaml.safe_dump([GOOD]), "a cassette in vcrpy's pre-1.0 format"),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_cassette_is_one_line_exit_3(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    content, problem = MALFORMED[case]
    cassette = tmp_path / "bad.yaml"
    if isinstance(content, bytes):
        cassette.write_bytes(content)
    else:
        cassette.write_text(content, encoding="utf-8")

    assert cli("fixture", "import", cassette, "--name", "bad", "--fixtures-dir", tmp_path) == 3

    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(f"attest: {cassette}: {problem}")
    assert not fx.fixture_path("bad", tmp_path).exists()


def test_malformed_json_cassette_names_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cassette = tmp_path / "bad.json"
    cassette.write_text('{"interactions": [', encoding="utf-8")
    assert cli("fixture", "import", cassette, "--name", "bad", "--fixtures-dir", tmp_path) == 3
    assert capsys.readouterr().err.startswith(f"attest: {cassette}: not valid JSON (line 1")


def test_second_bad_cassette_writes_nothing(tmp_path: Path) -> None:
    good = write_cassette(tmp_path / "good.yaml", GOOD)
    bad = tmp_path / "missing.yaml"
    assert cli("fixture", "import", good, bad, "--name", "x", "--fixtures-dir", tmp_path) == 3
    assert not fx.fixture_path("x", tmp_path).exists()


# --- credentials ------------------------------------------------------------------------------------


def test_planted_key_is_redacted_not_refused(tmp_path: Path) -> None:
    leaky = chat_request({"role": "user", "content": f"my key is {PLANTED}"})
    reply = json.dumps(
        {
            "id": CHAT_ID,
            "object": "chat.completion",
            "created": 1,
            "model": "m",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": f"got {PLANTED}"},
                    "finish_reason": "stop",
                }
            ],
            "api_key": PLANTED,
        }
    )
    uri = f"https://api.openai.com/v1/chat/completions?api_key={PLANTED}"
    cassette = write_cassette(tmp_path / "leak.yaml", interaction(leaky, reply, uri=uri))
    assert PLANTED in cassette.read_text()

    result = import_cassettes([cassette], "leak", tmp_path, secrets=Secrets())

    text = result.path.read_text()
    assert PLANTED not in text and PLANTED[8:] not in text
    item = model(result.path)[0]
    assert item["request"]["json"]["messages"][0]["content"] == f"my key is {REDACTED}"
    assert item["response"]["body"]["json"]["api_key"] == REDACTED
    assert fx.find_credential(fx.read_fixture(result.path, Secrets()), Secrets()) is None


# --- the other cassette forms -----------------------------------------------------------------------


def record_with_vcrpy(cassette: Path, serializer: str, reply: Reply, request: dict[str, Any]) -> None:
    with FakeUpstream([reply]) as upstream, vcr.use_cassette(str(cassette), serializer=serializer):
        answer = requests.post(f"{upstream.url}/v1/chat/completions", json=request, timeout=10)
        assert answer.status_code == reply.status


def test_a_file_on_a_providers_other_host_is_plain_http_never_a_model_call(tmp_path: Path) -> None:
    """pydantic-ai's audio test fetches https://cdn.openai.com/...: a file, not an OpenAI API call."""
    audio = interaction(None, "RIFF-wav", uri="https://cdn.openai.com/API/docs/audio/alloy.wav?v=1&key=k1")
    audio["request"]["method"] = "GET"
    audio["response"]["headers"] = {"Content-Type": ["audio/wav"]}
    chat = interaction(chat_request({"role": "user", "content": "hi"}), chat_reply("hello"))
    path = import_cassettes([write_cassette(tmp_path / "c.yaml", audio, chat)], "c", tmp_path).path

    doc = fx.read_fixture(path, Secrets())
    assert [(i["provider"], i["path"]) for i in fx.model_interactions(doc)] == [
        ("openai", "/v1/chat/completions")
    ]
    assert fx.plain_interactions(doc) == [
        {
            "method": "GET",
            "url": "https://cdn.openai.com/API/docs/audio/alloy.wav?v=1",  # the credential parameter dropped
            "response": {
                "status": 200,
                "headers": {"content-type": "audio/wav"},
                "body": {"text": "RIFF-wav"},
            },
        }
    ]


@pytest.mark.parametrize("serializer", ["json", "yaml"])
def test_cassettes_vcrpy_writes_import_and_replay(serializer: str, tmp_path: Path) -> None:
    body = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "ping"}]}
    raw = chat_reply("pong").encode()
    # vcrpy's YAML keeps the compressed bytes as !!binary; its JSON serializer can only hold text.
    reply = (
        Reply(
            headers={"content-type": "application/json", "content-encoding": "gzip"}, body=gzip.compress(raw)
        )
        if serializer == "yaml"
        else Reply(body=raw)
    )
    cassette = tmp_path / f"rec.{serializer}"
    record_with_vcrpy(cassette, serializer, reply, body)

    path = import_cassettes([cassette], "rec", tmp_path, secrets=Secrets()).path

    item = model(path)[0]
    assert (item["provider"], item["path"]) == ("openai", "/v1/chat/completions")  # loopback host: by path
    with Engine(env={}, secrets=Secrets()) as engine:
        sid, env = engine.open_session([path], "strict")
        answer = requests.post(f"{env['OPENAI_BASE_URL']}/chat/completions", json=body, timeout=10)
        summary = engine.close_session(sid)
    assert answer.json()["choices"][0]["message"]["content"] == "pong"
    assert (summary["replayed"], summary["misses"]) == (1, 0)


def test_older_httpx_form_status_code_and_content(tmp_path: Path) -> None:
    old = {
        "request": GOOD["request"],
        "response": {
            "status_code": 200,
            "http_version": "HTTP/1.1",
            "content": chat_reply("legacy"),
            "headers": {"content-type": ["application/json"], "content-encoding": ["gzip"]},
        },
    }
    cassette = write_cassette(tmp_path / "old.yaml", old)
    item = model(import_cassettes([cassette], "old", tmp_path, secrets=Secrets()).path)[0]
    assert item["response"]["body"]["json"]["choices"][0]["message"]["content"] == "legacy"


def test_progress_reports_every_interaction(tmp_path: Path) -> None:
    cassette = write_cassette(tmp_path / "c.yaml", GOOD, GOOD, GOOD)
    seen: list[tuple[int, int]] = []
    import_cassettes([cassette], "p", tmp_path, secrets=Secrets(), progress=lambda d, t: seen.append((d, t)))
    assert seen == [(1, 3), (2, 3), (3, 3)]


def test_bad_name_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cassette = write_cassette(tmp_path / "c.yaml", GOOD)
    assert cli("fixture", "import", cassette, "--name", "../escape", "--fixtures-dir", tmp_path) == 3
    assert "fixture name '../escape'" in capsys.readouterr().err
    assert not (tmp_path.parent / "escape.attest.json").exists()


# --- show and verify --------------------------------------------------------------------------------


@needs_shared
def test_show_summarises_each_interaction(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cassette = CASSETTES / "anthropic/messages_parallel_tool_use_nonstream_parsed.yaml"
    import_cassettes([cassette], "parallel", tmp_path)
    capsys.readouterr()

    assert cli("fixture", "show", "parallel", "--fixtures-dir", tmp_path) == 0

    out = capsys.readouterr().out
    shown = next(line for line in out.splitlines() if "imported from" in line).split("imported from ")[1]
    # The cassette lies outside the fixtures' tree: named by its directory and file name alone.
    assert shown == "anthropic/messages_parallel_tool_use_nonstream_parsed.yaml"
    assert "model: 2 interaction(s)" in out
    assert "1. anthropic POST /v1/messages?beta=true  model claude-haiku-4-5" in out
    assert "→ 200 json  tool calls: retrieve_entity_info ×4" in out


def test_show_streams_and_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sse = 'data: {"choices":[{"delta":{"content":"Hel"}}]}\n\ndata: {"choices":[{"delta":{"content":"lo"}}]}\n\n'
    error = json.dumps(
        {"error": {"message": "The model `nope` does not exist", "type": "invalid_request_error"}}
    )
    cassette = write_cassette(
        tmp_path / "c.yaml",
        interaction(chat_request(), sse, headers={"Content-Type": ["text/event-stream"]}),
        interaction(chat_request(), error, status=404),
    )
    path = import_cassettes([cassette], "mixed", tmp_path, secrets=Secrets()).path
    capsys.readouterr()

    assert cli("fixture", "show", path) == 0

    out = capsys.readouterr().out
    assert '→ 200 sse (2 events)  "Hello"' in out
    assert "→ 404 json  error invalid_request_error: The model `nope` does not exist" in out


def test_verify_ok_and_one_line_per_bad_fixture(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cassette = write_cassette(tmp_path / "c.yaml", GOOD)
    good = import_cassettes([cassette], "good", tmp_path, secrets=Secrets()).path
    doc = json.loads(good.read_text())

    edited = tmp_path / "edited.attest.json"  # changed by hand, digest left stale
    doc_edited = json.loads(json.dumps(doc))
    doc_edited["channels"]["model"][0]["response"]["status"] = 500
    edited.write_text(json.dumps(doc_edited))

    stale = tmp_path / "stale.attest.json"  # request changed and digest restamped, hashes left stale
    doc_stale = json.loads(json.dumps(doc))
    doc_stale["channels"]["model"][0]["request"]["json"]["messages"][0]["content"] = "changed"
    doc_stale["digest"] = fx.canonical_digest(doc_stale)
    stale.write_text(json.dumps(doc_stale))

    leaked = tmp_path / "leaked.attest.json"
    doc_leaked = json.loads(json.dumps(doc))
    doc_leaked["channels"]["model"][0]["request"]["json"]["messages"][0]["content"] = PLANTED
    leaked.write_text(json.dumps(doc_leaked))

    reformatted = tmp_path / "reformatted.attest.json"  # content-addressed: a reformat is no change
    reformatted.write_text(json.dumps(doc, indent=4))
    capsys.readouterr()

    assert (
        cli("fixture", "verify", good, edited, stale, leaked, reformatted, tmp_path / "none.attest.json") == 3
    )

    captured = capsys.readouterr()
    assert captured.out.splitlines()[0].startswith(f"ok {good} (1 interaction(s), sha256:")
    assert captured.out.splitlines()[1].startswith(f"ok {reformatted} ")
    assert captured.err.splitlines() == [
        f"attest: {edited}: digest does not match the content (changed since it was written); "
        "if the edit is deliberate, seal it: attest fixture seal edited",
        f"attest: {stale}: interaction 1: stored hashes do not match its request (messages)",
        f"attest: {leaked}: credential found at /channels/model/0/request/json/messages/0/content "
        "(OpenAI-style API key); refusing to read it",
        f"attest: {tmp_path / 'none.attest.json'}: no such fixture; record it with `attest capture`",
    ]
    assert PLANTED not in captured.err


def test_verify_all_good_exits_0(tmp_path: Path) -> None:
    cassette = write_cassette(tmp_path / "c.yaml", GOOD)
    good = import_cassettes([cassette], "good", tmp_path, secrets=Secrets()).path
    assert cli("fixture", "verify", good) == 0


def test_verify_a_directory_verifies_every_fixture_in_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cassette = write_cassette(tmp_path / "c.yaml", GOOD)
    fixtures = tmp_path / "fixtures"
    first = import_cassettes([cassette], "first", fixtures, secrets=Secrets()).path
    second = import_cassettes([cassette], "second", fixtures, secrets=Secrets()).path
    capsys.readouterr()

    assert cli("fixture", "verify", fixtures) == 0
    shown = [line.split(" (")[0] for line in capsys.readouterr().out.splitlines()]
    assert shown == [f"ok {first}", f"ok {second}"]

    empty = tmp_path / "empty"
    empty.mkdir()
    assert cli("fixture", "verify", empty) == 3
    assert capsys.readouterr().err.splitlines() == [
        f"attest: {empty}: no fixtures (*.attest.json) in this directory"
    ]


def test_show_takes_a_fixture_file_name_as_well_as_a_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    cassette = write_cassette(tmp_path / "c.yaml", GOOD)
    path = import_cassettes([cassette], "weather", None, secrets=Secrets()).path  # the default directory
    capsys.readouterr()
    for given in ("weather", "weather.attest.json", str(path)):
        assert cli("fixture", "show", given) == 0, capsys.readouterr().err
        assert capsys.readouterr().out.startswith(f"fixture weather  ({path})")


# aiohttp before 3.14, which has no web.RequestKey (a project whose vcrpy 8.1 holds aiohttp below 3.14).
BEFORE_REQUEST_KEY = (
    "import sys; from aiohttp import web; vars(web).pop('RequestKey', None); "
    "from attest_toolkit.cli import main; sys.argv[0] = 'attest'; main()"
)


def test_the_import_runs_on_an_aiohttp_without_request_keys(tmp_path: Path) -> None:
    cassette = write_cassette(
        tmp_path / "one.yaml",
        interaction(chat_request({"role": "user", "content": "one"}), chat_reply("first")),
    )
    argv = ["fixture", "import", str(cassette), "--name", "one", "--fixtures-dir", str(tmp_path)]
    done = subprocess.run(
        [sys.executable, "-c", BEFORE_REQUEST_KEY, *argv], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert [
        i["response"]["body"]["json"]["choices"][0]["message"]["content"]
        for i in model(fx.fixture_path("one", tmp_path))
    ] == ["first"]
