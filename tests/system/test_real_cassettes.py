"""Every real provider recording in the shared cassettes imports, and replays to the official SDKs.

Each cassette (real-cassettes and real-cassettes-extra) is imported into a fixture, then every recorded
request is rebuilt as an official SDK call (openai / anthropic, sync and async) against a strict replay
session. What the SDK parses must equal what the provider sent, except for ids and timestamps: replay
serves each placeholder as a valid value of the provider's shape, which reads back as the placeholder,
each standing for one recorded value throughout. Recorded errors raise the SDK's own exception class.
"""

from __future__ import annotations

import asyncio
import base64
import email.parser
import email.policy
import gzip
import inspect
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

import anthropic
import openai
import pytest
import requests
import yaml
from attest_toolkit.credentials.scan import Secrets
from attest_toolkit.fixtures import document as fx
from attest_toolkit.fixtures.importer import import_cassettes
from attest_toolkit.normalize import timestamps
from attest_toolkit.normalize.served import restore
from attest_toolkit.replay.index import load
from attest_toolkit.replay.server import Engine
from conftest import REAL_CASSETTES, needs_shared

CASSETTES = REAL_CASSETTES
EXTRA = CASSETTES.parent / "real-cassettes-extra"
FILES = sorted(CASSETTES.glob("*/*.yaml")) + sorted(EXTRA.glob("*/*.yaml"))


def case_id(path: Path) -> str:
    collection = path.parent.parent.name.removeprefix("real-cassettes").lstrip("-") or "base"
    return f"{collection}/{path.parent.name}/{path.stem}"


ASYNC_SUBSET = {
    "base/openai/chat_basic_nonstream",
    "base/openai/chat_tool_call_stream",
    "base/openai/responses_tool_use_stream",
    "base/openai/error_404_chat_model_not_found",
    "base/anthropic/messages_multiturn_nonstream",
    "base/anthropic/messages_tool_use_stream_gzip",
    "base/anthropic/error_404_count_tokens_parsed",
}
ERRORS = {
    "openai": {400: openai.BadRequestError, 404: openai.NotFoundError},
    "anthropic": {400: anthropic.BadRequestError, 404: anthropic.NotFoundError},
}
PLACEHOLDER = re.compile(r'"\{\{epoch_[0-9]+\}\}"|\{\{(?:id|ts|email)_[0-9]+\}\}|\{\{redacted\}\}')
# A templated numeric timestamp: a JSON string in the fixture, a number as served and as recorded.
EPOCH = re.compile(r'"?(\{\{epoch_[0-9]+\}\})"?')
SERVED_EPOCH = re.compile(r'"([a-z_]+)"(\s*:\s*)([0-9]{10})(?![0-9.eE])')

pytestmark = [
    needs_shared,
    # The recordings name models the SDK now flags as deprecated; that is the recording, not a fault.
    pytest.mark.filterwarnings("ignore:The model .* is deprecated:DeprecationWarning"),
]


# --- what the cassette recorded, read independently of the importer --------------------------------


@dataclass(frozen=True)
class Recorded:
    provider: str
    method: str
    path: str
    query: str
    body: Any  # the JSON body, a list of multipart parts, or None
    status: int
    response: bytes
    sse: bool


def _response_bytes(response: dict[str, Any]) -> bytes:
    if "parsed_body" in response:
        return json.dumps(response["parsed_body"]).encode()
    raw = response["body"]["string"]
    raw = raw.encode() if isinstance(raw, str) else raw
    return gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw


def multipart_parts(raw: bytes) -> list[dict[str, Any]]:
    """The parts of a multipart/form-data body, the boundary read from its first line."""
    boundary = raw.split(b"\r\n", 1)[0][2:].decode()
    head = f"Content-Type: multipart/form-data; boundary={boundary}\r\n\r\n".encode()
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(head + raw)
    return [
        {
            "name": part.get_param("name", header="content-disposition"),
            "filename": part.get_filename(),
            "content_type": part.get_content_type() if part.get("content-type") else None,
            "content": part.get_payload(decode=True),
        }
        for part in message.iter_parts()
    ]


