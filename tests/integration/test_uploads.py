"""Uploads (multipart/form-data, with a random boundary each time) match by their parts."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import openai
import pytest
from attest_toolkit.capture.run import capture
from attest_toolkit.credentials.scan import Secrets
from attest_toolkit.fixtures import document as fx
from attest_toolkit.fixtures.importer import import_cassettes
from attest_toolkit.normalize import canonical_hash
from attest_toolkit.replay.server import Engine
from capture_helpers import capture_env
from conftest import REAL_CASSETTES, clean_env, needs_shared
from upstream import FakeUpstream, Reply

FILE_OBJECT = {
    "id": "file-U6Ke78qu8nkANsrCrjoYBr",
    "object": "file",
    "bytes": 11,
    "created_at": 1764569740,
    "filename": "notes.txt",
    "purpose": "assistants",
    "status": "processed",
}
UPLOAD = """
import openai, sys
client = openai.OpenAI(max_retries=0)
print(client.files.create(file=("notes.txt", sys.argv[1].encode(), "text/plain"), purpose="assistants").id)
"""


def upload(
    env: dict[str, str], content: bytes, filename: str = "notes.txt", content_type: str = "text/plain"
) -> openai.types.FileObject:
    client = openai.OpenAI(base_url=env["OPENAI_BASE_URL"], api_key="x", max_retries=0)
    return client.files.create(file=(filename, content, content_type), purpose="assistants")


@pytest.fixture
def captured(fixtures_dir: Path) -> Path:
    with FakeUpstream([Reply(body=json.dumps(FILE_OBJECT).encode())]) as upstream:
        done = capture(
            [sys.executable, "-c", UPLOAD, "hello world"],
            "upload",
            fixtures_dir=fixtures_dir,
            env=capture_env(upstream.url),
        )
    return done.path


def test_an_upload_is_stored_as_its_parts(captured: Path):
    request = fx.model_interactions(fx.read_fixture(captured))[0]["request"]
    purpose, file = request["multipart"]
    assert purpose == {"name": "purpose", "value": "assistants"}
    assert (file["name"], file["filename"], file["content_type"], file["size"]) == (
        "file",
        "notes.txt",
        "text/plain",
        11,
    )
    assert "hello world" not in json.dumps(request)  # the file's content is stored as its hash


def test_a_captured_upload_replays_strict_with_a_new_boundary(captured: Path):
    with Engine(clean_env()) as engine:
        sid, env = engine.open_session([captured], "strict")
        assert upload(env, b"hello world").filename == "notes.txt"
        summary = engine.close_session(sid)
    assert (summary["replayed"], summary["misses"]) == (1, 0)


def content_hash(content: bytes) -> str:
    part = {"sha256": hashlib.sha256(content).hexdigest(), "size": len(content)}
    return canonical_hash(part)[:7]


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"content": b"hello there"}, f"content changed (hash {content_hash(b'hello world')}→"),
        ({"filename": "notes.md"}, 'file name changed ("notes.txt"→"notes.md")'),
        ({"content_type": "text/markdown"}, 'content type changed ("text/plain"→"text/markdown")'),
    ],
    ids=["content", "file name", "content type"],
)
def test_a_changed_upload_misses_naming_the_part_and_what_changed(captured: Path, change, named):
    with Engine(clean_env()) as engine:
        sid, env = engine.open_session([captured], "strict")
        with pytest.raises(openai.BadRequestError) as raised:
            upload(env, **{"content": b"hello world", **change})
        summary = engine.close_session(sid)
    assert f'replay miss: params changed: upload part "file" {named}' in raised.value.message
    assert summary["misses"] == 1


CREWAI_UPLOAD = REAL_CASSETTES.parent / "real-cassettes-extra/anthropic"
CREWAI_UPLOAD = CREWAI_UPLOAD / "crw_TestCrewMultimodalFileUpload.test_image_upload_anthropic.yaml"


@needs_shared
def test_the_importer_decodes_crewai_base64_uploads(tmp_path: Path):
    result = import_cassettes([CREWAI_UPLOAD], "crewai", tmp_path, secrets=Secrets())
    request = fx.model_interactions(fx.read_fixture(result.path))[0]["request"]
    (part,) = request["multipart"]
    assert (part["name"], part["filename"], part["content_type"]) == (
        "file",
        "revenue_chart.png",
        "image/png",
    )
    assert part["size"] > 1000
