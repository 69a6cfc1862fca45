"""`attest capture --refresh NAME --only-misses`: replay what still matches, go live only for the
misses, keep every unchanged interaction byte for byte, drop what the run no longer uses, print the cost.

The agent is the capture agent's three flows through the official openai and anthropic SDKs; a changed
tool (CAPTURE_AGENT_OFFSET) changes the second request of the chat and responses flows only."""

from __future__ import annotations

import gzip
import io
import json
import re
import textwrap
import threading
from collections import Counter
from pathlib import Path

import pytest
from attest_toolkit.capture.only_misses import ReplayFirst
from attest_toolkit.capture.proxy import RecordingApp
from attest_toolkit.capture.run import CaptureFailed, conclude
from attest_toolkit.credentials.scan import Secrets
from attest_toolkit.fixtures import document as fx
from attest_toolkit.progress import ProgressLine
from capture_helpers import agent, capture_env, run_attest
from conftest import chat_request, chat_response, exchange, git, write_fixture
from scripted import chat_text_stream, flow_replies, responses_answer
from upstream import FakeUpstream, Reply, Seen

CHANGED = {"CAPTURE_AGENT_OFFSET": "1"}


def attest(repo: Path, upstream_url: str, command: str, *args: str, **env: str):
    argv = [command, "--fixtures-dir", "fixtures", *args]
    return run_attest(*argv, env=capture_env(upstream_url, **env), cwd=repo)


def recorded_flow(repo: Path) -> Path:
    """The flow captured and committed in a git repository: the fixture's path."""
    with FakeUpstream(flow_replies()) as upstream:
        proc = attest(repo, upstream.url, "capture", "--name", "flow", "--", *agent("flow"))
    assert proc.returncode == 0, proc.stderr
    git(repo, "init", "-q")
    git(repo, "add", "fixtures")
    git(repo, "commit", "-q", "-m", "record")
    return repo / "fixtures" / "flow.attest.json"


def as_in_file(item: dict) -> str:
    """How an interaction is serialized inside a fixture: three levels deep (channels, model, list)."""
    return textwrap.indent(json.dumps(item, indent=2, sort_keys=True, ensure_ascii=False), " " * 6)


def changed_lines(repo: Path) -> tuple[Counter, Counter]:
    """The lines `git diff` removes and adds."""
    diff = git(repo, "diff", "-U0", "--", "fixtures").splitlines()
    removed = Counter(line[1:] for line in diff if line.startswith("-") and not line.startswith("---"))
    added = Counter(line[1:] for line in diff if line.startswith("+") and not line.startswith("+++"))
    return removed, added


def stamps(text: str) -> Counter:
    """The lines of what a re-record always changes: the digest and when it was recorded."""
    return Counter(line for line in text.splitlines() if re.match(r'\s*"(digest|recorded_at)":', line))


def test_only_misses_replays_the_rest_and_keeps_each_unchanged_interaction_byte_for_byte(tmp_path):
    path = recorded_flow(tmp_path)
    before_text = path.read_text(encoding="utf-8")
    before = fx.model_interactions(fx.read_fixture(path))
    assert len(before) == 6

    with FakeUpstream([chat_text_stream(), responses_answer()]) as upstream:
        proc = attest(
            tmp_path, upstream.url, "capture", "--refresh", "flow", "--only-misses", "--yes", **CHANGED
        )
    assert proc.returncode == 0, proc.stderr
    # Only the two changed requests went to the provider; the chat one carries the tool call id that
    # replay served for the first (matching) call, so the provider sees one conversation.
    assert [r.path for r in upstream.requests] == ["/v1/chat/completions", "/v1/responses"]
    sent = json.loads(upstream.requests[0].body)
    assert sent["messages"][2]["content"] == "2869462"
    assert sent["messages"][2]["tool_call_id"] == sent["messages"][1]["tool_calls"][0]["id"]

    lines = proc.stderr.splitlines()
    (cost,) = [line for line in lines if line.startswith("attest capture: live calls: ")]
    # gpt-4o-mini is in the price table, gpt-5.5 is not.
    assert re.fullmatch(
        r"attest capture: live calls: 2 live model calls · \$0\.0000\d\d \(\+1 unpriced\), "
        r"priced from the built-in table of .*",
        cost,
    )
    assert lines[-1] == (
        "attest capture: 4 replayed, 2 recorded live (1 OTLP request accepted, not stored), "
        f"2 unused recordings dropped; wrote {Path('fixtures') / 'flow.attest.json'}"
    )

    after_text = path.read_text(encoding="utf-8")
    after = fx.model_interactions(fx.read_fixture(path))
    assert len(after) == 6  # the two old recordings were replaced, not kept beside the new ones
    for position in (0, 2, 4, 5):  # unchanged: the same bytes, where they were
        assert after[position] == before[position]
        assert as_in_file(before[position]) in before_text
        assert as_in_file(before[position]) in after_text
    for position in (1, 3):
        assert as_in_file(before[position]) not in after_text
    # The new chat request refers to the replayed call's id by its placeholder, as a capture would.
    chat = after[1]["request"]["json"]["messages"]
    assert (
        chat[2]["tool_call_id"]
        == chat[1]["tool_calls"][0]["id"]
        == before[1]["request"]["json"]["messages"][2]["tool_call_id"]
    )

    removed, added = changed_lines(tmp_path)
    old_lines = Counter(as_in_file(before[1]).splitlines() + as_in_file(before[3]).splitlines())
    new_lines = Counter(as_in_file(after[1]).splitlines() + as_in_file(after[3]).splitlines())
    assert not removed - old_lines - stamps(before_text)  # the diff touches only the two changed ones
    assert not added - new_lines - stamps(after_text)

    with FakeUpstream([]) as upstream:  # the refreshed fixture replays the changed agent offline
        replay = attest(
            tmp_path,
            upstream.url,
            "replay",
            "--name",
            "flow",
            "--mode",
            "strict",
            "--",
            *agent("flow"),
            **CHANGED,
        )
    assert replay.returncode == 0, replay.stderr
    assert "attest replay: 6 replayed · 0 live model calls · $0.00" in replay.stdout
    assert upstream.requests == []


