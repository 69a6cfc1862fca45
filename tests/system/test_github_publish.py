"""`attest github publish` end to end: PyGithub against the local fake GitHub (tests/fake_github.py).

Each test names the part of GitHub's documented contract it relies on. Waiting is instant: the retry
policy's sleep records the waits and its clock is fixed.
"""

from __future__ import annotations

import json
import socket

import pytest
from attest_toolkit import __version__
from attest_toolkit.github import publisher
from attest_toolkit.github.event import PR_ARTIFACT
from attest_toolkit.github.publisher import MARKER
from attest_toolkit.pricing.table import TABLE
from fake_runner import parse_command
from github_harness import (
    FORK,
    HEAD,
    NOW,
    PR,
    REPO,
    TOKEN,
    Actions,
    fork_artifact,
    pr_event,
    report_file,
    row,
    workflow_run_event,
    writes,
)
from report_factory import make_report

pytest_plugins = ["github_harness"]  # the gh, waits and actions fixtures

# --- the sticky comment ---------------------------------------------------------------------------


def test_first_publish_creates_one_comment_whose_first_line_is_the_summary_line(actions: Actions) -> None:
    # Relies on: POST /repos/{o}/{r}/issues/{n}/comments creates a comment (201).
    report = report_file(actions.tmp, [row(1), row(2)])
    result = actions.publish(report, check_run=False)
    comments = actions.gh.comments(REPO, PR)
    assert len(comments) == 1
    body = comments[0]["body"]
    assert body.splitlines()[0] == "attest replay: 4 replayed · 0 live model calls · $0.00"
    assert body.rstrip("\n").endswith(MARKER)
    assert result.comment.action == "created"
    assert result.comment.url == comments[0]["html_url"]


def test_second_publish_of_the_same_report_sends_no_write(actions: Actions) -> None:
    report = report_file(actions.tmp, [row(1)])
    actions.publish(report, check_run=False)
    before = len(writes(actions.gh))
    result = actions.publish(report, check_run=False)
    assert result.comment.action == "unchanged"
    assert len(writes(actions.gh)) == before
    assert not actions.gh.requests("PATCH")


def test_a_changed_report_updates_the_comment_in_place(actions: Actions) -> None:
    # Relies on: PATCH /repos/{o}/{r}/issues/comments/{id} replaces the body.
    actions.publish(report_file(actions.tmp, [row(1)]), check_run=False)
    first = actions.gh.comments(REPO, PR)[0]
    result = actions.publish(
        report_file(actions.tmp, [row(1), row(2, "failed", message="boom")]), check_run=False
    )
    comments = actions.gh.comments(REPO, PR)
    assert [c["id"] for c in comments] == [first["id"]]
    assert "boom" in comments[0]["body"]
    assert result.comment.action == "updated"
    assert [r.path for r in actions.gh.requests("PATCH")] == [f"/repos/{REPO}/issues/comments/{first['id']}"]
    assert not actions.gh.requests("POST", "/comments")[1:]


def test_the_marker_is_found_on_page_three_of_the_comments(actions: Actions) -> None:
    # Relies on: comments are paginated (per_page at most 100) with a Link header rel="next".
    for i in range(230):
        actions.gh.add_comment(REPO, PR, f"review comment {i}")
    ours = actions.gh.add_comment(REPO, PR, f"old summary\n{MARKER}\n", login="github-actions[bot]")
    for i in range(10):
        actions.gh.add_comment(REPO, PR, f"later comment {i}")
    result = actions.publish(report_file(actions.tmp, [row(1)]), check_run=False)
    pages = [r.query.get("page", "1") for r in actions.gh.requests("GET", "/comments")]
    assert pages == ["1", "2", "3"]
    assert result.comment.action == "updated"
    assert not actions.gh.requests("POST")
    assert actions.gh.requests("PATCH")[0].path.endswith(f"/comments/{ours['id']}")


