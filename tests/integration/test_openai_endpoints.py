"""OpenAI's embeddings, images and audio endpoints through the openai SDK: each captured from a
scripted upstream, replayed strict with no key (the speech byte for byte), and missing by what changed."""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from attest_toolkit.fixtures import document as fx
from capture_helpers import KEY, run_attest
from conftest import AGENTS, clean_env
from upstream import FakeUpstream, Reply

AGENT = AGENTS / "openai_media.py"
SPEECH = b"ID3\x04\x00\x00\x00\x00\x00\x00\xff\xfb\x90\x64" + bytes(range(256))  # an MP3's first bytes
EMBEDDING = {
    "object": "list",
    "data": [{"object": "embedding", "index": 0, "embedding": [0.5, -0.25, 0.125]}],
    "model": "text-embedding-3-small",
    "usage": {"prompt_tokens": 1, "total_tokens": 1},
}
IMAGE = {"created": 1764569740, "data": [{"b64_json": "iVBORw0KGgo="}], "usage": {"total_tokens": 10}}


def replies() -> list[Reply]:
    return [
        Reply(body=json.dumps(EMBEDDING).encode()),
        Reply(body=json.dumps(IMAGE).encode()),
        Reply(headers={"content-type": "audio/mpeg"}, body=SPEECH),
        Reply(body=json.dumps({"text": "hello"}).encode()),
    ]


@dataclass
class Flow:
    fixtures_dir: Path
    upstream: FakeUpstream
    out: str


def attest(fixtures_dir: Path, *args: str, **extra: str):
    env = clean_env(PYTHONIOENCODING="utf-8", **extra)
    return run_attest(*args, env=env, cwd=fixtures_dir.parent)


def replay(flow: Flow, *agent_args: str):
    return attest(
        flow.fixtures_dir, "replay", "--mode", "strict", "--name", "media",
        "--fixtures-dir", str(flow.fixtures_dir), "--", sys.executable, str(AGENT), *agent_args,
    )  # fmt: skip


@pytest.fixture(scope="module")
def flow(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Flow]:
    fixtures_dir = tmp_path_factory.mktemp("media") / "fixtures"
    with FakeUpstream(replies()) as upstream:
        captured = attest(
            fixtures_dir, "capture", "--name", "media", "--fixtures-dir", str(fixtures_dir), "--",
            sys.executable, str(AGENT), ATTEST_OPENAI_UPSTREAM=upstream.url, OPENAI_API_KEY=KEY,
        )  # fmt: skip
        assert captured.returncode == 0, captured.stderr
        yield Flow(fixtures_dir, upstream, captured.stdout)


def test_each_endpoint_is_recorded_at_its_own_path(flow: Flow) -> None:
    model = fx.model_interactions(fx.read_fixture(flow.fixtures_dir / "media.attest.json"))
    assert [(i["path"], i["response"]["headers"].get("content-type")) for i in model] == [
        ("/v1/embeddings", "application/json"),
        ("/v1/images/generations", "application/json"),
        ("/v1/audio/speech", "audio/mpeg"),
        ("/v1/audio/transcriptions", "application/json"),
    ]
    parts = {part["name"]: part for part in model[3]["request"]["multipart"]}
    assert set(parts) >= {"file", "model"} and parts["file"]["filename"] == "note.wav"
    assert "base64" in model[2]["response"]["body"]  # the speech: bytes that are not text


def test_every_endpoint_replays_strict_with_no_key_the_speech_byte_for_byte(flow: Flow) -> None:
    assert f"speech sha256: {hashlib.sha256(SPEECH).hexdigest()}" in flow.out
    replayed = replay(flow)
    assert replayed.returncode == 0, replayed.stderr
    assert len(flow.upstream.requests) == 4
    assert replayed.stdout == flow.out + "attest replay: 4 replayed · 0 live model calls · $0.00\n"


def test_a_changed_embedding_input_misses_naming_the_params(flow: Flow) -> None:
    replayed = replay(flow, "goodbye")
    assert replayed.returncode == 2
    assert "openai error 400: Error code: 400 - replay miss: params changed: input (hash " in replayed.stderr
