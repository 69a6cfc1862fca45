"""Recording (`--attest-record`) beside tests that mock httpx with pytest-httpx: the recording front the
provider variables point at is invisible to them, so their mocks of the provider's URL match as they do
without attest, and the tests that record still reach the front."""

from __future__ import annotations

import json

import pytest
from attest_toolkit.fixtures import document as fx
from conftest import chat_response, scrub
from upstream import FakeUpstream, Reply

pytest.importorskip("pytest_httpx")

KEY = "sk-test-" + "m" * 40

# What an SDK built on httpx does (openai before 3, whose base URL is OPENAI_BASE_URL); the official SDKs
# installed here send with httpx2, which pytest-httpx does not mock.
TESTS = """
import os
import httpx

def ask(content):
    base = os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"
    reply = httpx.post(
        f"{base}/chat/completions",
        headers={"Authorization": f"Bearer {os.environ['OPENAI_API_KEY']}"},
        json={"model": "gpt-4o-mini", "messages": [{"role": "user", "content": content}]},
    )
    return reply.json()["choices"][0]["message"]["content"]

def test_a_mocked(httpx_mock):
    httpx_mock.add_response(url="https://api.openai.com/v1/chat/completions", json=MOCKED)
    assert ask("Say hello") == "mocked hello"

def test_b_recorded(attest_replay):
    with attest_replay("hello"):
        assert ask("Say hello") == "Hello!"

def test_c_mocked_again(httpx_mock):
    httpx_mock.add_response(url="https://api.openai.com/v1/chat/completions", json=MOCKED)
    assert ask("Say hello") == "mocked hello"
"""


def test_pytest_httpx_mocks_of_the_provider_url_match_under_a_record_mode(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
):
    scrub(monkeypatch)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    mocked = (
        f"MOCKED = {json.dumps(chat_response('mocked hello'))!r}\nMOCKED = __import__('json').loads(MOCKED)\n"
    )
    pytester.makepyfile(test_agent=mocked + TESTS)
    reply = Reply(body=json.dumps(chat_response("Hello!")).encode())
    with FakeUpstream([reply]) as upstream:
        monkeypatch.setenv("ATTEST_OPENAI_UPSTREAM", upstream.url)
        result = pytester.runpytest_subprocess("--attest-record=once", "-p", "no:randomly")
        result.assert_outcomes(passed=3)
        assert len(upstream.requests) == 1  # only the recording test's call went upstream
    path = pytester.path / "tests" / "attest" / "fixtures" / "hello.attest.json"
    (recorded,) = fx.model_interactions(fx.read_fixture(path))
    assert recorded["request"]["json"]["messages"][0]["content"] == "Say hello"