def request_body(request: dict[str, Any]) -> Any:
    if "parsed_body" in request:
        return request["parsed_body"]
    raw = request.get("body")
    if not raw:
        return None
    raw = raw.encode() if isinstance(raw, str) else raw
    if raw[:1] not in (b"{", b"[", b"-"):  # crewAI stores a binary upload as base64 text
        raw = base64.b64decode(raw)
    return multipart_parts(raw) if raw.startswith(b"--") else json.loads(raw)


def recorded(path: Path) -> list[Recorded]:
    out = []
    for item in yaml.load(path.read_text(encoding="utf-8"), Loader=yaml.CSafeLoader)["interactions"]:
        request, response = item["request"], item["response"]
        body = request_body(request)
        uri = request["uri"]
        provider = "anthropic" if "anthropic.com" in uri else "openai"
        path_part, _, query = uri.split("://", 1)[1].partition("/")[2].partition("?")
        content_type = next(
            (v[0] for k, v in (response.get("headers") or {}).items() if k.lower() == "content-type"), None
        )
        streamed = isinstance(body, dict) and body.get("stream") is True
        out.append(
            Recorded(
                provider=provider,
                method=request["method"].upper(),
                path="/" + path_part,
                query=query,
                body=body,
                status=response["status"]["code"],
                response=_response_bytes(response),
                # Without headers (ARZ) only the request's `"stream": true` says the answer is SSE.
                sse=content_type.startswith("text/event-stream")
                if content_type
                else streamed and response["status"]["code"] < 400,
            )
        )
    return out


def sse_payloads(raw: bytes) -> list[Any]:
    """The JSON data of each event, as an SDK would see it (`[DONE]` and pings dropped)."""
    payloads = []
    for event in re.split(r"\r?\n\r?\n", raw.decode()):
        data = "\n".join(line[5:].lstrip(" ") for line in event.splitlines() if line.startswith("data:"))
        if not data or data.startswith("[DONE]"):
            continue
        payload = json.loads(data)
        if payload.get("type") != "ping":
            payloads.append(payload)
    return payloads


# --- comparing modulo placeholders ------------------------------------------------------------------


class Placeholders:
    """Checks that a served value equals the recorded one where each placeholder stands for one value."""

    def __init__(self, back: dict[str, str] | None = None) -> None:
        self.meaning: dict[str, str] = {}
        self.back = back or {}  # served value -> placeholder

    def same(self, served: Any, original: Any, where: str = "") -> None:
        if isinstance(served, dict) and isinstance(original, dict):
            assert served.keys() == original.keys(), where
            for key in served:
                self.same(served[key], original[key], f"{where}/{key}")
        elif isinstance(served, list) and isinstance(original, list):
            assert len(served) == len(original), where
            for i, (a, b) in enumerate(zip(served, original, strict=True)):
                self.same(a, b, f"{where}/{i}")
        elif isinstance(served, str) and isinstance(original, str):
            self.same_text(served, original, where)
        elif isinstance(served, str) and type(original) is int and EPOCH.fullmatch(served):
            self.means(served, str(original), where)  # a timestamp, templated
        else:
            assert served == original, where

    def same_text(self, served: str, original: str, where: str = "") -> None:
        marks = PLACEHOLDER.findall(served)
        if not marks:
            assert served == original, where
            return
        literal = PLACEHOLDER.split(served)
        pattern = "".join(
            re.escape(part) + (_stands_for(marks[i]) if i < len(marks) else "")
            for i, part in enumerate(literal)
        )
        match = re.fullmatch(pattern, original, re.DOTALL)
        assert match, f"{where}: {served!r} is not {original!r} with ids templated"
        for mark, value in zip(marks, match.groups(), strict=True):
            if mark == "{{redacted}}":  # a credential (a signed URL's sig): never served, whatever it was
                continue
            self.means(mark, value, where)

    def means(self, mark: str, value: str, where: str) -> None:
        mark = EPOCH.sub(r"\1", mark)
        assert self.meaning.setdefault(mark, value) == value, f"{where}: {mark} stands for two values"


