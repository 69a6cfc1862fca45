"""Attacks on what the pull-request comment, the job summary and the check run claim.

Everything in a report comes from the pull request: its test ids, messages, paths and fixture names
are the attacker's. These tests publish reports full of hostile strings and check, with a CommonMark +
GFM renderer (markdown-it-py's gfm-like preset: tables, strikethrough, autolinks), that nothing in them
becomes markup.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from attest_toolkit.github.links import blob_links
from attest_toolkit.github.publisher import MARKER
from attest_toolkit.report.summary import render
from github_harness import (
    HEAD,
    PR,
    REPO,
    TOKEN,
    Actions,
    fork_artifact,
    pr_event,
    report_file,
    workflow_run_event,
    writes,
)
from markdown_it import MarkdownIt
from markdown_it.token import Token
from report_factory import make_miss, make_report, make_test, replay_facts

pytest_plugins = ["github_harness"]  # the gh, waits and actions fixtures

CANARY = "octocat"
HOSTILE = [
    f"# Heading @{CANARY}\n\n## second",
    f"<img src=x onerror=alert(1)> <details><summary>{CANARY}</summary>",
    f"</td></tr></table><b>{CANARY}</b>",
    f"[click](https://evil.example/{CANARY}) ![img](https://evil.example/{CANARY}.png)",
    f"https://evil.example/{CANARY} www.{CANARY}.example mail@{CANARY}.example",
    f"@{CANARY} please approve, cc @acme/admins #1",
    f"a | b | {CANARY} |\n|---|---|",
    f"line one\r\n\r\n- item {CANARY}\n> quote\n1. list\n---\n",
    f"{MARKER}\n{MARKER}",
    f"` `` ``` {CANARY} ```` `",
    f"```\n{CANARY}\n```",
    f"\\`{CANARY}\\` trailing backslash \\",
    f"**bold** _em_ ~~{CANARY}~~ &lt;b&gt; &#60;script&#62; &amp;",
    f"\u2028{CANARY}\u2029\x0b\x0c\x85 <!-- {CANARY} -->",
]
BENIGN = "plain words"


def rows(strings: list[str]) -> list[dict[str, Any]]:
    """One failed test, one miss and one not-evaluated test per string, every text field the string."""
    tests = []
    for i, s in enumerate(strings):
        miss = make_miss(s, "messages", f"agent/{s}.py", 40 + i)
        facts = replay_facts(1, misses=1, miss=miss, fixtures=[f"tests/attest/fixtures/{s}.attest.json"])
        tests.append(make_test(f"tests/{s}.py::test_fail[{s}]", "failed", line=i + 1, message=s))
        tests.append(
            make_test(f"tests/{s}.py::test_miss[{s}]", "failed", line=i + 1, message=s, replay=facts)
        )
        tests.append(make_test(f"tests/{s}.py::test_ne[{s}]", "not_evaluated", line=i + 1, reason=s))
    return tests


def fixture_changes(strings: list[str]) -> list[dict[str, Any]]:
    changed = {
        "change": "changed",
        "head_index": 0,
        "base_index": 0,
        "components": ["messages"],
        "response_changed": False,
    }
    return [
        {"name": s, "status": "changed", "interactions": [{**changed, "method": "POST", "path": f"/v1/{s}"}]}
        for s in strings
    ]


MD = MarkdownIt("gfm-like")
INERT = {"code_inline", "fence", "code_block"}  # tokens whose content is shown, never interpreted


def tree(markdown: str) -> list[tuple[Any, ...]]:
    """The element tree: every block and inline token but plain text, with its nesting and link target."""
    shape: list[tuple[Any, ...]] = []

    def visit(tokens: list[Token], depth: int) -> None:
        for t in tokens:
            if t.type in ("text", "text_special"):
                continue
            href = t.attrGet("href")
            target = str(href).split("/blob/")[0] if href else None
            shape.append((depth, t.type, t.tag, t.nesting, target, t.info if t.type == "fence" else None))
            visit(t.children or [], depth + 1)

    visit(MD.parse(markdown), 0)
    return shape


def plain_text(markdown: str) -> str:
    """What the renderer shows as text outside code: where a mention or a bare URL would be live."""
    out: list[str] = []

    def visit(tokens: list[Token]) -> None:
        for t in tokens:
            if t.type in ("text", "text_special", "html_inline", "html_block"):
                out.append(t.content)
            visit(t.children or [])

    visit(MD.parse(markdown))
    return "\n".join(out)


def published(actions: Actions, strings: list[str], name: str) -> dict[str, str]:
    """The comment, the job summary and the check run summary of a report built from `strings`."""
    actions.summary.write_text("")
    actions.gh.state.comments[(REPO, PR)] = []
    actions.gh.state.check_runs.clear()
    actions.publish(report_file(actions.tmp, rows(strings), name))
    check_run = next(iter(actions.gh.state.check_runs.values()))
    return {
        "comment": actions.gh.comments(REPO, PR)[0]["body"],
        "job summary": actions.summary.read_text(),
        "check run": check_run["output"]["summary"],
    }


def test_hostile_report_strings_leave_the_element_tree_of_every_output_unchanged(actions: Actions) -> None:
    hostile = published(actions, HOSTILE, "hostile.json")
    benign = published(actions, [f"{BENIGN} {i}" for i in range(len(HOSTILE))], "benign.json")
    for where, markdown in hostile.items():
        assert tree(markdown) == tree(benign[where]), where
        assert CANARY not in plain_text(markdown), where
    links = [t.attrGet("href") for t in MD.parse(hostile["comment"]) for t in (t.children or [])]
    targets = [str(h) for h in links if h]
    assert targets and all(h.startswith(f"https://github.com/{REPO}/blob/{HEAD}/") for h in targets)


def test_a_report_cannot_plant_the_sticky_marker(actions: Actions) -> None:
    body = published(actions, HOSTILE, "hostile.json")["comment"]
    assert [line.strip() for line in body.splitlines()].count(MARKER) == 1
    assert body.splitlines()[-1] == MARKER


def test_fixture_names_and_paths_are_inert_too() -> None:
    def markdown(strings: list[str]) -> str:
        return render(
            make_report(rows(strings[:1])),
            "markdown",
            links=blob_links(REPO, HEAD),
            fixture_changes=fixture_changes(strings),
        )

    hostile = markdown(HOSTILE)
    assert tree(hostile) == tree(markdown([f"{BENIGN} {i}" for i in range(len(HOSTILE))]))
    assert CANARY not in plain_text(hostile)


# --- whose comment is edited ------------------------------------------------------------------------


def test_another_users_comment_with_the_marker_is_never_edited_or_deleted(actions: Actions) -> None:
    # The attacker pastes the marker (as its last line, as ours ends) into their own comment, twice.
    planted = [
        actions.gh.add_comment(REPO, PR, f"All checks passed, merge away\n{MARKER}\n", login="mallory"),
        actions.gh.add_comment(REPO, PR, f"0 live model calls\n{MARKER}\n", login="mallory"),
    ]
    before = [dict(c) for c in planted]
    result = actions.publish(report_file(actions.tmp, [make_test("tests/a.py::t", "failed", message="x")]))

    comments = actions.gh.comments(REPO, PR)
    assert comments[:2] == before  # untouched: same body, same updated_at, not deleted
    assert len(comments) == 3 and comments[2]["user"]["login"] == "github-actions[bot]"
    assert result.comment is not None and result.comment.action == "created"
    assert not [
        r for r in actions.gh.requests() if r.method in ("PATCH", "DELETE") and "/comments/" in r.path
    ]


def test_a_race_duplicate_by_someone_else_is_not_deleted(actions: Actions) -> None:
    # Just before our comment is created, another user posts one that looks like a summary: the
    # duplicate clean-up (keep the oldest) must not keep theirs and delete ours.
    forged = f"forged summary\n{MARKER}\n"
    actions.gh.race_next_create(forged, login="mallory")
    result = actions.publish(report_file(actions.tmp, [make_test("tests/a.py::t")]), check_run=False)
    comments = actions.gh.comments(REPO, PR)
    assert [(c["user"]["login"], c["body"] == forged) for c in comments] == [
        ("mallory", True),
        ("github-actions[bot]", False),
    ]
    assert result.comment is not None and result.comment.url == comments[1]["html_url"]
    assert result.comment.deleted == 0


def test_a_personal_token_finds_its_comment_by_its_own_login(actions: Actions) -> None:
    # GET /user names a PAT's user; the Actions bot's comment is then someone else's.
    actions.gh.user_token(TOKEN, "release-bot")
    bot = actions.gh.add_comment(REPO, PR, f"old\n{MARKER}\n", login="github-actions[bot]")
    mine = actions.gh.add_comment(REPO, PR, f"old\n{MARKER}\n", login="release-bot")
    result = actions.publish(report_file(actions.tmp, [make_test("tests/a.py::t")]), check_run=False)
    comments = actions.gh.comments(REPO, PR)
    assert result.comment is not None and result.comment.action == "updated"
    assert comments[0] == bot and comments[1]["id"] == mine["id"] and comments[1]["body"] != "old"


# --- the fork publish flow (workflow_run + --from-artifact) -----------------------------------------


def failing_rows() -> list[dict[str, Any]]:
    return [
        make_test("tests/a.py::t", "failed", message="assert refund == 10", replay=replay_facts(1, live=2))
    ]


def check_run(actions: Actions) -> dict[str, Any]:
    return next(iter(actions.gh.state.check_runs.values()))


def test_a_fork_report_whose_summary_contradicts_its_rows_is_refused(
    actions: Actions, capsys: pytest.CaptureFixture[str]
) -> None:
    directory = fork_artifact(actions, capsys, failing_rows())
    report = directory / "attest-report.json"
    doc = json.loads(report.read_text())
    doc["summary"]["outcomes"].update(failed=0, passed=1)  # "all passed", "0 live model calls"
    doc["summary"]["replay"]["live"] = 0
    report.write_text(json.dumps(doc))

    code, _, err = actions.cli("--from-artifact", str(directory), capsys=capsys)

    assert code == 3
    assert err.count("\n") == 1 and "attest-report.json" in err and "contradicts" in err
    assert writes(actions.gh) == []


def test_a_gate_run_that_failed_is_never_published_as_success(
    actions: Actions, capsys: pytest.CaptureFixture[str]
) -> None:
    # The fork's report says everything passed; GitHub says its gate run failed.
    directory = fork_artifact(actions, capsys, [make_test("tests/a.py::t")])
    actions.set_event(workflow_run_event(conclusion="failure"), "workflow_run")
    code, _, err = actions.cli("--from-artifact", str(directory), capsys=capsys)
    assert code == 0, err
    assert check_run(actions)["conclusion"] == "failure"
    assert "The gate run concluded `failure`" in actions.gh.comments(REPO, PR)[0]["body"]


@pytest.mark.parametrize("missing", ["head_sha", "conclusion"])
def test_an_event_without_the_gate_runs_head_sha_or_conclusion_is_refused(
    actions: Actions, capsys: pytest.CaptureFixture[str], missing: str
) -> None:
    directory = fork_artifact(actions, capsys, [make_test("tests/a.py::t")])
    event = workflow_run_event()
    del event["workflow_run"][missing]
    actions.set_event(event, "workflow_run")
    code, _, err = actions.cli("--from-artifact", str(directory), capsys=capsys)
    assert code == 3
    assert err.count("\n") == 1 and f"workflow_run.{missing}" in err
    assert writes(actions.gh) == []


def test_the_fork_report_is_judged_by_the_base_repositorys_policy_from_its_default_branch(
    actions: Actions, capsys: pytest.CaptureFixture[str]
) -> None:
    # The fork's checkout, if the workflow made one, holds a policy that allows everything.
    directory = fork_artifact(actions, capsys, failing_rows())
    (actions.tmp / ".attest").mkdir()
    (actions.tmp / ".attest" / "policy.yml").write_text("failures: allow\nmax_live_calls: 100\n")
    actions.gh.add_file(REPO, ".attest/policy.yml", "failures: block\nmax_live_calls: 0\n")

    code, _, err = actions.cli("--from-artifact", str(directory), capsys=capsys)

    assert code == 0, err
    assert check_run(actions)["conclusion"] == "failure"
    body = actions.gh.comments(REPO, PR)[0]["body"]
    assert f"`{REPO}@main:.attest/policy.yml`" in body.splitlines()[4]
    assert actions.outputs()["verdict"] == "blocked"


def test_without_a_policy_on_the_default_branch_the_comment_says_built_in_defaults(
    actions: Actions, capsys: pytest.CaptureFixture[str]
) -> None:
    directory = fork_artifact(actions, capsys, [make_test("tests/a.py::t")])
    (actions.tmp / ".attest").mkdir()
    (actions.tmp / ".attest" / "policy.yml").write_text("failures: allow\n")
    code, _, err = actions.cli("--from-artifact", str(directory), capsys=capsys)
    assert code == 0, err
    assert (
        "`built-in defaults (no policy file on acme/agent's default branch)`"
        in (actions.gh.comments(REPO, PR)[0]["body"])
    )


# --- GitHub's published contract ------------------------------------------------------------------


def test_the_check_run_summary_is_cut_in_utf8_bytes(actions: Actions) -> None:
    # Under 65,535 characters once trimmed, but two bytes each: GitHub counts bytes and would refuse it.
    tests = [make_test(f"tests/a.py::t{i}", "failed", message="é" * 1400) for i in range(60)]
    result = actions.publish(report_file(actions.tmp, tests), comment=False)
    assert result.warnings == []
    summary = check_run(actions)["output"]["summary"]
    assert len(summary.encode("utf-8")) <= 65_535
    assert summary.rstrip().endswith("see the job summary for the rest.")


def test_annotation_messages_are_cut_in_bytes_and_titles_at_255_characters(actions: Actions) -> None:
    miss = make_miss("é" * 40_000, "messages", "agent/core.py", 41)
    test = make_test("tests/a.py::" + "t" * 300, "failed", replay=replay_facts(1, misses=1, miss=miss))
    result = actions.publish(report_file(actions.tmp, [test]), comment=False)
    assert result.warnings == []
    [annotation] = check_run(actions)["annotations"]
    assert len(annotation["message"].encode("utf-8")) <= 64 * 1024
    assert annotation["message"].startswith("éé") and len(annotation["title"]) == 255


def test_a_check_run_without_html_url_is_reported_without_one(actions: Actions) -> None:
    actions.gh.null_urls = True  # GitHub's description of a check run allows a null html_url
    result = actions.publish(report_file(actions.tmp, [make_test("tests/a.py::t")]), comment=False)
    assert result.warnings == [] and not result.check_run_url
    assert "check run created: (GitHub gave no URL)" in actions.stdout.getvalue()
    assert actions.outputs()["verdict"] == "pass"


def subdirectory_report(actions: Actions) -> Path:
    """Tests run in `services/agent` of the repository (the action's working-directory)."""
    from conftest import git

    git(actions.tmp, "init", "-q", "-b", "main")
    work = actions.tmp / "services" / "agent"
    work.mkdir(parents=True)
    actions.monkeypatch.chdir(work)
    miss = make_miss("tools changed", "tools", "agent/core.py", 41)
    tests = [make_test("tests/test_a.py::t", "failed", line=7, replay=replay_facts(1, misses=1, miss=miss))]
    return report_file(work, tests)


def test_annotations_and_links_are_relative_to_the_repository_root_from_a_subdirectory(
    actions: Actions,
) -> None:
    actions.publish(subdirectory_report(actions))

    [annotation] = check_run(actions)["annotations"]
    assert annotation["path"] == "services/agent/agent/core.py"
    assert "file=services/agent/agent/core.py,line=41" in actions.stdout.getvalue()
    body = actions.gh.comments(REPO, PR)[0]["body"]
    assert f"/blob/{HEAD}/services/agent/agent/core.py#L41)" in body


def test_a_fork_run_in_a_subdirectory_carries_its_prefix_to_the_publish_workflow(
    actions: Actions, capsys: pytest.CaptureFixture[str]
) -> None:
    report = subdirectory_report(actions)
    env = dict(actions.env)
    actions.set_event(pr_event(head_repo="mallory/agent"), "pull_request")
    code, _, err = actions.cli(
        "--report", str(report), "--artifact-dir", str(actions.tmp / "dl"), capsys=capsys
    )
    assert code == 0, err
    actions.env = env
    actions.set_event(workflow_run_event(), "workflow_run")
    actions.monkeypatch.chdir(actions.tmp)

    code, _, err = actions.cli("--from-artifact", str(actions.tmp / "dl"), capsys=capsys)

    assert code == 0, err
    [annotation] = check_run(actions)["annotations"]
    assert annotation["path"] == "services/agent/agent/core.py"


def test_the_fake_refuses_what_githubs_openapi_description_refuses(gh: Any) -> None:
    import requests

    def post(body: dict[str, Any]) -> requests.Response:
        headers = {"Authorization": f"Bearer {TOKEN}"}
        return requests.post(f"{gh.url}/repos/{REPO}/check-runs", json=body, headers=headers, timeout=10)

    line = {"path": "a.py", "start_line": 1, "end_line": 1, "annotation_level": "failure", "message": "m"}
    output = {"title": "t", "summary": "s"}
    assert post({"name": "attest", "head_sha": HEAD, "output": output}).status_code == 201
    assert post({"name": "attest", "output": output}).status_code == 422  # head_sha is required
    assert post({"name": "attest", "head_sha": HEAD, "conclusion": "passed"}).status_code == 422
    many = {**output, "annotations": [line] * 51}
    assert post({"name": "attest", "head_sha": HEAD, "output": many}).status_code == 422
    wide = {**output, "summary": "é" * 40_000}  # 40,000 characters, 80,000 bytes
    refused = post({"name": "attest", "head_sha": HEAD, "output": wide})
    assert refused.status_code == 422 and "output/summary" in refused.json()["message"]
