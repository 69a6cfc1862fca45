"""`attest capture --refresh`: confirm, re-run with the recorded flags, replace only on success; and a
capture or refresh killed with SIGKILL leaves the previous fixture as it was."""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import os
import pty
import signal
import subprocess
from pathlib import Path

import pytest
import scripted
from attest_toolkit.capture.refresh import RefreshPlan, confirm_refresh, quote_command
from attest_toolkit.credentials.scan import Secrets
from attest_toolkit.errors import UsageError
from attest_toolkit.fixtures import document as fx
from attest_toolkit.normalize import Templater
from capture_helpers import GatedUpstream, agent, attest_argv, capture_env, run_attest
from conftest import chat_request, chat_response, clean_env, exchange
from upstream import FakeUpstream, Reply


def answer(text: str) -> Reply:
    return Reply(body=json.dumps(chat_response(text)).encode())


def with_dir(fixtures_dir: Path, command: str, *args: str) -> list[str]:
    return [command, "--fixtures-dir", str(fixtures_dir), *args]


def attest(fixtures_dir: Path, upstream_url: str, command: str, *args: str, stdin=subprocess.DEVNULL):
    argv = with_dir(fixtures_dir, command, *args)
    return run_attest(*argv, env=capture_env(upstream_url), cwd=fixtures_dir.parent, stdin=stdin)


def record(fixtures_dir: Path, text: str, *args: str) -> bytes:
    """Capture `capture_agent.py chat ARGS` answering `text`; return the fixture's bytes."""
    with FakeUpstream([answer(text)]) as upstream:
        proc = attest(fixtures_dir, upstream.url, "capture", "--name", "t", *args, "--", *agent("chat"))
    assert proc.returncode == 0, proc.stderr
    return (fixtures_dir / "t.attest.json").read_bytes()


def recorded(fixtures_dir: Path, text: str, command: list[str], expect_fail: bool = False) -> bytes:
    """A fixture as a capture of COMMAND answering TEXT would have left it; return its bytes."""
    templater = Templater(Secrets.of([]))
    interaction = templater.record(
        exchange(chat_request("Say hello", system=None), chat_response(text)), "openai"
    )
    source = fx.new_source(command, expect_fail=expect_fail, exit_code=1 if expect_fail else 0)
    path = fx.fixture_path("t", fixtures_dir)
    fx.write_fixture(path, fx.new_fixture("t", source, [interaction]), Secrets.of([]))
    return path.read_bytes()


def recorded_text(fixtures_dir: Path) -> str:
    (interaction,) = fx.model_interactions(fx.read_fixture(fixtures_dir / "t.attest.json"))
    return interaction["response"]["body"]["json"]["choices"][0]["message"]["content"]


def test_refresh_with_yes_prints_the_command_reruns_it_and_replaces_the_fixture(fixtures_dir):
    before = record(fixtures_dir, "first answer")
    with FakeUpstream([answer("second answer")]) as upstream:
        proc = attest(fixtures_dir, upstream.url, "capture", "--refresh", "t", "--yes")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    # Stored with `python` for the interpreter's absolute path, and re-run with attest's own python.
    stored = ["python", *agent("chat")[1:]]
    assert lines[0] == f"attest capture: recorded command: {quote_command(stored)}"
    assert lines[1] == "attest capture: flags: (none)"
    assert lines[-1] == f"attest capture: 1 call recorded; wrote {fixtures_dir / 't.attest.json'}"
    assert proc.stdout == "chat answer: second answer\n"
    assert recorded_text(fixtures_dir) == "second answer"
    assert (fixtures_dir / "t.attest.json").read_bytes() != before
    assert oct((fixtures_dir / "t.attest.json").stat().st_mode & 0o777) == "0o600"


def test_a_refresh_that_records_the_same_calls_leaves_the_file_byte_for_byte(fixtures_dir):
    record(fixtures_dir, "same answer")
    path = fixtures_dir / "t.attest.json"
    doc = fx.read_fixture(path)
    fx.write_fixture(path, {**doc, "source": {**doc["source"], "recorded_at": "2020-01-02T03:04:05Z"}})
    before = path.read_bytes()
    with FakeUpstream([answer("same answer")]) as upstream:
        proc = attest(fixtures_dir, upstream.url, "capture", "--refresh", "t", "--yes")
    assert proc.returncode == 0, proc.stderr
    assert (
        proc.stderr.splitlines()[-1]
        == f"attest capture: 1 call recorded; {fixtures_dir / 't.attest.json'} unchanged"
    )
    assert path.read_bytes() == before  # recorded_at included
    assert fx.read_fixture(path)["source"]["recorded_at"] == "2020-01-02T03:04:05Z"


