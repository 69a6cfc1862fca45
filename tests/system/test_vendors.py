"""The OpenAI-compatible vendors, each captured against a scripted upstream at its own path and
replayed strict with no key: Groq and Together through their official SDKs (which read GROQ_BASE_URL
and TOGETHER_BASE_URL), Mistral through its official `mistralai` SDK too (given `server_url`), Mistral,
DeepSeek and OpenRouter through the openai SDK and the base-URL variable LiteLLM reads for each; and
every one through LiteLLM's `VENDOR/` models."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from attest_toolkit.fixtures import document as fx
from attest_toolkit.providers.env import ALL_VARS, KEY_VARS
from capture_helpers import run_agent
from conftest import AGENTS, chat_response, clean_env
from scripted import chat_text_stream
from upstream import FakeUpstream, Reply

AGENT = AGENTS / "vendor_agent.py"
KEY = "vendor-key-" + "k" * 32
# vendor: the path its SDK calls, which capture forwards to its upstream as it is.
PATHS = {
    "groq": "/openai/v1/chat/completions",
    "together": "/v1/chat/completions",
    "mistral": "/v1/chat/completions",
    "deepseek": "/v1/chat/completions",
    "openrouter": "/api/v1/chat/completions",
}


def env(**extra: str) -> dict[str, str]:
    base = {k: v for k, v in clean_env().items() if k not in {*ALL_VARS, *KEY_VARS.values()}}
    # LiteLLM fetches its price map from the network unless told to use the one it ships.
    return {**base, "PYTHONIOENCODING": "utf-8", "LITELLM_LOCAL_MODEL_COST_MAP": "True", **extra}


def attest(fixtures_dir: Path, *args: str, **extra: str):
    return run_agent(AGENT, fixtures_dir, args, env(**extra))


def replies(vendor: str = "") -> list[Reply]:
    answer = chat_response("Hello from the vendor")
    if vendor == "groq":
        answer["service_tier"] = "on_demand"  # Groq's answers name it (LiteLLM's `groq/` reads it)
    return [Reply(body=json.dumps(answer).encode()), chat_text_stream("Hi there")]


VIA = [
    *((v, "sdk") for v in PATHS),
    *((v, "litellm") for v in PATHS),
    ("mistral", "mistralai"),  # the official SDK, pointed by `server_url`: it reads no base-URL variable
]


@pytest.mark.parametrize(("vendor", "via"), VIA)
def test_a_vendor_is_captured_at_its_own_path_and_replayed_strict_with_no_key(
    vendor: str, via: str, tmp_path: Path
) -> None:
    agent = [vendor] if via == "sdk" else [via, vendor]
    fixtures = tmp_path / "fixtures"
    with FakeUpstream(replies(vendor)) as up:
        captured = attest(
            fixtures, "capture", "--name", vendor, "--", *agent,
            **{f"ATTEST_{vendor.upper()}_UPSTREAM": up.url, KEY_VARS[vendor]: KEY},
        )  # fmt: skip
        assert captured.returncode == 0, captured.stderr
        assert [r.path for r in up.requests] == [PATHS[vendor]] * 2
        assert all(r.headers["Authorization"] == f"Bearer {KEY}" for r in up.requests)
        replayed = attest(fixtures, "replay", "--mode", "strict", "--name", vendor, "--", *agent)
        changed = attest(fixtures, "replay", "--mode", "strict", "--name", vendor, "--", *agent, "Say bye")
        assert len(up.requests) == 2
    assert replayed.returncode == 0, replayed.stderr
    assert captured.stdout.splitlines()[:2] == ["answer: Hello from the vendor", "streamed: |Hi| there|"]
    assert replayed.stdout == captured.stdout + "attest replay: 2 replayed · 0 live model calls · $0.00\n"
    doc = fx.read_fixture(fixtures / f"{vendor}.attest.json")
    assert {i["provider"] for i in fx.model_interactions(doc)} == {vendor}
    assert KEY not in (fixtures / f"{vendor}.attest.json").read_text(encoding="utf-8")
    assert changed.returncode == 2
    assert changed.stderr.startswith(f"{vendor} error 400: ")  # the client's own error, with the miss in it
    assert "replay miss: messages changed: messages[0].content (hash " in changed.stderr


def test_a_vendor_live_call_with_no_price_is_counted_unpriced(tmp_path: Path) -> None:
    fixtures = tmp_path / "fixtures"
    with FakeUpstream([*replies(), *replies()]) as up:
        upstream = {"ATTEST_GROQ_UPSTREAM": up.url, "GROQ_API_KEY": KEY}
        assert attest(fixtures, "capture", "--name", "g", "--", "groq", **upstream).returncode == 0
        live = attest(
            fixtures, "replay", "--mode", "auto", "--name", "g", "--", "groq", "Say bye", **upstream
        )
    assert live.returncode == 0, live.stderr
    assert live.stdout.splitlines()[-1].startswith(
        "attest replay: 0 replayed · 2 live model calls · $0.00 (+2 unpriced)"
    )