def _stands_for(mark: str) -> str:
    """What a placeholder may stand for in the recording: a timestamp's digits, else any text."""
    return "([0-9]{10})" if mark.startswith('"') else "(.+?)"


def gist(payloads: list[Any]) -> dict[str, Any]:
    """What a user reads from a reply: its text, its tool calls (name and arguments), its usage."""
    text: list[str] = []
    tools: list[Any] = []
    usage: list[Any] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for key, value in sorted(node.items()):
                if key in ("content", "text", "delta", "arguments", "partial_json") and isinstance(
                    value, str
                ):
                    text.append(value)
                elif (key == "name" and isinstance(value, str)) or (
                    key == "input" and isinstance(value, dict)
                ):
                    tools.append(value)
                elif key == "usage" and value:
                    usage.append(value)
                else:
                    walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(payloads)
    return {"text": "".join(text), "tools": tools, "usage": usage}


# --- the SDK calls ----------------------------------------------------------------------------------


def _typed(client: Any, rec: Recorded) -> Any:
    """The SDK method a user calls for this endpoint, or None where the SDK has no typed one (anthropic
    2.x dropped the legacy /v1/complete)."""
    if rec.provider == "anthropic":
        beta = "beta=true" in rec.query
        messages = client.beta.messages if beta else client.messages
        return {
            "/v1/messages": messages.create,
            "/v1/messages/count_tokens": messages.count_tokens,
            "/v1/files": client.beta.files.upload,
        }.get(rec.path)
    if rec.method != "POST" or (rec.path == "/v1/embeddings" and "encoding_format" not in rec.body):
        return None  # today's SDK adds encoding_format=base64 where this recording's client sent none
    return {
        "/v1/chat/completions": client.chat.completions.create,
        "/v1/responses": client.responses.create,
        "/v1/responses/compact": client.responses.compact,
        "/v1/responses/input_tokens": client.responses.input_tokens.count,
        "/v1/embeddings": client.embeddings.create,
        "/v1/completions": client.completions.create,
        "/v1/images/generations": client.images.generate,
        "/v1/files": client.files.create,
    }.get(rec.path)


def _query(rec: Recorded) -> dict[str, str]:
    """The recorded query, but `?beta=true`: anthropic 2.x no longer puts it on the wire, and the match
    ignores it, so today's SDK replays a recording made by an older one."""
    return {k: v for k, v in parse_qsl(rec.query) if k != "beta"}


def arguments(method: Any, rec: Recorded) -> dict[str, Any]:
    """The recorded request as keyword arguments: body keys the SDK method does not name go in
    extra_body; an upload's parts become the file and its fields."""
    if isinstance(rec.body, list):
        kwargs: dict[str, Any] = {}
        for part in rec.body:
            if part["filename"] is not None:
                kwargs[part["name"]] = (part["filename"], part["content"], part["content_type"])
            else:
                kwargs[part["name"]] = part["content"].decode()
        return kwargs
    named = inspect.signature(method).parameters
    body = rec.body or {}
    kwargs = {k: v for k, v in body.items() if k in named}
    extra = {k: v for k, v in body.items() if k not in named}
    if extra:
        kwargs["extra_body"] = extra
    if _query(rec):
        kwargs["extra_query"] = _query(rec)
    return kwargs


