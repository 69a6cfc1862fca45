"""Lenient matching serves model calls by position, but never a recording of another method or path
(another API, so possibly another provider): that is a miss naming both endpoints."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import agent_cmd, calls_file, chat_request, chat_response, exchange, run_cli, write_fixture


def lenient(fixtures_dir: Path, calls: Path) -> tuple[int, str, list[dict]]:
    args = [
        "replay",
        "--name",
        "t",
        "--fixtures-dir",
        str(fixtures_dir),
        "--match",
        "lenient",
        "--mode",
        "strict",
    ]
    proc = run_cli([*args, "--", *agent_cmd(calls)], cwd=fixtures_dir.parent)
    outputs = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    return proc.returncode, proc.stderr, outputs


def test_a_call_to_another_api_is_a_miss_not_the_next_recording(tmp_path: Path, fixtures_dir: Path) -> None:
    write_fixture(fixtures_dir, "t", [exchange(chat_request(), chat_response("Hello!"))])
    embeddings = {"api": "embeddings", "body": {"model": "text-embedding-3-small", "input": "Say hello"}}
    anthropic = {
        "sdk": "anthropic",
        "body": {
            "model": "claude-haiku-4-5",
            "max_tokens": 10,
            "messages": [{"role": "user", "content": "Hi"}],
        },
    }
    code, stderr, outputs = lenient(fixtures_dir, calls_file(tmp_path, [embeddings, anthropic]))
    assert code == 2
    assert 'replay miss: endpoint changed ("POST /v1/chat/completions"→"POST /v1/embeddings")' in stderr, (
        stderr
    )
    assert 'endpoint changed ("POST /v1/chat/completions"→"POST /v1/messages")' in stderr
    assert [o.get("error") for o in outputs] == ["BadRequestError", "BadRequestError"]


def test_the_recording_is_still_served_to_the_right_call_after_a_miss(
    tmp_path: Path, fixtures_dir: Path
) -> None:
    write_fixture(fixtures_dir, "t", [exchange(chat_request(), chat_response("Hello!"))])
    embeddings = {"api": "embeddings", "body": {"model": "text-embedding-3-small", "input": "Say hello"}}
    code, _stderr, outputs = lenient(
        fixtures_dir, calls_file(tmp_path, [embeddings, {"body": chat_request()}])
    )
    assert code == 2  # the miss still fails the run
    assert outputs[1]["ok"]["choices"][0]["message"]["content"] == "Hello!"
