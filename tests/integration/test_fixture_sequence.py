"""The agent's path through a fixture: `attest fixture show --format mermaid`, `attest fixture list`, and
the re-recorded fixtures' diagrams in the pull-request comment."""

from __future__ import annotations

import json
import re
from pathlib import Path

from attest_toolkit.fixtures import document as fx
from attest_toolkit.fixtures.diff import changes_between_dirs
from attest_toolkit.fixtures.sequence import (
    MAX_STEPS,
    Call,
    Marked,
    Step,
    compare,
    label,
    mermaid,
    sequence,
    short_hash,
)
from attest_toolkit.normalize import Exchange
from attest_toolkit.report.build import build_report
from attest_toolkit.report.summary import render
from conftest import REPO, chat_request, chat_response, exchange, run_cli, write_fixture
from report_factory import make_miss, make_report, make_test, replay_facts
from upstream import bedrock_frame

EXAMPLE = REPO / "examples" / "fixtures" / "example.attest.json"


def tool_call(name: str, arguments: str, ident: str = "call_Ab12Cd34Ef56Gh78Ij90Kl12") -> dict:
    return {"id": ident, "type": "function", "function": {"name": name, "arguments": arguments}}


def agent_fixture(directory: Path, name: str, calls: list[tuple[str, str]], model: str = "gpt-4o") -> Path:
    """A model call that asks for `calls` (tool name, JSON arguments), then the model's answer."""
    asked = [tool_call(n, a, f"call_{i}Ab12Cd34Ef56Gh78Ij90Kl") for i, (n, a) in enumerate(calls)]
    first = chat_response(tool_calls=asked, model=f"{model}-2024-08-06") if calls else chat_response()
    exchanges = [exchange(chat_request("Refund O-1042", model=model), first)]
    if calls:
        exchanges.append(exchange(chat_request("Refund O-1042 (tools done)", model=model), chat_response()))
    return write_fixture(directory, name, exchanges)


def test_the_example_path_reads_model_call_tool_calls_and_answer():
    steps = sequence(fx.read_fixture(EXAMPLE))
    assert [(s.actor, s.call) for s in steps] == [
        ("model", "chat/completions gpt-4o-mini"),
        ("orders", "server/discover"),
        ("orders", "tools/call lookup_order"),
        ("model", "chat/completions gpt-4o-mini"),
        ("orders", "tools/list"),
    ]
    # the arguments the model asked for and those the tool call sent hash alike, and no value shows
    assert steps[0].asks[0].name == "lookup_order"
    assert steps[0].asks[0].args == steps[2].args
    assert "O-1042" not in repr(steps)


def test_fixture_show_prints_the_path_as_a_mermaid_sequence_diagram():
    done = run_cli(["fixture", "show", str(EXAMPLE), "--format", "mermaid"])
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[:4] == [
        "sequenceDiagram",
        "  participant A as agent",
        "  participant M as model",
        "  participant T1 as orders",
    ]
    assert "  A->>M: chat/completions gpt-4o-mini" in lines
    assert re.search(r"^  M-->>A: asks lookup_order \(args [0-9a-f]{7}\)$", done.stdout, re.M)
    assert re.search(r"^  A->>T1: tools/call lookup_order \(args [0-9a-f]{7}\)$", done.stdout, re.M)


ORDER = {"order": "O-1042"}
GEMINI_CALL = {
    "content": {"role": "model", "parts": [{"functionCall": {"name": "lookup_order", "args": ORDER}}]}
}
CONVERSE_CALL = {
    "toolUse": {"toolUseId": "tooluse_Ab12Cd34Ef56Gh78Ij90Kl", "name": "lookup_order", "input": ORDER}
}