def _generic(client: Any, rec: Recorded) -> Any:
    """The SDK's own request method for endpoints without a typed one (assistants, vector stores, ...)."""
    path = rec.path.removeprefix("/v1") if rec.provider == "openai" else rec.path
    options = {"params": _query(rec)} if _query(rec) else {}
    stream_cls = (openai if rec.provider == "openai" else anthropic).Stream[object]
    if rec.method == "GET":
        return client.get(path, cast_to=object, options=options, stream=rec.sse, stream_cls=stream_cls)
    if rec.method == "DELETE":
        return client.delete(path, cast_to=object, options=options)
    return client.post(
        path, cast_to=object, body=rec.body, options=options, stream=rec.sse, stream_cls=stream_cls
    )


def clients(env: dict[str, str], asynchronous: bool) -> dict[str, Any]:
    kinds = (
        (openai.AsyncOpenAI, anthropic.AsyncAnthropic)
        if asynchronous
        else (openai.OpenAI, anthropic.Anthropic)
    )
    return {
        "openai": kinds[0](base_url=env["OPENAI_BASE_URL"], api_key=env["OPENAI_API_KEY"], max_retries=0),
        "anthropic": kinds[1](
            base_url=env["ANTHROPIC_BASE_URL"], api_key=env["ANTHROPIC_API_KEY"], max_retries=0
        ),
    }


def as_dict(parsed: Any) -> Any:
    # A base64 embedding is a str where the model declares list[float]; pydantic would warn on dump.
    if hasattr(parsed, "to_dict"):
        return parsed.to_dict(mode="json", warnings=False)
    if isinstance(parsed, dict) and parsed.keys() == {"event", "data"}:
        return parsed["data"]  # the SDK's generic stream yields assistants events with their name
    return parsed


def served(result: Any, rec: Recorded) -> list[Any]:
    return [as_dict(item) for item in result] if rec.sse else [as_dict(result)]


def call_sync(client: Any, rec: Recorded) -> list[Any]:
    method = _typed(client, rec)
    result = method(**arguments(method, rec)) if method else _generic(client, rec)
    return served(result, rec)


async def call_async(client: Any, rec: Recorded) -> list[Any]:
    method = _typed(client, rec)
    assert method is not None, "the async subset uses typed methods only"
    result = await method(**arguments(method, rec))
    if rec.sse:
        return [as_dict(item) async for item in result]
    return [as_dict(result)]