def a_second_later(reply: Reply) -> Reply:
    """The same answer made a second later: every `created` / `created_at` one more."""
    later = str(scripted.CREATED + 1).encode()

    def shift(raw: bytes) -> bytes:
        if raw[:2] == b"\x1f\x8b":
            return gzip.compress(shift(gzip.decompress(raw)), mtime=0)
        return raw.replace(str(scripted.CREATED).encode(), later)

    events = [shift(e) for e in reply.events] if reply.events is not None else None
    return Reply(status=reply.status, headers=reply.headers, body=shift(reply.body), events=events)


def test_a_refresh_whose_answers_differ_only_in_their_timestamps_leaves_the_file_byte_for_byte(fixtures_dir):
    path = fixtures_dir / "t.attest.json"
    with FakeUpstream(scripted.flow_replies()) as upstream:
        done = attest(fixtures_dir, upstream.url, "capture", "--name", "t", "--", *agent("flow"))
    assert done.returncode == 0, done.stderr
    before = path.read_bytes()
    assert str(scripted.CREATED) not in before.decode()  # chat's `created`, responses' `created_at`
    later = [a_second_later(reply) for reply in scripted.flow_replies()]
    with FakeUpstream(later) as upstream:
        done = attest(fixtures_dir, upstream.url, "capture", "--refresh", "t", "--yes")
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines()[-1].endswith(f"{path} unchanged")
    assert path.read_bytes() == before  # recorded_at included


def test_refresh_without_a_terminal_and_without_yes_refuses_and_runs_nothing(fixtures_dir):
    before = recorded(fixtures_dir, "first answer", agent("chat"))
    with FakeUpstream([answer("second answer")]) as upstream:
        proc = attest(fixtures_dir, upstream.url, "capture", "--refresh", "t")
        assert upstream.requests == []
    assert proc.returncode == 3
    assert proc.stdout == ""
    assert proc.stderr.splitlines()[-1] == (
        f"attest: {fixtures_dir / 't.attest.json'}: refusing to re-run the recorded command without "
        "confirmation: no terminal to ask at; review the command above, then pass --yes"
    )
    assert (fixtures_dir / "t.attest.json").read_bytes() == before


def test_a_refresh_whose_command_now_fails_leaves_the_fixture_byte_for_byte(fixtures_dir, tmp_path):
    flag = tmp_path / "broken"
    before = recorded(fixtures_dir, "first answer", agent("chat", "--fail-if", str(flag)))
    flag.touch()
    with FakeUpstream([answer("second answer")]) as upstream:
        proc = attest(fixtures_dir, upstream.url, "capture", "--refresh", "t", "--yes")
        assert len(upstream.requests) == 1
    assert proc.returncode == 1
    assert proc.stderr.splitlines()[-1] == (
        f"attest: {fixtures_dir / 't.attest.json'}: the command exited 1 (use --expect-fail to record a run "
        "that is meant to fail); nothing written; the existing fixture is unchanged"
    )
    assert (fixtures_dir / "t.attest.json").read_bytes() == before
    assert sorted(p.name for p in fixtures_dir.iterdir()) == ["t.attest.json"]


def test_expect_fail_is_carried_through_a_refresh(fixtures_dir, tmp_path):
    flag = tmp_path / "broken"
    flag.touch()
    recorded(fixtures_dir, "first answer", agent("chat", "--fail-if", str(flag)), expect_fail=True)
    with FakeUpstream([answer("second answer")]) as upstream:
        still_failing = attest(fixtures_dir, upstream.url, "capture", "--refresh", "t", "--yes")
    assert still_failing.returncode == 0, still_failing.stderr
    assert "attest capture: flags: --expect-fail" in still_failing.stderr.splitlines()
    source = fx.read_fixture(fixtures_dir / "t.attest.json")["source"]
    assert source["flags"] == {"expect_fail": True} and source["exit_code"] == 1
    assert recorded_text(fixtures_dir) == "second answer"

    before = (fixtures_dir / "t.attest.json").read_bytes()
    flag.unlink()  # the command passes now, which a run recorded with --expect-fail must not
    with FakeUpstream([answer("third answer")]) as upstream:
        passing = attest(fixtures_dir, upstream.url, "capture", "--refresh", "t", "--yes")
    assert passing.returncode == 1
    assert "the command exited 0 but --expect-fail says it must fail" in passing.stderr
    assert (fixtures_dir / "t.attest.json").read_bytes() == before


