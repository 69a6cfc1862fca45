"""Every base-URL variable the common SDKs and frameworks read goes to the proxy; unused recordings are
said; the user's own gateway is the capture upstream."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from attest_toolkit.report.policy import evaluate, parse_policy
from attest_toolkit.report.summary import render
from capture_helpers import KEY, run_attest
from conftest import (
    chat_request,
    chat_response,
    clean_env,
    exchange,
    message_response,
    run_cli,
    write_fixture,
)
from report_factory import make_report, make_test, replay_facts
from upstream import FakeUpstream, Reply

# An agent that finds its provider the way LangChain, langchain-anthropic and LiteLLM do: through a
# variable other than the official SDKs' own.
AGENT = """
import os, sys, openai, anthropic
var = sys.argv[1]
if var.startswith("OPENAI"):
    client = openai.OpenAI(base_url=os.environ[var], api_key="k", max_retries=0)
    print(client.chat.completions.create(**{request}).choices[0].message.content)
else:
    client = anthropic.Anthropic(base_url=os.environ[var], api_key="k", max_retries=0)
    print(client.messages.create(**{message}).content[0].text)
"""
MESSAGE = {"model": "claude-haiku-4-5", "max_tokens": 16, "messages": [{"role": "user", "content": "Hi"}]}
MESSAGE_REPLY = message_response("Hello from the recording")


def agent(tmp_path: Path) -> Path:
    path = tmp_path / "agent.py"
    path.write_text(AGENT.format(request=chat_request(), message=MESSAGE), encoding="utf-8")
    return path


@pytest.mark.parametrize("var", ["OPENAI_API_BASE", "ANTHROPIC_API_URL", "ANTHROPIC_API_BASE"])
def test_a_framework_variable_is_replayed_not_sent_to_the_provider(tmp_path, fixtures_dir, var):
    reply = chat_response("Hello from the recording")
    openai_side = var.startswith("OPENAI")
    recorded = (
        exchange(chat_request(), reply)
        if openai_side
        else exchange(MESSAGE, MESSAGE_REPLY, path="/v1/messages")
    )
    write_fixture(fixtures_dir, "t", [recorded], provider="openai" if openai_side else "anthropic")
    direct = json.dumps(reply if openai_side else message_response("x"))
    with FakeUpstream([Reply(body=direct.encode())]) as provider:
        env = clean_env(**{var: provider.url + ("/v1" if openai_side else "")})
        argv = ["replay", "--name", "t", "--fixtures-dir", str(fixtures_dir), "--mode", "strict"]
        proc = run_cli([*argv, "--", sys.executable, str(agent(tmp_path)), var], env=env)
    assert provider.requests == []
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "Hello from the recording",
        "attest replay: 1 replayed · 0 live model calls · $0.00",
    ]


def test_a_replay_that_leaves_recordings_unused_says_so(tmp_path, fixtures_dir):
    write_fixture(
        fixtures_dir,
        "t",
        [
            exchange(chat_request(), chat_response("one")),
            exchange(chat_request("again"), chat_response("two")),
        ],
    )
    argv = ["replay", "--name", "t", "--fixtures-dir", str(fixtures_dir), "--mode", "strict"]
    proc = run_cli([*argv, "--", sys.executable, str(agent(tmp_path)), "OPENAI_BASE_URL"], env=clean_env())
    assert proc.returncode == 0, proc.stderr
    assert (
        proc.stdout.splitlines()[-1]
        == "attest replay: 1 replayed · 0 live model calls · $0.00 · 1 recording unused"
    )


def unused_report() -> dict:
    return make_report([make_test("tests/test_a.py::test_a", replay={**replay_facts(1), "unused": 2})])


def test_unused_recordings_reach_report_v2_and_the_comment():
    report = unused_report()
    assert report["summary"]["replay"]["unused"] == 2
    assert render(report, "markdown").splitlines()[0].endswith("· 2 recordings unused")


@pytest.mark.parametrize(
    ("setting", "verdict", "detail"),
    [(None, "pass", "warning: 2 recordings unused"), ("allow", "pass", None), ("block", "blocked", None)],
)
def test_the_unused_policy_key(setting, verdict, detail):
    policy = parse_policy({"unused": setting} if setting else {})
    result = evaluate(unused_report(), policy)
    assert result.verdict == verdict
    (rule,) = [r for r in result.rules if r.rule == "unused"]
    assert (rule.actual, rule.detail) == (2, detail)


# --- the user's own gateway as the capture upstream ------------------------------------------------

UPSTREAM_VARS = ("ATTEST_OPENAI_UPSTREAM", "ATTEST_ANTHROPIC_UPSTREAM")
CHAT = """
import openai, sys
try:
    print(openai.OpenAI(max_retries=0).chat.completions.create(**{request}).id)
except openai.APIStatusError as exc:
    sys.exit(exc.message)
"""


def capture_through(fixtures_dir: Path, **env: str):
    script = CHAT.format(request=chat_request())
    argv = ["capture", "--name", "t", "--fixtures-dir", str(fixtures_dir), "--", sys.executable, "-c", script]
    return run_attest(*argv, env=clean_env(OPENAI_API_KEY=KEY, **env), cwd=fixtures_dir.parent)


@pytest.mark.parametrize(("suffix", "path"), [("/v1", "/v1/chat/completions"), ("", "/chat/completions")])
@pytest.mark.parametrize("var", ["OPENAI_BASE_URL", "OPENAI_API_BASE"])
def test_capture_records_from_the_users_own_gateway(fixtures_dir, var, suffix, path):
    with FakeUpstream([Reply(body=json.dumps(chat_response()).encode())]) as gateway:
        proc = capture_through(fixtures_dir, **{var: gateway.url + "/gateway" + suffix})
    assert proc.returncode == 0, proc.stderr
    # Where the agent's own SDK would have sent it, with or without /v1 in the base URL.
    assert [r.path for r in gateway.requests] == ["/gateway" + path]
    assert gateway.requests[0].headers["Authorization"] == f"Bearer {KEY}"


def test_a_gateway_name_that_does_not_resolve_says_so(fixtures_dir):
    proc = capture_through(fixtures_dir, OPENAI_BASE_URL="http://attest-gateway.invalid/v1")
    assert proc.returncode == 1
    assert "cannot resolve attest-gateway.invalid" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_capture_help_documents_the_upstream_variables():
    proc = run_attest("capture", "--help", env=clean_env(COLUMNS="200"), cwd=Path.cwd())
    for var in UPSTREAM_VARS:
        assert var in proc.stdout