def test_duplicates_from_a_race_are_deleted_keeping_the_oldest(actions: Actions) -> None:
    # Relies on: DELETE /repos/{o}/{r}/issues/comments/{id} (204); comments list oldest first.
    oldest = actions.gh.add_comment(REPO, PR, f"summary A\n{MARKER}\n", login="github-actions[bot]")
    newer = actions.gh.add_comment(REPO, PR, f"summary B\n{MARKER}\n", login="github-actions[bot]")
    actions.gh.add_comment(REPO, PR, f"> {MARKER}\n> quoted by a reviewer")
    result = actions.publish(report_file(actions.tmp, [row(1)]), check_run=False)
    assert [r.path for r in actions.gh.requests("DELETE")] == [f"/repos/{REPO}/issues/comments/{newer['id']}"]
    remaining = actions.gh.comments(REPO, PR)
    assert next(c["id"] for c in remaining) == oldest["id"]
    assert len(remaining) == 2  # the reviewer's quote is not ours
    assert result.comment.deleted == 1


def test_a_comment_created_while_another_run_creates_one_leaves_only_the_oldest(actions: Actions) -> None:
    # Two publishes racing both find no comment and both create one; the oldest must survive.
    actions.gh.race_next_create(f"the other run's summary\n{MARKER}\n")
    result = actions.publish(report_file(actions.tmp, [row(1)]), check_run=False)
    comments = actions.gh.comments(REPO, PR)
    assert len(comments) == 1
    assert comments[0]["body"].startswith("attest replay: 2 replayed · 0 live model calls")
    assert len(actions.gh.requests("DELETE")) == 1
    assert result.comment.url == comments[0]["html_url"]


def test_a_huge_report_is_trimmed_under_the_comment_limit_and_never_refused(actions: Actions) -> None:
    # Relies on: a body over 65,536 characters is a 422 "Validation Failed".
    tests = [row(i, "failed", miss=f"miss {i}: " + "the system prompt changed " * 40) for i in range(300)]
    result = actions.publish(report_file(actions.tmp, tests), check_run=False)
    body = actions.gh.comments(REPO, PR)[0]["body"]
    assert len(body) <= 65_536
    assert body.rstrip("\n").endswith(MARKER)
    assert body.splitlines()[0].startswith("attest replay: 600 replayed")
    assert "test_0`" in body and "test_299`" not in body  # misses first, the rest cut
    assert not [r for r in actions.gh.state.requests if r.status == 422]
    assert result.comment.action == "created"


def test_the_safety_trim_keeps_a_body_under_the_limit_whatever_the_renderer_gives() -> None:
    body = publisher.comment_body("line\n```\n" + "x" * 70 + "\n" * 1 + ("y" * 99 + "\n") * 2000)
    assert len(body) <= 65_536
    assert body.count("```") % 2 == 0
    assert "65,536-character comment limit" in body
    assert body.rstrip("\n").endswith(MARKER)


def test_the_comment_ends_with_the_toolkit_and_the_date_of_its_prices(actions: Actions) -> None:
    # A reviewer reading a cost sees how old the prices behind it are (data/prices.json's date).
    actions.publish(report_file(actions.tmp, [row(1, "passed")]))
    body = actions.gh.comments(REPO, PR)[0]["body"]
    date = json.loads(TABLE.read_text(encoding="utf-8"))["date"]
    assert body.rstrip("\n").splitlines()[-2:] == [
        f"<sub>attest-toolkit {__version__} · model prices of {date}</sub>",
        MARKER,
    ]


def test_the_token_never_reaches_the_comment_or_the_summary(actions: Actions) -> None:
    report = report_file(actions.tmp, [row(1, "failed", message=f"auth failed with {TOKEN}")])
    actions.publish(report)
    assert TOKEN not in actions.gh.comments(REPO, PR)[0]["body"]
    assert TOKEN not in actions.summary.read_text()
    assert TOKEN not in json.dumps([r.body for r in actions.gh.state.requests])
    assert TOKEN not in actions.stdout.getvalue()


