"""AWS Bedrock Runtime through boto3: captured against a scripted upstream that speaks Bedrock's wire
format and checks each request's SigV4 signature for its own host, replayed strict with no AWS
credentials and the network off, streams served frame by frame as recorded, misses by component."""

from __future__ import annotations

import json
import socket
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import boto3
import h11
import pytest
from attest_toolkit.fixtures import document as fx
from attest_toolkit.replay.server import Engine
from capture_helpers import attest_in
from conftest import AGENTS, clean_env, run_cli
from upstream import (
    FakeUpstream,
    Reply,
    bedrock_converse,
    bedrock_converse_stream,
    bedrock_error,
    bedrock_invoke_claude,
    bedrock_invoke_claude_stream,
    bedrock_usage,
    sigv4_check,
)

ACCESS_KEY = "AKIA" + "ATTESTTESTKEY123"  # the shape of an AWS access key id
SECRET_KEY = "wJalrXUtnFEMI/K7MDENG/bPxRfiCY" + "ATTESTSECRET"
SESSION_TOKEN = "IQoJb3JpZ2luX2VjE" + "T" * 60
AGENT = AGENTS / "bedrock_agent.py"
SUMMARY = "attest replay: 5 replayed · 0 live model calls · $0.00\n"
TOOL_USE = {
    "toolUseId": "tooluse_kZJMlvQmRJ6eAyJE5GIl7Q",
    "name": "multiply",
    "input": {"a": 1231, "b": 2331},
}


def env(**extra: str) -> dict[str, str]:
    """A clean environment with no AWS setting at all but what a test gives."""
    base = {k: v for k, v in clean_env().items() if not k.startswith("AWS_")}
    return {**base, "PYTHONIOENCODING": "utf-8", "AWS_CONFIG_FILE": "/nonexistent", **extra}


def credentials(access_key: str = ACCESS_KEY) -> dict[str, str]:
    return {
        "AWS_ACCESS_KEY_ID": access_key,
        "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
        "AWS_SESSION_TOKEN": SESSION_TOKEN,
    }


def flow_replies() -> list[Reply]:
    return [
        bedrock_converse([{"toolUse": TOOL_USE}], "tool_use"),
        bedrock_converse([{"text": "1231 * 2331 = 2,869,461"}], usage=bedrock_usage(60, 12)),
        bedrock_converse_stream(
            ["Two million, ", "eight hundred sixty-nine thousand, ", "four hundred sixty-one."]
        ),
        bedrock_invoke_claude("Yes: 2,869,461."),
        bedrock_invoke_claude_stream(["Still ", "2,869,461."]),
    ]


def agent(*args: str) -> list[str]:
    return [sys.executable, str(AGENT), *args]


def attest(fixtures_dir: Path, *args: str, **extra: str):
    """`attest COMMAND [OPTIONS] --fixtures-dir DIR -- AGENT...` in a clean environment plus `extra`."""
    return attest_in(fixtures_dir, env(**extra), *args)


def replay(fixtures_dir: Path, *command: str, **extra: str):
    """A strict replay with no AWS credentials and the network off."""
    done = attest(
        fixtures_dir, "replay", "--mode", "strict", "--network", "none", "--name", "bedrock", "--", *command,
        **extra,
    )  # fmt: skip
    if done.returncode == 3 and "cannot turn the network off" in done.stderr:
        pytest.skip("no way to make a network namespace here: " + done.stderr.strip())
    return done


@dataclass
class Flow:
    fixtures_dir: Path
    upstream: FakeUpstream
    streams: list[list[bytes]]  # the frames the upstream sent, per streamed answer
    out: str


@pytest.fixture(scope="module")
def flow(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Flow]:
    fixtures_dir = tmp_path_factory.mktemp("bedrock") / "fixtures"
    replies = flow_replies()
    streams = [list(r.events) for r in replies if r.events is not None]
    with FakeUpstream(replies, check=sigv4_check(ACCESS_KEY, SECRET_KEY)) as upstream:
        captured = attest(
            fixtures_dir, "capture", "--name", "bedrock", "--", *agent("flow"),
            ATTEST_BEDROCK_UPSTREAM=upstream.url, **credentials(),
        )  # fmt: skip
        assert captured.returncode == 0, captured.stderr
        yield Flow(fixtures_dir, upstream, streams, captured.stdout)