def epoch_placeholder(key: str, value: Any) -> str | None:
    """The placeholder a served timestamp stands for (`{{epoch_N}}`), if `value` is one (the openai SDK
    parses a response's `created_at` as a float)."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    number = value - timestamps.SERVED_BASE if timestamps.is_timestamp(key, value) else 0
    return f"{{{{epoch_{number}}}}}" if 0 < number < 1_000_000 else None


def unserve_text(text: str, back: dict[str, str]) -> str:
    """Served text (an SSE stream) read back: ids by `restore`, timestamps as quoted placeholders."""

    def swap(m: re.Match[str]) -> str:
        mark = epoch_placeholder(m.group(1), int(m.group(3)))
        return f'"{m.group(1)}"{m.group(2)}"{mark}"' if mark else m.group(0)

    return SERVED_EPOCH.sub(swap, restore(text, back))


def unserve(value: Any, back: dict[str, str]) -> Any:
    """A reply with each served value read back as the placeholder it stands for."""
    if isinstance(value, str):
        return restore(value, back)
    if isinstance(value, dict):
        return {k: epoch_placeholder(k, v) or unserve(v, back) for k, v in value.items()}
    if isinstance(value, list):
        return [unserve(v, back) for v in value]
    return value


def expected(rec: Recorded) -> list[Any]:
    return sse_payloads(rec.response) if rec.sse else [json.loads(rec.response)]


def check_reply(got: list[Any], rec: Recorded, stored: dict, placeholders: Placeholders) -> None:
    original = expected(rec)
    got = unserve(got, placeholders.back)
    assert gist(got) == gist(original)  # text, tool calls and usage exactly as the provider sent them
    placeholders.same(got, original)  # and everything else, ids read as placeholders
    body = stored["response"]["body"]
    assert got == (sse_payloads("".join(body["sse"]).encode()) if rec.sse else [body["json"]])


def check_error(exc: Exception, rec: Recorded, placeholders: Placeholders) -> None:
    assert isinstance(exc, ERRORS[rec.provider][rec.status])
    assert exc.status_code == rec.status
    recorded_error = json.loads(rec.response)
    error = recorded_error.get("error", recorded_error)
    assert error["message"] in exc.message
    placeholders.same(
        unserve(exc.body, placeholders.back), error if rec.provider == "openai" else recorded_error
    )


# --- fixtures ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def engine() -> Any:
    with Engine(env={}, secrets=Secrets()) as running:
        yield running


def imported(cassette: Path, tmp_path: Path) -> tuple[Path, fx.Fixture]:
    result = import_cassettes([cassette], cassette.stem, tmp_path, secrets=Secrets())
    return result.path, fx.read_fixture(result.path, Secrets())


async def replay_calls(
    sdk: dict[str, Any], recs: list[Recorded], doc: fx.Fixture, back: dict[str, str], asynchronous: bool
) -> None:
    placeholders = Placeholders(back)
    for rec, stored in zip(recs, fx.model_interactions(doc), strict=True):
        client = sdk[rec.provider]
        try:
            got = await call_async(client, rec) if asynchronous else call_sync(client, rec)
        except (openai.APIStatusError, anthropic.APIStatusError) as exc:
            assert rec.status >= 400, f"the SDK raised {exc!r} for a recorded {rec.status}"
            check_error(exc, rec, placeholders)
        else:
            assert rec.status < 400, f"the SDK did not raise for a recorded {rec.status}"
            check_reply(got, rec, stored, placeholders)


def replay_all(engine: Engine, fixture_path: Path, cassette: Path, asynchronous: bool) -> tuple[dict, int]:
    """Replay every recorded call of `cassette` with the official SDK from the fixture imported from it;
    the session summary and the call count."""
    doc = fx.read_fixture(fixture_path, Secrets())
    recs = recorded(cassette)
    sid, env = engine.open_session([fixture_path], "strict")
    try:
        back = load(fixture_path, Secrets()).served
        asyncio.run(replay_calls(clients(env, asynchronous), recs, doc, back, asynchronous))
    finally:
        summary = engine.close_session(sid)
    return summary, len(recs)


# --- tests ------------------------------------------------------------------------------------------


def test_all_159_real_cassettes_are_present() -> None:
    assert len(FILES) == 159, f"expected the 29 + 130 shared cassettes under {CASSETTES} and {EXTRA}"


@pytest.mark.parametrize("cassette", FILES, ids=case_id)
def test_imports_and_replays_to_the_official_sdk(cassette: Path, tmp_path: Path, engine: Engine) -> None:
    path, doc = imported(cassette, tmp_path)
    assert len(fx.model_interactions(doc)) == len(recorded(cassette))
    summary, calls = replay_all(engine, path, cassette, asynchronous=False)
    assert (summary["replayed"], summary["misses"], summary["unused"], summary["live"]) == (calls, 0, 0, 0)


@pytest.mark.parametrize("cassette", [p for p in FILES if case_id(p) in ASYNC_SUBSET], ids=case_id)
def test_replays_to_the_async_clients(cassette: Path, tmp_path: Path, engine: Engine) -> None:
    path, _ = imported(cassette, tmp_path)
    summary, calls = replay_all(engine, path, cassette, asynchronous=True)
    assert (summary["replayed"], summary["misses"], summary["unused"]) == (calls, 0, 0)


STREAMS = [p for p in FILES if any(r.sse for r in recorded(p))]


@pytest.mark.parametrize("cassette", STREAMS, ids=case_id)
def test_streams_are_served_byte_for_byte(cassette: Path, tmp_path: Path, engine: Engine) -> None:
    path, doc = imported(cassette, tmp_path)
    sid, env = engine.open_session([path], "strict")
    back = load(path, Secrets()).served
    try:
        placeholders = Placeholders()
        for rec, stored in zip(recorded(cassette), fx.model_interactions(doc), strict=True):
            base = (
                env["OPENAI_BASE_URL"].removesuffix("/v1")
                if rec.provider == "openai"
                else env["ANTHROPIC_BASE_URL"]
            )
            url = base + rec.path + (f"?{rec.query}" if rec.query else "")
            answer = requests.request(rec.method, url, json=rec.body, timeout=30)
            assert answer.status_code == rec.status
            if not rec.sse:
                continue
            assert answer.headers["content-type"].startswith("text/event-stream")
            text = unserve_text(answer.content.decode(), back)
            assert text == "".join(stored["response"]["body"]["sse"])
            assert "{{" not in answer.content.decode()  # every placeholder served as a real value
            # The same bytes the provider sent, frame separators and all, but for ids and timestamps.
            placeholders.same_text(text, rec.response.decode())
    finally:
        summary = engine.close_session(sid)
    assert summary["misses"] == 0


def recorded_stream_parts(rec: Recorded) -> tuple[str, list[str]]:
    """The streamed text and each tool call's streamed arguments, joined, from the cassette itself."""
    text: list[str] = []
    args: dict[int, list[str]] = {}
    for event in sse_payloads(rec.response):
        kind = event.get("type", "")
        if kind == "content_block_delta":
            delta = event["delta"]
            text.append(delta.get("text", ""))
            args.setdefault(event["index"], []).append(delta.get("partial_json", ""))
        elif kind == "response.output_text.delta":
            text.append(event["delta"])
        elif kind == "response.function_call_arguments.delta":
            args.setdefault(event["output_index"], []).append(event["delta"])
        for choice in event.get("choices") or []:
            text.append(choice["delta"].get("content") or "")
            for call in choice["delta"].get("tool_calls") or []:
                args.setdefault(call["index"], []).append(call["function"].get("arguments") or "")
    return "".join(text), ["".join(parts) for _, parts in sorted(args.items()) if "".join(parts)]