def test_no_credential_in_a_report_file_reaches_anything_published(actions: Actions) -> None:
    # A report written by another tool (or edited) is redacted once, before anything is rendered or
    # escaped: the comment, the step summary, the annotations in the log and the check run.
    key, echoed = "sk-proj-" + "Pub_l1sh_K3y_" * 2, "hdr-0b8f2c9e7d"
    failed = row(1, "failed", miss=f"replay miss: X-Custom-Auth: {echoed}", message=f"assert {key!r}")
    failed["id"] = f"tests/test_agent.py::test_1[{key}]"
    failed["replay"]["miss"]["location"]["file"] = f"agent/{key}.py"
    path = actions.tmp / "report.json"
    path.write_text(json.dumps(make_report([failed, row(2)])), encoding="utf-8")
    actions.publish(path)
    published = [
        actions.gh.comments(REPO, PR)[0]["body"],
        actions.summary.read_text(),
        actions.stdout.getvalue(),
        json.dumps([r.body for r in actions.gh.state.requests]),
    ]
    for text in published:
        assert key not in text and echoed not in text
        assert key.replace("_", "\\_") not in text  # nor the key as markdown escaping would write it


# --- read-only tokens and forks -------------------------------------------------------------------


def test_a_read_only_token_skips_the_comment_writes_the_summary_and_exits_0(
    actions: Actions, capsys: pytest.CaptureFixture[str]
) -> None:
    # Relies on: a read-only GITHUB_TOKEN gets 403 "Resource not accessible by integration" on writes.
    actions.gh.read_only(TOKEN)
    report = report_file(actions.tmp, [row(1, "failed", miss="the messages changed")])
    code, out, err = actions.cli("--report", str(report), capsys=capsys)
    assert code == 0, err
    assert actions.gh.comments(REPO, PR) == []
    assert actions.summary.read_text().startswith("attest replay: 2 replayed · 0 live model calls · $0.00")
    notices = [line for line in out.splitlines() if line.startswith("::notice::")]
    assert len(notices) == 1 and "read-only" in notices[0]
    assert (actions.tmp / "attest-pr" / PR_ARTIFACT).is_file()
    assert actions.outputs()["verdict"] == "blocked"
    assert "Traceback" not in err


def test_a_fork_pull_request_writes_the_artifact_and_never_calls_the_api(
    actions: Actions, capsys: pytest.CaptureFixture[str]
) -> None:
    # Relies on: pull_request events from forks run with a read-only token (head repo != base repo).
    actions.set_event(pr_event(head_repo=FORK), "pull_request")
    report = report_file(actions.tmp, [row(1)])
    code, out, _ = actions.cli("--report", str(report), capsys=capsys)
    assert code == 0
    assert actions.gh.state.requests == []
    artifact = json.loads((actions.tmp / "attest-pr" / PR_ARTIFACT).read_text())
    assert artifact == {
        "version": 1,
        "pr_number": PR,
        "head_sha": HEAD,
        "repository": REPO,
        "head_repository": FORK,
        "report": "attest-report.json",
    }
    assert json.loads((actions.tmp / "attest-pr" / "attest-report.json").read_text()) == json.loads(
        report.read_text()
    )
    assert "fork" in out and actions.summary.is_file()
    assert actions.outputs()["replayed"] == "2"


def test_from_artifact_publishes_to_the_pull_request_it_names(
    actions: Actions, capsys: pytest.CaptureFixture[str]
) -> None:
    # Relies on: workflow_run events carry no PR number for forks; GET /pulls/{n} gives the head sha.
    actions.gh.add_pull(REPO, 8, "b" * 40)
    directory = fork_artifact(actions, capsys, [row(1, "failed", miss="tools changed")])
    code, _out, err = actions.cli("--from-artifact", str(directory), capsys=capsys)
    assert code == 0, err
    assert len(actions.gh.comments(REPO, PR)) == 1
    assert actions.gh.comments(REPO, 8) == []
    run = next(iter(actions.gh.state.check_runs.values()))
    assert run["head_sha"] == HEAD and run["conclusion"] == "failure"
    assert f"/blob/{HEAD}/agent/core.py#L41" in actions.gh.comments(REPO, PR)[0]["body"]
    assert actions.outputs()["comment-url"] == actions.gh.comments(REPO, PR)[0]["html_url"]