def test_capture_signs_each_call_again_for_the_upstream_with_the_callers_credentials(flow: Flow) -> None:
    sent = flow.upstream.requests
    # Every request passed the upstream's SigV4 check for its own host (a failed one answers 403,
    # and the capture would have failed): signed with the caller's key, session token included.
    assert len(sent) == 5
    assert all(f"Credential={ACCESS_KEY}/" in s.headers["Authorization"] for s in sent)
    assert all(s.headers["X-Amz-Security-Token"] == SESSION_TOKEN for s in sent)
    # The model ids reach the upstream escaped as boto3 sent them, an ARN's `/` included.
    assert [s.raw_path for s in sent] == [
        "/model/us.amazon.nova-pro-v1%3A0/converse",
        "/model/us.amazon.nova-pro-v1%3A0/converse",
        "/model/us.amazon.nova-pro-v1%3A0/converse-stream",
        "/model/anthropic.claude-3-5-haiku-20241022-v1%3A0/invoke",
        "/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A123456789012%3Ainference-profile%2F"
        "us.anthropic.claude-sonnet-4-20250514-v1%3A0/invoke-with-response-stream",
    ]


def test_a_signature_for_another_host_or_key_is_refused_by_the_scripted_upstream(tmp_path: Path) -> None:
    """The upstream's check bites: a capture signing with keys it does not know gets AWS's 403."""
    with FakeUpstream(
        [bedrock_converse([{"text": "never"}])], check=sigv4_check("AKIAOTHERKEY00000000", "x")
    ) as up:
        captured = attest(
            tmp_path / "fixtures", "capture", "--name", "b", "--expect-fail", "--", *agent("ask"),
            ATTEST_BEDROCK_UPSTREAM=up.url, **credentials(),
        )  # fmt: skip
    assert (
        "aws error UnrecognizedClientException: The security token included in the request is invalid."
        in (captured.stderr)
    )


def test_the_fixture_keeps_no_sigv4_material_and_the_streams_frame_by_frame(flow: Flow) -> None:
    path = flow.fixtures_dir / "bedrock.attest.json"
    text = path.read_text(encoding="utf-8")
    for secret in (
        ACCESS_KEY,
        SECRET_KEY,
        SESSION_TOKEN,
        "AWS4-HMAC-SHA256",
        "x-amz-",
        "X-Amz-",
        "Signature=",
    ):
        assert secret not in text
    model = fx.model_interactions(fx.read_fixture(path))
    assert {i["provider"] for i in model} == {"bedrock"}
    assert model[0]["path"] == "/model/us.amazon.nova-pro-v1:0/converse"
    assert model[0]["request"]["json"]["system"] == [{"text": "You are a careful calculator. Use the tools."}]
    converse_stream = model[2]["response"]["body"]["eventstream"]
    assert [dict(e["headers"])[":event-type"] for e in converse_stream] == [
        "messageStart", "contentBlockDelta", "contentBlockDelta", "contentBlockDelta",
        "contentBlockStop", "messageStop", "metadata",
    ]  # fmt: skip
    assert json.loads(converse_stream[1]["payload"])["delta"] == {"text": "Two million, "}
    # InvokeModelWithResponseStream's base64 chunks are stored decoded, readable.
    chunks = model[4]["response"]["body"]["eventstream"]
    assert json.loads(chunks[2]["payload"]["bytes"])["delta"]["text"] == "Still "


def test_a_capture_replays_strict_with_no_credentials_and_the_network_off(flow: Flow) -> None:
    assert "tool multiply(1231, 2331) = 2869461" in flow.out
    assert "streamed: Two million, |eight hundred sixty-nine thousand, |four hundred sixty-one." in flow.out
    assert "invoked: Yes: 2,869,461. | stop: end_turn" in flow.out
    assert "invoke-streamed: Still |2,869,461. | events: message_start,content_block_start," in flow.out
    calls = len(flow.upstream.requests)
    replayed = replay(flow.fixtures_dir, *agent("flow"))
    assert replayed.returncode == 0, replayed.stderr
    assert replayed.stdout == flow.out + SUMMARY
    assert "isolation verified" in replayed.stderr
    assert len(flow.upstream.requests) == calls


DUAL_STACK_CONFIG = "[default]\nuse_dualstack_endpoint = true\nuse_fips_endpoint = true\n"