def final_parts(client: Any, rec: Recorded) -> tuple[str, list[str]]:
    """Text and tool arguments as the SDK's accumulating stream helper assembles them."""
    kwargs = {k: v for k, v in arguments(_typed(client, rec), rec).items() if k != "stream"}
    if rec.provider == "anthropic":
        with client.messages.stream(**kwargs) as stream:
            message = stream.get_final_message()
        text = "".join(b.text for b in message.content if b.type == "text")
        return text, [
            json.dumps(b.input, separators=(",", ":")) for b in message.content if b.type == "tool_use"
        ]
    if rec.path.endswith("/responses"):
        with client.responses.stream(**kwargs) as stream:
            response = stream.get_final_response()
        return response.output_text, [i.arguments for i in response.output if i.type == "function_call"]
    with client.chat.completions.stream(**kwargs) as stream:
        message = stream.get_final_completion().choices[0].message
    return message.content or "", [c.function.arguments for c in message.tool_calls or []]


HELPER_CASES = [
    "base/anthropic/messages_tool_use_stream",
    "base/openai/chat_tools_stream_roundtrip_parsed",
    "base/openai/responses_tool_use_stream",
]


@pytest.mark.parametrize("case", HELPER_CASES)
def test_stream_helpers_assemble_the_recorded_reply(case: str, tmp_path: Path, engine: Engine) -> None:
    cassette = CASSETTES / f"{case.removeprefix('base/')}.yaml"
    path, _ = imported(cassette, tmp_path)
    sid, env = engine.open_session([path], "strict")
    try:
        for rec in recorded(cassette):
            text, args = final_parts(clients(env, asynchronous=False)[rec.provider], rec)
            want_text, want_args = recorded_stream_parts(rec)
            assert text == want_text
            assert [json.loads(a) for a in args] == [json.loads(a) for a in want_args]
    finally:
        summary = engine.close_session(sid)
    assert (summary["misses"], summary["unused"]) == (0, 0)