def _bedrock_stream() -> Exchange:
    """A ConverseStream answer asking for lookup_order: its name at the block's start, its input in pieces."""
    start = {"toolUse": {"toolUseId": "tooluse_Ab12Cd34Ef56Gh78Ij90Kl", "name": "lookup_order"}}
    frames = [
        bedrock_frame("messageStart", {"role": "assistant"}),
        bedrock_frame("contentBlockStart", {"contentBlockIndex": 0, "start": start}),
        bedrock_frame(
            "contentBlockDelta", {"contentBlockIndex": 0, "delta": {"toolUse": {"input": '{"order":'}}}
        ),
        bedrock_frame(
            "contentBlockDelta", {"contentBlockIndex": 0, "delta": {"toolUse": {"input": '"O-1042"}'}}}
        ),
        bedrock_frame("contentBlockStop", {"contentBlockIndex": 0}),
        bedrock_frame("messageStop", {"stopReason": "tool_use"}),
        bedrock_frame("metadata", {"usage": {"inputTokens": 20, "outputTokens": 8, "totalTokens": 28}}),
    ]
    body = json.dumps({"messages": [{"role": "user", "content": [{"text": "Refund O-1042"}]}]}).encode()
    path = "/model/anthropic.claude-3-haiku-20240307-v1:0/converse-stream"
    return Exchange("POST", path, "", body, 200, [("content-type", "application/vnd.amazon.eventstream")],
                    b"".join(frames))  # fmt: skip


def test_gemini_and_bedrock_replies_show_the_tool_calls_they_ask_for(tmp_path: Path):
    gemini = exchange(
        {"contents": [{"role": "user", "parts": [{"text": "Refund O-1042"}]}]},
        {"candidates": [GEMINI_CALL]},
        path="/v1beta/models/gemini-2.5-flash:generateContent",
    )
    converse = exchange(
        {"messages": [{"role": "user", "content": [{"text": "Refund O-1042"}]}]},
        {"output": {"message": {"role": "assistant", "content": [CONVERSE_CALL]}}, "stopReason": "tool_use"},
        path="/model/anthropic.claude-3-haiku-20240307-v1:0/converse",
    )
    for provider, exchanges in (("gemini", [gemini]), ("bedrock", [converse, _bedrock_stream()])):
        doc = fx.read_fixture(write_fixture(tmp_path, provider, exchanges, provider))
        # each reply asks for the tool with the arguments' hash, whole or streamed in pieces
        assert [s.asks for s in sequence(doc)] == [(Call("lookup_order", short_hash(ORDER)),)] * len(
            exchanges
        )


def test_compare_marks_added_dropped_and_changed_arguments():
    base = [
        Step("model", "chat gpt-4o"),
        Step("orders", "tools/call lookup", "aaaaaaa"),
        Step("mail", "send"),
    ]
    head = [Step("model", "chat gpt-4o"), Step("orders", "tools/call lookup", "bbbbbbb"), Step("model", "x")]
    marked = compare(base, head)
    assert [(m.step.call, m.change) for m in marked] == [
        ("chat gpt-4o", "same"),
        ("tools/call lookup", "changed"),
        ("send", "dropped"),
        ("x", "added"),
    ]
    assert marked[1].note == "args aaaaaaa→bbbbbbb"
    diagram = mermaid(marked)
    assert "  A-xT2: send" in diagram  # a dropped call is drawn as a lost message
    assert "  Note over A,T1: changed (args aaaaaaa→bbbbbbb)" in diagram


def test_labels_from_a_fixture_cannot_escape_the_diagram_or_the_comment():
    hostile = "lookup```\n%%{init}%%;<img src=x onerror=alert(1)>#quot;: evil"
    cleaned = label(hostile)
    assert not set(cleaned) & set("`\n%{};<>#:\"'&")
    diagram = mermaid([Marked(Step(hostile, hostile, hostile), "same")])
    assert "```" not in diagram and "<" not in diagram and ";" not in diagram
    assert all(line.startswith(("sequenceDiagram", "  ")) for line in diagram.splitlines())


def test_a_long_path_is_cut_with_a_note_saying_how_many_steps_were_left_out():
    steps = [Marked(Step("model", f"call {n}"), "same") for n in range(MAX_STEPS + 7)]
    diagram = mermaid(steps)
    assert f"call {MAX_STEPS - 1}" in diagram and f"call {MAX_STEPS}" not in diagram
    assert diagram.endswith("  Note over A: 7 more steps not drawn")