@pytest.mark.parametrize("setting", ["AWS_USE_DUALSTACK_ENDPOINT", "AWS_USE_FIPS_ENDPOINT", "config file"])
def test_a_dual_stack_or_fips_client_still_replays_through_attest(
    flow: Flow, setting: str, tmp_path: Path
) -> None:
    # botocore lets a configured endpoint URL (attest's AWS_ENDPOINT_URL_BEDROCK_RUNTIME) win over the
    # dual-stack and FIPS settings, which would otherwise send the call to bedrock-runtime.<region>.api.aws.
    if setting == "config file":
        config = tmp_path / "aws-config"
        config.write_text(DUAL_STACK_CONFIG, encoding="utf-8")
        extra = {"AWS_CONFIG_FILE": str(config)}
    else:
        extra = {setting: "true"}
    replayed = replay(flow.fixtures_dir, *agent("flow"), **extra)
    assert replayed.returncode == 0, replayed.stderr
    assert replayed.stdout == flow.out + SUMMARY


def _chunks(port: int, target: str, body: bytes) -> list[bytes]:
    """The body of one POST as the chunks it came in (one per event for a stream)."""
    conn = h11.Connection(h11.CLIENT)
    headers = [
        ("host", "127.0.0.1"),
        ("content-type", "application/json"),
        ("content-length", str(len(body))),
    ]
    with socket.create_connection(("127.0.0.1", port)) as sock:
        request = h11.Request(method="POST", target=target, headers=headers)
        sock.sendall(conn.send(request) + conn.send(h11.Data(data=body)) + conn.send(h11.EndOfMessage()))
        chunks, current = [], b""
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                conn.receive_data(sock.recv(1 << 16))
            elif isinstance(event, h11.Data):
                current += bytes(event.data)
                if event.chunk_end:
                    chunks, current = [*chunks, current], b""
            elif isinstance(event, h11.EndOfMessage):
                return chunks


def test_streams_are_replayed_byte_for_byte_one_frame_per_event(flow: Flow) -> None:
    path = flow.fixtures_dir / "bedrock.attest.json"
    sent = [s for s in flow.upstream.requests if "stream" in s.raw_path]
    with Engine(env()) as engine:
        _sid, session = engine.open_session([path], "strict")
        base = session["AWS_ENDPOINT_URL_BEDROCK_RUNTIME"]
        port, prefix = int(base.split(":")[2].split("/")[0]), "/" + base.split("/", 3)[3]
        served = [_chunks(port, prefix + s.raw_path, s.body) for s in sent]
    assert served == flow.streams


@pytest.mark.parametrize(
    ("change", "miss"),
    [
        (
            ("What is 1231 * 2331?", "What is 1231 * 2332?"),
            "messages changed: messages[0].content[0].text (hash ",
        ),
        (("careful calculator", "calculator"), "system prompt changed: system[0].text (hash "),
        (
            ('"Multiply two numbers."', '"Multiply."'),
            "tools changed: tools.tools[0].toolSpec.description (hash ",
        ),
        (
            ('"maxTokens": 512', '"maxTokens": 1024'),
            "params changed: inferenceConfig.maxTokens (hash ",
        ),
        (
            ('CONVERSE_MODEL = "us.amazon.nova-pro-v1:0"', 'CONVERSE_MODEL = "us.amazon.nova-lite-v1:0"'),
            'model changed ("us.amazon.nova-pro-v1:0"→"us.amazon.nova-lite-v1:0")',
        ),
    ],
    ids=["messages", "system", "tools", "params", "model"],
)
def test_a_changed_call_misses_naming_its_component(
    flow: Flow, tmp_path: Path, change: tuple[str, str], miss: str
) -> None:
    source = AGENT.read_text(encoding="utf-8")
    assert change[0] in source
    changed = tmp_path / "agent.py"
    changed.write_text(source.replace(change[0], change[1]), encoding="utf-8")
    replayed = replay(flow.fixtures_dir, sys.executable, str(changed), "flow")
    assert replayed.returncode == 2, replayed.stderr
    # boto3 raised Bedrock's own ValidationException, with the miss in it (and did not retry it).
    assert f"aws error ValidationException: replay miss: {miss}" in replayed.stderr
    assert "1 missed" in replayed.stdout


def test_a_bedrock_error_is_recorded_and_replayed_as_it_happened(tmp_path: Path) -> None:
    fixtures_dir = tmp_path / "fixtures"
    error = bedrock_error(400, "ValidationException", "The provided model identifier is invalid.")
    with FakeUpstream([error], check=sigv4_check(ACCESS_KEY, SECRET_KEY)) as up:
        captured = attest(
            fixtures_dir, "capture", "--name", "bedrock", "--expect-fail", "--", *agent("ask"),
            ATTEST_BEDROCK_UPSTREAM=up.url, **credentials(),
        )  # fmt: skip
    assert captured.returncode == 0, captured.stderr
    replayed = replay(fixtures_dir, *agent("ask"))
    expected = "aws error ValidationException: The provided model identifier is invalid."
    assert expected in captured.stderr and expected in replayed.stderr
    (interaction,) = fx.model_interactions(fx.read_fixture(fixtures_dir / "bedrock.attest.json"))
    assert interaction["response"]["headers"]["x-amzn-errortype"].startswith("ValidationException:")


