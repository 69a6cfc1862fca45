"""How the engine starts for a helper: `attest-engine serve` and `attest-engine replay --serve` run
without the CLI layer (typer), without aiohttp until a request needs it, and without loading the
system CA store, which only a live call needs; anything those forms do not take still gets the CLI's
help and usage errors."""

from __future__ import annotations

import importlib
import json
import os
import ssl
import subprocess
import sys
from pathlib import Path

import openai
import pytest
from conftest import chat_request, chat_response, clean_env, exchange, write_fixture

ENGINE = str(Path(sys.executable).parent / "attest-engine")


def imported(stderr: str) -> set[str]:
    """The modules a run imported, from its PYTHONPROFILEIMPORTTIME lines."""
    return {line.split("|")[-1].strip() for line in stderr.splitlines() if line.startswith("import time:")}


def engine_cli(args: list[str]) -> subprocess.CompletedProcess[str]:
    """The installed `attest-engine` script, as a helper or a user runs it."""
    return subprocess.run([ENGINE, *args], capture_output=True, text=True, env=clean_env(), timeout=120)


def start(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [ENGINE, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=clean_env(PYTHONPROFILEIMPORTTIME="1"),
    )


def test_serve_starts_without_typer_and_serves_sessions(fixtures_dir: Path) -> None:
    path = write_fixture(fixtures_dir, "t", [exchange(chat_request(), chat_response("served"))])
    proc = start("serve")
    assert proc.stdin is not None and proc.stdout is not None
    assert "ready" in json.loads(proc.stdout.readline())
    proc.stdin.write(json.dumps({"open": {"fixtures": [str(path)], "mode": "strict"}}) + "\n")
    proc.stdin.flush()
    opened = json.loads(proc.stdout.readline())
    client = openai.OpenAI(base_url=opened["env"]["OPENAI_BASE_URL"], api_key="x", max_retries=0)
    assert client.chat.completions.create(**chat_request()).choices[0].message.content == "served"
    proc.stdin.write(json.dumps({"close": opened["id"]}) + "\n")
    proc.stdin.flush()
    assert json.loads(proc.stdout.readline())["summary"]["replayed"] == 1
    _, stderr = proc.communicate("stop\n", timeout=30)
    assert proc.returncode == 0
    modules = imported(stderr)
    assert "attest_toolkit.replay.runner" in modules
    assert not {m for m in modules if m.split(".")[0] in ("typer", "click")}


def imported_around_ready() -> tuple[set[str], set[str]]:
    """The modules `serve` imported before its ready line and after it, until it read a stop line
    waiting on its input: its import lines and the ready line share one pipe, in the order written."""
    done = subprocess.run(
        [ENGINE, "serve"],
        input="stop\n",
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=clean_env(PYTHONPROFILEIMPORTTIME="1"),
        timeout=60,
    )
    assert done.returncode == 0, done.stdout
    before, ready, after = done.stdout.partition('{"ready"')
    assert ready
    return imported(before), imported(after)


def test_the_engine_is_ready_without_what_only_some_calls_need() -> None:
    # The engine's start is on every test run's critical path: orjson (and the uuid and platform it
    # imports) waits for the first key the engine computes itself, the guard's host lists for a call
    # around the replay, the temporary folder for a Vertex AI session's token file, difflib for a miss's
    # hints, datetime and secrets for recording.
    modules, _ = imported_around_ready()
    assert "attest_toolkit.replay.runner" in modules
    later = {"orjson", "uuid", "platform", "tempfile", "difflib", "datetime", "secrets"}
    later |= {"attest_toolkit.guard", "attest_toolkit.replay.bypass", "jsonschema_rs"}
    assert later.isdisjoint(modules)


def test_once_ready_the_engine_prepares_reading_a_fixture_before_any_open() -> None:
    # A fixture's first read compiles the schema's validator (about 10 ms): done while the runner
    # collects its tests, not in its first test's open.
    before, after = imported_around_ready()
    assert "jsonschema_rs" not in before
    assert "jsonschema_rs" in after


@pytest.mark.parametrize("given", ["nothing (/dev/null)", "a file of control lines"])
def test_serve_reads_its_control_lines_from_a_file_or_nothing(fixtures_dir: Path, given: str) -> None:
    # epoll refuses a regular file and /dev/null; the engine reads them through and stops at their end.
    path = write_fixture(fixtures_dir, "t", [exchange(chat_request(), chat_response("served"))])
    lines = fixtures_dir / "control.jsonl"
    lines.write_text(
        json.dumps({"open": {"fixtures": [str(path)], "mode": "strict"}}) + "\n", encoding="utf-8"
    )
    with open(os.devnull if given.startswith("nothing") else lines, encoding="utf-8") as stdin:
        done = subprocess.run(
            [ENGINE, "serve"], stdin=stdin, capture_output=True, text=True, env=clean_env(), timeout=60
        )
    assert (done.returncode, done.stderr) == (0, "")
    replies = [json.loads(line) for line in done.stdout.splitlines()]
    assert "ready" in replies[0]
    assert [sorted(r) for r in replies[1:]] == ([] if given.startswith("nothing") else [["env", "id"]])


def replay_then_stop(path: Path, requests: list[dict]) -> tuple[list[str], set[str]]:
    """Each request's answer (its text, or the miss's message) from a `serve` session with the official
    SDK, and the modules the engine imported by the time it stopped."""
    proc = start("serve")
    assert proc.stdin is not None and proc.stdout is not None
    assert "ready" in json.loads(proc.stdout.readline())
    proc.stdin.write(json.dumps({"open": {"fixtures": [str(path)], "mode": "strict"}}) + "\n")
    proc.stdin.flush()
    client = openai.OpenAI(base_url=json.loads(proc.stdout.readline())["env"]["OPENAI_BASE_URL"], api_key="x")
    answers = []
    for request in requests:
        try:
            answers.append(
                client.with_options(max_retries=0)
                .chat.completions.create(**request)
                .choices[0]
                .message.content
            )
        except openai.BadRequestError as exc:
            answers.append(exc.message)
    _, stderr = proc.communicate("stop\n", timeout=30)
    assert proc.returncode == 0
    return answers, imported(stderr)


def test_aiohttp_is_imported_only_when_a_request_first_needs_it(fixtures_dir: Path) -> None:
    path = write_fixture(fixtures_dir, "t", [exchange(chat_request(), chat_response("served"))])
    answers, modules = replay_then_stop(path, [chat_request()])
    assert answers == ["served"]
    assert not {m for m in modules if m.split(".")[0] == "aiohttp"}
    # A miss is the web layer's: aiohttp loads then, and the miss is answered as always.
    answers, modules = replay_then_stop(path, [chat_request("Something else")])
    assert answers[0].startswith("Error code: 400") and "replay miss" in answers[0]
    assert "aiohttp.web" in modules


def test_replay_serve_starts_without_typer(fixtures_dir: Path) -> None:
    write_fixture(fixtures_dir, "t", [exchange(chat_request(), chat_response("served"))])
    proc = start("replay", "--serve", "--name", "t", f"--fixtures-dir={fixtures_dir}", "--mode", "strict")
    assert proc.stdout is not None
    assert "OPENAI_BASE_URL" in json.loads(proc.stdout.readline())["env"]
    out, stderr = proc.communicate("stop\n", timeout=30)
    assert json.loads(out)["summary"]["misses"] == 0 and proc.returncode == 0
    assert not {m for m in imported(stderr) if m.split(".")[0] == "typer"}


def test_replay_serve_usage_errors_are_one_line_exit_3(fixtures_dir: Path) -> None:
    done = engine_cli(["replay", "--serve"])
    assert (done.returncode, done.stderr) == (
        3,
        "attest-engine: name a fixture with --name (or --fixture PATH)\n",
    )
    done = engine_cli(["replay", "--serve", "--name", "t", "--mode", "sometimes"])
    assert done.returncode == 3 and done.stderr.startswith(
        "attest-engine: --mode must be strict, auto or off"
    )
    # What the fast path does not take goes to the CLI: its help, and its usage errors.
    assert "--serve" in engine_cli(["replay", "--serve", "--help"]).stdout
    done = engine_cli(["replay", "--serve", "--bogus"])
    assert done.returncode == 3 and "No such option: --bogus" in done.stderr


SYSTEM_CAS = ssl.create_default_context().cert_store_stats()["x509_ca"]
PROBE = """
import asyncio
from attest_toolkit.proxy.ca_store import ca_store_deferred
from attest_toolkit.proxy.ca_store import aiohttp_imported, engine_process
engine_process()
with aiohttp_imported():  # as the engine's server does, at the first request that needs aiohttp
    from aiohttp import connector
from attest_toolkit.proxy.live import LiveForwarder
before = connector._SSL_CONTEXT_VERIFIED.cert_store_stats()["x509_ca"]
async def first_live_call():
    forwarder = LiveForwarder({})
    await forwarder.client()
    await forwarder.close()
asyncio.run(first_live_call())
print(before, connector._SSL_CONTEXT_VERIFIED.cert_store_stats()["x509_ca"])
"""


@pytest.mark.skipif(SYSTEM_CAS == 0, reason="this machine has no system CA store")
@pytest.mark.skipif(
    not hasattr(importlib.import_module("aiohttp.connector"), "_SSL_CONTEXT_VERIFIED"),
    reason="this aiohttp builds its TLS contexts at the first connection, not when it is imported",
)
def test_the_ca_store_is_loaded_when_a_call_first_goes_live() -> None:
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, env=clean_env())
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["0", str(SYSTEM_CAS)]