def test_only_misses_with_nothing_missed_calls_nothing_and_leaves_the_file_byte_for_byte(tmp_path):
    path = recorded_flow(tmp_path)
    before = path.read_bytes()
    with FakeUpstream([]) as upstream:
        proc = attest(tmp_path, upstream.url, "capture", "--refresh", "flow", "--only-misses", "--yes")
    assert proc.returncode == 0, proc.stderr
    assert upstream.requests == []
    assert proc.stderr.splitlines()[-1] == (
        "attest capture: 6 replayed, 0 recorded live (1 OTLP request accepted, not stored); "
        f"{Path('fixtures') / 'flow.attest.json'} unchanged"
    )
    assert path.read_bytes() == before


def echoing(seen: Seen) -> Reply | None:
    """The Responses API's second answer, naming the previous response the request sent, as the real
    API does (a partial refresh sent the id replay served, a full one the id the provider made)."""
    previous = json.loads(seen.body or b"{}").get("previous_response_id")
    if seen.path != "/v1/responses" or previous is None:
        return None
    answer = responses_answer()
    doc = {**json.loads(gzip.decompress(answer.body)), "previous_response_id": previous}
    return Reply(headers=answer.headers, body=gzip.compress(json.dumps(doc).encode(), mtime=0))


def test_a_full_refresh_of_unchanged_traffic_after_a_partial_one_leaves_the_file_byte_for_byte(tmp_path):
    path = recorded_flow(tmp_path)
    with FakeUpstream([chat_text_stream()], check=echoing) as upstream:
        partial = attest(
            tmp_path, upstream.url, "capture", "--refresh", "flow", "--only-misses", "--yes", **CHANGED
        )
    assert partial.returncode == 0, partial.stderr
    before = path.read_bytes()
    # The same agent again, every call live: the provider answers as it did.
    replies = [reply for i, reply in enumerate(flow_replies()) if i != 3]  # the fourth: `echoing`'s
    with FakeUpstream(replies, check=echoing) as upstream:
        full = attest(tmp_path, upstream.url, "capture", "--refresh", "flow", "--yes", **CHANGED)
    assert full.returncode == 0, full.stderr
    assert len(upstream.requests) == 6
    assert full.stderr.splitlines()[-1].endswith(f"{Path('fixtures') / 'flow.attest.json'} unchanged")
    assert path.read_bytes() == before


def test_only_misses_is_a_refresh_flag(tmp_path):
    proc = run_attest(
        "capture",
        "--name",
        "x",
        "--only-misses",
        "--",
        "true",
        env=capture_env("http://127.0.0.1:9"),
        cwd=tmp_path,
    )
    assert proc.returncode == 3
    assert proc.stderr.strip() == "attest: --only-misses only applies to --refresh"


def test_a_partial_refresh_writes_nothing_over_a_fixture_changed_while_it_ran(fixtures_dir):
    path = write_fixture(fixtures_dir, "t", [exchange(chat_request("Say hello"), chat_response("Hello!"))])
    base = ReplayFirst(path, Secrets.of([]))
    app = RecordingApp(Secrets.of([]), {}, ProgressLine(io.StringIO(), live=False), base=base)
    base.entries.extend(fx.model_interactions(base.doc))  # the run replayed the one call
    doc = fx.read_fixture(path)
    fx.write_fixture(path, {**doc, "source": {**doc["source"], "recorded_at": "2020-01-02T03:04:05Z"}})
    meanwhile = path.read_bytes()  # another writer (a second pytest worker) changed the file
    with pytest.raises(CaptureFailed, match="the fixture changed while this refresh ran"):
        conclude(app, fx.new_source(["pytest", "t.py::t"]), "t", path, 0, False)
    assert path.read_bytes() == meanwhile


def test_fixture_writers_take_turns(fixtures_dir):
    path = fixtures_dir / "t.attest.json"
    entered = threading.Event()

    def writer() -> None:
        with fx.locked(path):
            entered.set()

    with fx.locked(path):
        thread = threading.Thread(target=writer)
        thread.start()
        assert not entered.wait(0.5)  # held off while the lock is held
    assert entered.wait(30)
    thread.join()
    assert list(fixtures_dir.iterdir()) == []  # no lock file left behind