def test_fixture_show_reads_bedrock_replies(flow: Flow) -> None:
    shown = run_cli(["fixture", "show", "bedrock", "--fixtures-dir", str(flow.fixtures_dir)], env=env())
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert any(
        "POST /model/us.amazon.nova-pro-v1:0/converse  model us.amazon.nova-pro-v1:0" in x for x in lines
    )
    assert any("tool calls: multiply" in line for line in lines)
    assert any('→ 200 eventstream (7 events)  "Two million, eight hundred' in line for line in lines)
    assert any('→ 200 eventstream (7 events)  "Still 2,869,461."' in line for line in lines)


FRAMEWORKS = AGENTS / "bedrock_frameworks_agent.py"


@pytest.mark.parametrize("framework", ["pydantic-ai", "litellm", "langchain-aws"])
def test_a_framework_on_bedrock_is_captured_and_replayed_streamed_and_not(
    tmp_path: Path, framework: str
) -> None:
    """pydantic-ai's BedrockConverseModel and langchain-aws's ChatBedrockConverse (boto3) and LiteLLM's
    `bedrock/` models (its own SigV4), each a call and a streamed call, pointed at attest by the
    variable each reads."""
    fixtures_dir = tmp_path / "fixtures"
    replies = [
        bedrock_converse([{"text": "2,869,461"}]),
        bedrock_converse_stream(["Two million, ", "and so on."]),
    ]
    command = [sys.executable, str(FRAMEWORKS), framework]
    quiet = {"LITELLM_LOCAL_MODEL_COST_MAP": "True"}  # LiteLLM would fetch its price list
    with FakeUpstream(replies, check=sigv4_check(ACCESS_KEY, SECRET_KEY)) as up:
        captured = attest(
            fixtures_dir, "capture", "--name", "bedrock", "--", *command,
            ATTEST_BEDROCK_UPSTREAM=up.url, **credentials(), **quiet,
        )  # fmt: skip
    assert captured.returncode == 0, captured.stderr
    assert [s.raw_path for s in up.requests] == [
        "/model/us.amazon.nova-pro-v1%3A0/converse",
        "/model/us.amazon.nova-pro-v1%3A0/converse-stream",
    ]
    assert captured.stdout.startswith("answer: 2,869,461\nstreamed: Two million, ")
    replayed = attest(
        fixtures_dir, "replay", "--mode", "strict", "--name", "bedrock", "--", *command, **quiet
    )
    assert replayed.returncode == 0, replayed.stderr
    assert replayed.stdout == captured.stdout + "attest replay: 2 replayed · 0 live model calls · $0.00\n"


def test_a_live_call_in_auto_mode_is_signed_again_and_priced_from_the_table(tmp_path: Path) -> None:
    fixtures_dir = tmp_path / "fixtures"
    live = bedrock_converse([{"text": "live"}], usage=bedrock_usage(100_000, 200_000))
    with FakeUpstream(
        [bedrock_converse([{"text": "hi"}]), live], check=sigv4_check(ACCESS_KEY, SECRET_KEY)
    ) as up:
        captured = attest(
            fixtures_dir, "capture", "--name", "b", "--", *agent("ask", "Hello?"),
            ATTEST_BEDROCK_UPSTREAM=up.url, **credentials(),
        )  # fmt: skip
        assert captured.returncode == 0, captured.stderr
        replayed = attest(
            fixtures_dir, "replay", "--mode", "auto", "--name", "b", "--", *agent("ask", "Goodbye?"),
            ATTEST_BEDROCK_UPSTREAM=up.url, **credentials(),
        )  # fmt: skip
    assert replayed.returncode == 0, replayed.stderr
    # us.amazon.nova-pro-v1:0 prices as nova-pro: 100,000 input tokens at $0.80 and 200,000 output at
    # $3.20 per million.
    assert replayed.stdout.splitlines() == [
        "answer: live",
        "attest replay: 0 replayed · 1 live model calls · $0.72 · 1 recording unused",
    ]
    assert len(up.requests) == 2  # the upstream's check passed the engine's new signature


