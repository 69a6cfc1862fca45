"""Azure OpenAI through the openai SDK's AzureOpenAI client: `/openai/deployments/{deployment}/...`
with `?api-version=`, the `api-key` header and AZURE_OPENAI_ENDPOINT; captured against a scripted
upstream, replayed strict with no key, and missing by what changed."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from attest_toolkit.fixtures import document as fx
from capture_helpers import run_attest
from conftest import AGENTS, chat_response, clean_env
from scripted import chat_text_stream
from upstream import FakeUpstream, Reply

KEY = "0123456789abcdef" * 2  # an Azure key: 32 hex digits
VERSION = "2024-10-21"
AGENT = AGENTS / "azure_agent.py"
_AZURE = ("AZURE_OPENAI_ENDPOINT", "AZURE_OPENAI_API_KEY", "AZURE_OPENAI_AD_TOKEN", "OPENAI_API_VERSION")
EMBEDDING = {
    "object": "list",
    "data": [{"object": "embedding", "index": 0, "embedding": [0.5, -0.25]}],
    "model": "text-embedding-3-small",
    "usage": {"prompt_tokens": 1, "total_tokens": 1},
}


def replies() -> list[Reply]:
    return [
        Reply(body=json.dumps(chat_response("Hello from Azure")).encode()),
        chat_text_stream("Hello from the stream"),
        Reply(body=json.dumps(EMBEDDING).encode()),
    ]


def env(**extra: str) -> dict[str, str]:
    base = {k: v for k, v in clean_env().items() if k not in _AZURE}
    return {**base, "PYTHONIOENCODING": "utf-8", "OPENAI_API_VERSION": VERSION, **extra}


def attest(fixtures_dir: Path, *args: str, **extra: str):
    cut = args.index("--")
    argv = [*args[:cut], "--fixtures-dir", str(fixtures_dir), *args[cut:], sys.executable, str(AGENT)]
    return run_attest(*argv, env=env(**extra), cwd=fixtures_dir.parent)


@dataclass
class Flow:
    fixtures_dir: Path
    upstream: FakeUpstream
    out: str


@pytest.fixture(scope="module")
def flow(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Flow]:
    """Captured from the user's own resource: AZURE_OPENAI_ENDPOINT as they set it is the upstream."""
    fixtures_dir = tmp_path_factory.mktemp("azure") / "fixtures"
    with FakeUpstream(replies()) as upstream:
        captured = attest(
            fixtures_dir, "capture", "--name", "azure", "--",
            AZURE_OPENAI_ENDPOINT=upstream.url + "/", AZURE_OPENAI_API_KEY=KEY,
        )  # fmt: skip
        assert captured.returncode == 0, captured.stderr
        yield Flow(fixtures_dir, upstream, captured.stdout)


def test_capture_goes_to_the_users_resource_with_their_key_and_stores_none_of_it(flow: Flow) -> None:
    sent = flow.upstream.requests
    assert [(s.path, s.query) for s in sent] == [
        ("/openai/deployments/gpt-4o-prod/chat/completions", f"api-version={VERSION}"),
        ("/openai/deployments/gpt-4o-prod/chat/completions", f"api-version={VERSION}"),
        ("/openai/deployments/embed-prod/embeddings", f"api-version={VERSION}"),
    ]
    assert all({k.lower(): v for k, v in s.headers.items()}["api-key"] == KEY for s in sent)
    text = (flow.fixtures_dir / "azure.attest.json").read_text(encoding="utf-8")
    assert KEY not in text and "api-key" not in text
    model = fx.model_interactions(fx.read_fixture(flow.fixtures_dir / "azure.attest.json"))
    assert [(i["provider"], i["path"], i["query"]) for i in model] == [
        ("azure", "/openai/deployments/gpt-4o-prod/chat/completions", f"api-version={VERSION}"),
        ("azure", "/openai/deployments/gpt-4o-prod/chat/completions", f"api-version={VERSION}"),
        ("azure", "/openai/deployments/embed-prod/embeddings", f"api-version={VERSION}"),
    ]


def test_a_capture_replays_strict_with_no_key_and_no_upstream_call(flow: Flow) -> None:
    assert flow.out.splitlines()[:2] == ["answer: Hello from Azure", "streamed: |Hello| from| the| stream|"]
    replayed = attest(flow.fixtures_dir, "replay", "--mode", "strict", "--name", "azure", "--")
    assert replayed.returncode == 0, replayed.stderr
    assert len(flow.upstream.requests) == 3
    assert replayed.stdout == flow.out + "attest replay: 3 replayed · 0 live model calls · $0.00\n"


def replay(flow: Flow, *agent_args: str, **extra: str):
    """A strict replay of the captured fixture by the agent run with `agent_args`."""
    return run_attest(
        "replay", "--mode", "strict", "--name", "azure", "--fixtures-dir", str(flow.fixtures_dir), "--",
        sys.executable, str(AGENT), *agent_args,
        env=env(**extra), cwd=flow.fixtures_dir.parent,
    )  # fmt: skip


def test_a_changed_prompt_misses_naming_the_messages(flow: Flow) -> None:
    replayed = replay(flow, "gpt-4o-prod", "Say goodbye")
    assert replayed.returncode == 2
    miss = "replay miss: messages changed: messages[0].content (hash "
    assert f"azure error 400: Error code: 400 - {miss}" in replayed.stderr


def test_the_api_version_is_part_of_the_key(flow: Flow) -> None:
    replayed = replay(flow, OPENAI_API_VERSION="2025-04-01-preview")
    assert replayed.returncode == 2
    assert (
        "azure error 400: Error code: 400 - replay miss: params changed: query[0][1] (hash "
        in replayed.stderr
    )


def test_the_deployment_is_part_of_the_key(flow: Flow) -> None:
    replayed = replay(flow, "gpt-4o-canary")
    assert replayed.returncode == 2
    assert "azure error 400: Error code: 400 - replay miss: endpoint changed (" in replayed.stderr
    assert "gpt-4o-canary" in replayed.stderr