def test_the_comment_draws_each_re_recorded_fixtures_path_base_against_head(tmp_path: Path):
    base, head = tmp_path / "base", tmp_path / "head"
    base.mkdir(), head.mkdir()
    agent_fixture(base, "refund", [("lookup_order", '{"order_id": "O-1042"}')])
    agent_fixture(head, "refund", [("lookup_order", '{"order_id": "O-2000"}'), ("notify", "{}")])
    changes = changes_between_dirs(base, head)
    comment = render(make_report(), "markdown", fixture_changes=changes)
    section = comment[comment.index("### The agent's path (1)") :]
    assert "<details><summary>refund: changed</summary>" in section
    diagram = section[section.index("```mermaid\n") + 11 : section.index("\n```\n")]
    assert diagram.startswith("sequenceDiagram\n")
    assert re.search(r"M-->>A: asks lookup_order \(args \w{7}\), notify \(args \w{7}\)", diagram)
    assert re.search(r"Note over A,M: changed \(reply asks lookup_order→lookup_order\+notify\)", diagram)
    assert "O-2000" not in comment and "O-1042" not in comment
    # the same path is data in the JSON summary, for other renderings
    rows = json.loads(render(make_report(), "json", fixture_changes=changes))["fixture_changes"][0]["path"]
    assert [r["change"] for r in rows] == ["changed", "same"]


def test_fixture_list_shows_age_calls_models_behind_aliases_tools_and_source(tmp_path: Path):
    agent_fixture(tmp_path, "refund", [("lookup_order", "{}")])
    path = agent_fixture(tmp_path, "hello", [])
    doc = json.loads(path.read_text())
    doc["source"]["recorded_at"] = "2026-01-01T00:00:00Z"
    doc["digest"] = fx.canonical_digest(doc)
    path.write_text(fx.dumps(doc))
    done = run_cli(["fixture", "list", "--fixtures-dir", str(tmp_path), "--format", "json"])
    assert done.returncode == 0, done.stderr
    rows = {row["name"]: row for row in json.loads(done.stdout)}
    assert rows["refund"]["models"] == ["gpt-4o → gpt-4o-2024-08-06", "gpt-4o → gpt-4o-mini-2024-07-18"]
    assert rows["refund"]["tools"] == ["lookup_order"]
    assert rows["refund"]["model_calls"] == 2 and rows["refund"]["source"] == "python agent.py"
    assert rows["hello"]["age_days"] >= 334 and rows["refund"]["age_days"] == 0
    table = run_cli(["fixture", "list", "--fixtures-dir", str(tmp_path)]).stdout.splitlines()
    assert table[0].split() == ["NAME", "AGE", "CALLS", "MODELS", "TOOLS", "SIZE", "SOURCE"]
    assert table[2].startswith("refund ") and " 0d " in table[2] and "lookup_order" in table[2]


def test_fixture_list_names_a_bad_file_in_one_line_and_exits_3(tmp_path: Path):
    agent_fixture(tmp_path, "good", [])
    (tmp_path / "broken.attest.json").write_text("{not json")
    done = run_cli(["fixture", "list", "--fixtures-dir", str(tmp_path)])
    assert done.returncode == 3
    assert "good" in done.stdout
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("attest: ") and "broken.attest.json" in line and "Traceback" not in done.stderr


def test_the_comment_draws_a_missed_fixtures_path_with_the_call_that_missed(tmp_path: Path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    directory = tmp_path / "tests" / "attest" / "fixtures"
    directory.mkdir(parents=True)
    agent_fixture(directory, "refund", [("lookup_order", "{}")])
    fixture = "tests/attest/fixtures/refund.attest.json"
    miss = make_miss(component="system")
    miss["fixture"] = fixture
    missed = make_test(
        "tests/test_r.py::test_r", "failed", replay=replay_facts(1, misses=1, miss=miss, fixtures=[fixture])
    )
    report = build_report([missed], egress={"mode": "off", "isolation_verified": False})
    comment = render(report, "markdown")
    section = comment[comment.index("### The agent's path (1)") :]
    assert "<details><summary>refund: missed at model call 2 in tests/test_r.py::test_r</summary>" in section
    diagram = section[section.index("```mermaid\n") + 11 : section.index("\n```\n")]
    lines = diagram.splitlines()
    second = lines.index("  A->>M: chat/completions gpt-4o")  # the first call was replayed...
    assert lines[second + 1 :].count("  A->>M: chat/completions gpt-4o") == 1
    assert "  Note over A,M: missed (system changed)" in lines  # ...the second one missed