def test_a_call_not_signed_with_the_engines_own_secret_never_goes_live(flow: Flow) -> None:
    """Knowing the engine's access key id is not enough: the signature must check out with its secret."""

    with Engine(env(ATTEST_BEDROCK_UPSTREAM=flow.upstream.url, **credentials())) as engine:
        sid, session = engine.open_session([flow.fixtures_dir / "bedrock.attest.json"], "auto")
        client = boto3.client(
            "bedrock-runtime",
            region_name="us-east-1",
            endpoint_url=session["AWS_ENDPOINT_URL_BEDROCK_RUNTIME"],
            aws_access_key_id=ACCESS_KEY,
            aws_secret_access_key="not-the-engines-secret",
        )
        calls = len(flow.upstream.requests)
        with pytest.raises(client.exceptions.ValidationException, match="replay miss: "):
            client.converse(
                modelId="us.amazon.nova-pro-v1:0", messages=[{"role": "user", "content": [{"text": "?"}]}]
            )
        summary = engine.close_session(sid)
    assert len(flow.upstream.requests) == calls
    assert summary["live"] == 0


@pytest.mark.parametrize(
    ("reply", "model", "cost"),
    [
        (
            bedrock_converse_stream(["a", "b", "c"], bedrock_usage(1_000_000, 1_000_000)),
            "us.amazon.nova-pro-v1:0",
            4.0,
        ),
        (bedrock_invoke_claude_stream(["a", "b"]), "anthropic.claude-3-5-haiku-20241022-v1:0", 0.0000168),
    ],
    ids=["converse-stream", "invoke-with-response-stream"],
)
def test_a_streamed_answer_is_priced_from_its_usage_events(reply: Reply, model: str, cost: float) -> None:
    """ConverseStream's metadata event; Anthropic's message_start and message_delta inside the chunks
    (11 input tokens at $0.80 and 2 output at $4.00 per million for Claude 3.5 Haiku)."""
    from attest_toolkit.pricing.cost import cost_usd, usage_of

    assert reply.events is not None
    found = usage_of(b"".join(reply.events), reply.headers["content-type"])
    assert cost_usd(model, found) == pytest.approx(cost)


def test_a_key_streamed_in_pieces_across_frames_is_redacted_in_every_frame(tmp_path: Path) -> None:
    """The caller's access key id, streamed back split over two ConverseStream deltas: no single frame
    holds it, the joined text does. The agent gets it as sent; the fixture keeps `{{redacted}}`."""
    fixtures_dir = tmp_path / "fixtures"
    pieces = ["Your key is ", ACCESS_KEY[:10], ACCESS_KEY[10:], "."]
    stream = bedrock_converse_stream(pieces)
    with FakeUpstream([stream], check=sigv4_check(ACCESS_KEY, SECRET_KEY)) as up:
        captured = attest(
            fixtures_dir, "capture", "--name", "b", "--", *agent("stream"),
            ATTEST_BEDROCK_UPSTREAM=up.url, **credentials(),
        )  # fmt: skip
    assert captured.returncode == 0, captured.stderr
    assert captured.stdout == f"streamed: {'|'.join(pieces)}\n"
    text = (fixtures_dir / "b.attest.json").read_text(encoding="utf-8")
    assert ACCESS_KEY[:10] not in text and ACCESS_KEY[10:] not in text
    (interaction,) = fx.model_interactions(fx.read_fixture(fixtures_dir / "b.attest.json"))
    deltas = [json.loads(e["payload"]) for e in interaction["response"]["body"]["eventstream"][1:5]]
    assert [d["delta"]["text"] for d in deltas] == ["Your key is ", "{{redacted}}", "", "."]


@pytest.mark.parametrize(
    ("target", "path"),
    [
        ("/r/s1/bedrock/model/us.amazon.nova-pro-v1%3A0/converse", "/model/us.amazon.nova-pro-v1:0/converse"),
        ("/r/s1/bedrock/model/arn%3Aaws%3Ab%2Fus.c-v1%3A0/invoke", "/model/arn:aws:b/us.c-v1:0/invoke"),
        ("/r/s1/bedrock/model/a%20b/converse", None),  # other escapes: aiohttp decides
        ("/r/s1/bedrock/model/a%2F%2E%2Fb/converse", None),
        ("/r/s%3A1/bedrock/model/a/converse", None),
    ],
)
def test_a_bedrock_hit_takes_the_engines_fast_path_despite_the_escaped_model_id(
    target: str, path: str | None
) -> None:
    """boto3 escapes the model id's `:` (and an ARN's `/`): the fast path reads such a target as aiohttp
    routes it, so a Bedrock hit is answered from bytes built at load, as an OpenAI hit is."""
    from attest_toolkit.replay.lane import split_target

    found = split_target(target)
    assert (found[2] if found else None) == path