def test_from_artifact_judges_the_forks_report_by_the_base_policy_into_the_verdict_file(
    actions: Actions, capsys: pytest.CaptureFixture[str]
) -> None:
    directory = fork_artifact(actions, capsys, [row(1, "failed", miss="tools changed")])
    verdict_file = actions.tmp / "verdict" / "attest-verdict.json"

    code, _out, err = actions.cli(
        "--from-artifact", str(directory), "--verdict-file", str(verdict_file), capsys=capsys
    )

    assert code == 0, err
    verdict = json.loads(verdict_file.read_text(encoding="utf-8"))
    assert (verdict["verdict"], verdict["exit_code"]) == ("blocked", 1)
    assert verdict["policy_source"].startswith("built-in defaults (no policy file on ")
    assert verdict["counts"]["misses"] == 1
    assert actions.outputs()["verdict"] == "blocked"


def test_from_artifact_does_not_comment_when_the_pull_request_moved_on(
    actions: Actions, capsys: pytest.CaptureFixture[str]
) -> None:
    directory = fork_artifact(actions, capsys, [row(1)])
    actions.gh.add_pull(REPO, PR, "c" * 40)  # a newer push
    code, out, _ = actions.cli("--from-artifact", str(directory), capsys=capsys)
    assert code == 0
    assert actions.gh.comments(REPO, PR) == []
    assert "moved on" in out


def test_an_artifact_of_another_commit_is_bad_input(
    actions: Actions, capsys: pytest.CaptureFixture[str]
) -> None:
    directory = fork_artifact(actions, capsys, [row(1)])
    actions.set_event(workflow_run_event(head_sha="f" * 40), "workflow_run")
    code, _out, err = actions.cli("--from-artifact", str(directory), capsys=capsys)
    assert code == 3
    assert err.count("\n") == 1 and "downloaded" in err and "head_sha" in err
    assert actions.gh.state.requests == []


def test_a_malformed_artifact_is_one_line_exit_3(
    actions: Actions, capsys: pytest.CaptureFixture[str]
) -> None:
    directory = actions.tmp / "downloaded"
    directory.mkdir()
    (directory / PR_ARTIFACT).write_text(
        json.dumps({"version": 1, "pr_number": "7; rm -rf /", "head_sha": HEAD, "repository": REPO})
    )
    code, _, err = actions.cli("--from-artifact", str(directory), capsys=capsys)
    assert code == 3
    assert err.count("\n") == 1 and PR_ARTIFACT in err and "pr_number" in err


# --- rate limits, errors and retries ---------------------------------------------------------------


def test_rate_limits_are_retried_honoring_their_headers(actions: Actions, waits: list[float]) -> None:
    # Relies on: primary limit = 403 + x-ratelimit-remaining 0 + x-ratelimit-reset (epoch seconds);
    # secondary = 403/429 with retry-after seconds.
    actions.gh.primary_rate_limit(1, reset=int(NOW) + 30)
    actions.gh.secondary_rate_limit(1, retry_after=7, status=429)
    actions.gh.secondary_rate_limit(1, retry_after=5, status=403)
    result = actions.publish(report_file(actions.tmp, [row(1)]), check_run=False)
    assert waits == [31.0, 7.0, 5.0]
    assert result.comment.action == "created"
    assert result.warnings == []


def test_a_secondary_limit_without_headers_waits_at_least_a_minute(
    actions: Actions, waits: list[float]
) -> None:
    # Relies on: "Otherwise, wait for at least one minute before retrying" (secondary rate limits).
    actions.gh.fail_next(1, 403, message="You have exceeded a secondary rate limit.")
    actions.gh.primary_rate_limit(1, reset=int(NOW) + 10, status=429)
    result = actions.publish(report_file(actions.tmp, [row(1)]), check_run=False)
    assert waits == [60.0, 11.0]
    assert result.comment.action == "created"


def test_retry_after_wins_over_the_reset_header(actions: Actions, waits: list[float]) -> None:
    actions.gh.fail_next(
        1,
        429,
        {"retry-after": "3", "x-ratelimit-remaining": "0", "x-ratelimit-reset": str(int(NOW) + 50)},
        "API rate limit exceeded for user.",
    )
    actions.publish(report_file(actions.tmp, [row(1)]), check_run=False)
    assert waits == [3.0]