@pytest.mark.parametrize(("reply", "replaced"), [("y\n", True), ("n\n", False), ("\n", False)])
def test_at_a_terminal_refresh_asks_before_it_runs(fixtures_dir, reply, replaced):
    before = recorded(fixtures_dir, "first answer", agent("chat"))
    master, slave = pty.openpty()
    os.write(master, reply.encode())  # the terminal holds the line until the prompt reads it
    try:
        with FakeUpstream([answer("second answer")]) as upstream:
            proc = attest(fixtures_dir, upstream.url, "capture", "--refresh", "t", stdin=slave)
            assert len(upstream.requests) == (1 if replaced else 0)
    finally:
        os.close(slave)
        os.close(master)
    prompt = f"Re-run this command and overwrite {fixtures_dir / 't.attest.json'}? [y/N] "
    assert prompt in proc.stderr
    after = (fixtures_dir / "t.attest.json").read_bytes()
    if replaced:
        assert proc.returncode == 0, proc.stderr
        assert recorded_text(fixtures_dir) == "second answer"
    else:
        assert proc.returncode == 3
        assert proc.stderr.endswith("not confirmed; nothing ran and the fixture is unchanged\n")
        assert after == before


def test_refresh_of_a_missing_or_commandless_fixture_exits_3(fixtures_dir):
    missing = run_attest("capture", "--refresh", "nope", "--yes", "--fixtures-dir", str(fixtures_dir),
                         env=clean_env(), cwd=fixtures_dir.parent)  # fmt: skip
    assert missing.returncode == 3
    assert missing.stderr.startswith(f"attest: {fixtures_dir / 'nope.attest.json'}: no such fixture")
    assert len(missing.stderr.splitlines()) == 1

    source = {**fx.new_source([]), "imported_from": "cassettes/test_chat.yaml"}
    fx.write_fixture(fixtures_dir / "imported.attest.json", fx.new_fixture("imported", source, []))
    imported = run_attest("capture", "--refresh", "imported", "--yes", "--fixtures-dir", str(fixtures_dir),
                          env=clean_env(), cwd=fixtures_dir.parent)  # fmt: skip
    assert imported.returncode == 3
    assert "records no command to re-run (imported from cassettes/test_chat.yaml)" in imported.stderr


def test_the_printed_command_shows_control_characters_instead_of_obeying_them():
    argv = ["python", "agent.py", "--note", "it's fine", "a\x1b[2K\rb", "tab\there", "\u202eevil"]
    assert quote_command(argv) == (
        "python agent.py --note 'it'\"'\"'s fine' $'a\\x1b[2K\\rb' $'tab\\there' $'\\u202eevil'"
    )


def test_confirmation_needs_a_terminal_or_yes():
    plan = RefreshPlan("t", None, Path("t.attest.json"), ["python", "a.py"], True)
    out = io.StringIO()
    with pytest.raises(UsageError):
        confirm_refresh(plan, False, io.StringIO("y\n"), out)  # a StringIO is no terminal
    assert (
        out.getvalue()
        == "attest capture: recorded command: python a.py\nattest capture: flags: --expect-fail\n"
    )
    confirm_refresh(plan, True, io.StringIO(""), io.StringIO())


# --- SIGKILL in the middle of a run ---------------------------------------------------------------


@pytest.mark.parametrize("how", ["capture", "refresh"])
def test_sigkill_mid_run_leaves_the_previous_fixture_and_no_temp_file(fixtures_dir, how):
    before = recorded(fixtures_dir, "first answer", agent("chat"))
    args = (
        ["capture", "--refresh", "t", "--yes"]
        if how == "refresh"
        else ["capture", "--name", "t", "--", *agent("chat")]
    )
    with GatedUpstream([answer("second answer")]) as upstream:
        env = capture_env(upstream.url)
        argv = attest_argv(*with_dir(fixtures_dir, *args))
        proc = subprocess.Popen(argv, env=env, cwd=fixtures_dir.parent, start_new_session=True,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
        try:
            assert upstream.arrived.wait(timeout=120), "the agent's call never reached the upstream"
            os.kill(proc.pid, signal.SIGKILL)
            assert proc.wait(timeout=60) == -signal.SIGKILL
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)  # the agent, orphaned by the kill
            proc.wait()
    assert (fixtures_dir / "t.attest.json").read_bytes() == before
    assert sorted(p.name for p in fixtures_dir.iterdir()) == ["t.attest.json"]