def test_server_errors_are_retried_with_exponential_backoff(actions: Actions, waits: list[float]) -> None:
    actions.gh.fail_next(3, 502, message="Bad Gateway")
    result = actions.publish(report_file(actions.tmp, [row(1)]), check_run=False)
    assert waits == [2.0, 4.0, 8.0]
    assert result.comment.action == "created"


def test_exhausted_retries_warn_and_exit_0(
    actions: Actions, waits: list[float], capsys: pytest.CaptureFixture[str]
) -> None:
    actions.gh.fail_next(100, 503, message="Service Unavailable")
    report = report_file(actions.tmp, [row(1, "failed", miss="model changed")])
    code, out, err = actions.cli("--report", str(report), capsys=capsys)
    assert code == 0, err
    warnings = [line for line in out.splitlines() if line.startswith("::warning::")]
    assert warnings and all("verdict is unchanged" in w for w in warnings)
    assert "503" in warnings[0]
    assert len(waits) == 8  # two steps (comment, check run), four retries each
    assert actions.outputs()["verdict"] == "blocked"
    assert actions.summary.is_file()


def test_an_unreachable_github_warns_and_exits_0(
    actions: Actions, waits: list[float], capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        actions.env["GITHUB_API_URL"] = f"http://127.0.0.1:{closed.getsockname()[1]}"
        code, out, err = actions.cli("--report", str(report_file(actions.tmp, [row(1)])), capsys=capsys)
    assert code == 0, err
    assert [line.startswith("::warning::") for line in out.splitlines()].count(True) == 2
    assert "ConnectionError" in out
    assert waits == [2.0, 4.0, 8.0, 16.0] * 2
    assert actions.outputs()["comment-url"] == ""


def test_a_check_run_refused_after_the_comment_degrades_without_losing_the_comment(actions: Actions) -> None:
    # Relies on: a token without checks:write gets 403 "Resource not accessible by integration".
    actions.gh.fail_next(1, 403, message="Resource not accessible by integration", methods={"POST"})
    result = actions.publish(report_file(actions.tmp, [row(1)]), comment=False)
    assert result.check_run_url is None
    assert "read-only" in result.skipped
    assert (actions.tmp / "attest-pr" / PR_ARTIFACT).is_file()
    assert result.warnings == []


def test_an_unwritable_output_file_is_one_line_exit_3(
    actions: Actions, capsys: pytest.CaptureFixture[str]
) -> None:
    actions.env["GITHUB_OUTPUT"] = str(actions.tmp / "missing-dir" / "output")
    code, _, err = actions.cli(
        "--report", str(report_file(actions.tmp, [row(1)])), "--no-comment", "--no-check-run", capsys=capsys
    )
    assert code == 3
    assert err.count("\n") == 1 and "missing-dir" in err


def test_a_reset_far_away_gives_up_at_once_instead_of_blocking_the_job(
    actions: Actions, waits: list[float]
) -> None:
    actions.gh.primary_rate_limit(5, reset=int(NOW) + 3600)
    result = actions.publish(report_file(actions.tmp, [row(1)]), check_run=False)
    assert waits == []
    assert result.comment is None
    assert "3601s" in result.warnings[0]


# --- annotations, check run, outputs ---------------------------------------------------------------


def test_annotations_are_printed_most_important_first(actions: Actions) -> None:
    tests = [
        row(1, live=2),
        row(2, "not_evaluated"),
        row(3, "failed", message="assert 1 == 2"),
        row(4, "failed", miss="messages[1].content changed"),
    ]
    tests[1]["reason"] = "replay_miss"
    actions.publish(report_file(actions.tmp, tests), comment=False, check_run=False)
    commands = [
        parse_command(line) for line in actions.stdout.getvalue().splitlines() if line.startswith("::")
    ]
    levels = [c[0] for c in commands]
    assert levels == ["error", "error", "warning", "notice"]
    assert commands[0][1] == {
        "file": "agent/core.py",
        "line": "44",
        "title": "attest replay miss (messages): tests/test_agent.py::test_4",
    }
    assert commands[0][2] == "messages[1].content changed"
    assert commands[1][1]["file"] == "tests/test_agent.py" and commands[1][2] == "assert 1 == 2"


def test_a_report_of_every_outcome_annotates_misses_then_failures(actions: Actions) -> None:
    actions.publish(report_file(actions.tmp, None), comment=False, check_run=False)
    lines = [line for line in actions.stdout.getvalue().splitlines() if line.startswith("::")]
    where = [(name, props["file"], props.get("line")) for name, props, _ in map(parse_command, lines)]
    assert where == [
        ("error", "agent/refund.py", "42"),  # the strict miss, where the agent made the call
        ("error", "agent/refund.py", "30"),  # the auto miss that left its test not evaluated
        ("error", "tests/test_refund.py", "20"),  # the test that errored
    ]


def test_120_annotations_go_to_the_check_run_50_per_request(actions: Actions) -> None:
    # Relies on: at most 50 annotations per request; updates append to those already there.
    tests = [row(i, "failed", miss=f"miss {i}") for i in range(120)]
    result = actions.publish(report_file(actions.tmp, tests), comment=False)
    sent = actions.gh.requests(path_contains="/check-runs")
    assert [(r.method, len(r.body["output"]["annotations"])) for r in sent] == [
        ("POST", 50),
        ("PATCH", 50),
        ("PATCH", 20),
    ]
    run = next(iter(actions.gh.state.check_runs.values()))
    assert len(run["annotations"]) == 120
    assert run["head_sha"] == HEAD  # the PR's head, not the merge commit GITHUB_SHA
    assert run["conclusion"] == "failure"
    assert run["output"]["title"] == "240 replayed · 0 live model calls · $0.00 · 120 missed · 120 failed"
    assert result.check_run_url


def test_outputs_for_later_steps(actions: Actions) -> None:
    actions.output.write_text("earlier=1\n")
    report = report_file(actions.tmp, [row(1, live=3), row(2, "failed", miss="tools changed")])
    result = actions.publish(report)
    outputs = actions.outputs()
    assert outputs == {
        "earlier": "1",
        "replayed": "4",
        "live": "3",
        "cost": "0.03",
        "misses": "1",
        "verdict": "blocked",
        "comment-url": result.comment.url,
        "summary": "4 replayed · 3 live model calls · $0.03 · 1 missed · 1 failed",
    }


def test_a_passing_run_concludes_the_check_run_with_success(actions: Actions) -> None:
    actions.publish(report_file(actions.tmp, [row(1)]))
    run = next(iter(actions.gh.state.check_runs.values()))
    assert run["conclusion"] == "success"
    assert actions.outputs()["verdict"] == "pass"


def test_switches_turn_each_part_off(actions: Actions) -> None:
    actions.publish(
        report_file(actions.tmp, [row(1, "failed", miss="m")]),
        comment=False,
        check_run=False,
        summary=False,
        annotations=False,
    )
    assert actions.gh.state.requests == []
    assert not actions.summary.exists()
    assert actions.stdout.getvalue() == ""
    assert actions.outputs()["misses"] == "1"


def test_without_a_token_the_api_is_skipped_with_a_notice(actions: Actions) -> None:
    del actions.env["GITHUB_TOKEN"]
    result = actions.publish(report_file(actions.tmp, [row(1)]))
    assert actions.gh.state.requests == []
    assert "no GitHub token" in result.skipped


# --- bad input ------------------------------------------------------------------------------------


def test_malformed_event_json_is_one_line_exit_3(
    actions: Actions, capsys: pytest.CaptureFixture[str]
) -> None:
    actions.event.write_text('{"pull_request": {"number": 7,')
    code, _out, err = actions.cli("--report", str(report_file(actions.tmp, [row(1)])), capsys=capsys)
    assert code == 3
    assert err.count("\n") == 1
    assert str(actions.event) in err and "malformed event JSON" in err
    assert "Traceback" not in err
    assert actions.gh.state.requests == [] and not actions.summary.exists()


def test_a_malformed_report_is_one_line_exit_3(actions: Actions, capsys: pytest.CaptureFixture[str]) -> None:
    bad = actions.tmp / "report.json"
    bad.write_text('{"version": 2, "tests": []}')
    code, _, err = actions.cli("--report", str(bad), capsys=capsys)
    assert code == 3
    assert err.count("\n") == 1 and str(bad) in err
    assert actions.gh.state.requests == []


def test_no_report_at_all_is_a_usage_error(actions: Actions, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = actions.cli(capsys=capsys)
    assert code == 3 and "--report" in err


# --- what the change re-recorded ------------------------------------------------------------------


def test_the_comment_says_what_the_change_re_recorded(actions: Actions) -> None:
    from conftest import chat_request, chat_response, exchange, git, write_fixture

    fixtures = actions.tmp / "tests" / "attest" / "fixtures"
    git(actions.tmp, "init", "-q", "-b", "main")
    write_fixture(fixtures, "t1", [exchange(chat_request("one"), chat_response("1"))])
    git(actions.tmp, "add", "-A")
    git(actions.tmp, "commit", "-qm", "base")
    write_fixture(fixtures, "t1", [exchange(chat_request("one, reworded"), chat_response("1"))])
    report = report_file(actions.tmp, [row(1)])

    actions.publish(report, check_run=False, base_ref="main")

    body = actions.gh.comments(REPO, PR)[0]["body"]
    assert "What the re-recorded fixtures in this change altered:" in body
    section = body[body.index("What the re-recorded fixtures") :]
    assert "t1" in section and "messages" in section


def test_an_unreadable_base_costs_only_that_section(actions: Actions) -> None:
    report = report_file(actions.tmp, [row(1)])  # the working directory is no git repository
    result = actions.publish(report, check_run=False, base_ref="main")
    assert result.comment is not None and result.comment.action == "created"
    assert "cannot compare fixtures with main" in actions.stdout.getvalue()


# --- comment: on-change, and the HTML report's link -------------------------------------------------


def test_on_change_posts_no_comment_for_a_run_with_nothing_to_tell(actions: Actions) -> None:
    # Relies on: GET /repos/{o}/{r}/issues/{n}/comments lists the comments (no sticky one yet).
    result = actions.publish(
        report_file(actions.tmp, [row(1), row(2)]), check_run=False, comment_on_change=True
    )
    assert actions.gh.comments(REPO, PR) == []
    assert result.comment is None
    assert "comment not posted: nothing to tell a reviewer (comment: on-change)" in actions.stdout.getvalue()
    assert not actions.gh.requests("POST")


def test_on_change_posts_when_there_is_a_miss_and_keeps_an_existing_comment_true(actions: Actions) -> None:
    missed = report_file(actions.tmp, [row(1, "failed", miss="replay miss: messages changed")], "missed.json")
    actions.publish(missed, check_run=False, comment_on_change=True)
    [comment] = actions.gh.comments(REPO, PR)
    assert "messages changed" in comment["body"]
    # the miss is fixed: nothing to tell, but the comment that said "miss" must not stay wrong
    result = actions.publish(report_file(actions.tmp, [row(1)]), check_run=False, comment_on_change=True)
    [comment] = actions.gh.comments(REPO, PR)
    assert result.comment.action == "updated" and "messages changed" not in comment["body"]


def test_the_comment_links_the_html_report(actions: Actions) -> None:
    url = "https://github.com/owner/repo/actions/runs/42/artifacts/7"
    actions.publish(report_file(actions.tmp, [row(1)]), check_run=False, report_url=url)
    body = actions.gh.comments(REPO, PR)[0]["body"]
    assert body.splitlines()[1] == f"- [The full report (HTML)]({url})"


def test_a_report_url_that_could_add_markup_is_one_line_exit_3(
    actions: Actions, capsys: pytest.CaptureFixture[str]
) -> None:
    report = report_file(actions.tmp, [row(1)])
    code, _, err = actions.cli(
        "--report", str(report), "--report-url", "https://x.test/a)[b](javascript:", capsys=capsys
    )
    assert code == 3 and err.count("\n") == 1 and "--report-url" in err
    assert actions.gh.state.requests == []
