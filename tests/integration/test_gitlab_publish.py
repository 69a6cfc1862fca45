"""`attest ci publish` on GitLab CI against the fake GitLab REST API v4 (tests/fake_gitlab.py says
what it reproduces and where GitLab documents it): the sticky merge-request note, whose it is, pages,
rate limits, the size limit, redaction and inert markdown, and the pipelines that get no note."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import requests
from attest_toolkit.forge.sticky import MARKER
from attest_toolkit.forge.verdict_file import judge, write_verdict
from attest_toolkit.gitlab.client import RetryPolicy
from attest_toolkit.gitlab.notes import NOTE_LIMIT, note_body
from attest_toolkit.gitlab.publish import NoteOptions, publish_step
from attest_toolkit.gitlab.step import GitLabStep
from attest_toolkit.report.build import write_report
from attest_toolkit.report.policy import load_policy
from conftest import clean_env, run_cli
from fake_gitlab import FakeGitLab
from markdown_it import MarkdownIt
from markdown_it.token import Token
from report_factory import make_miss, make_report, make_test, replay_facts

PROJECT, PATH, IID = 42, "acme/agent", 7
SHA = "c3" * 20
TOKEN = "glpat-test-token-not-real-0001"
BOT, OTHER = 11, 12  # the token's user, someone else
NOW = 1_700_000_000.0


def row(
    n: int, outcome: str = "failed", *, miss: str | None = "the system prompt changed", live: int = 0
) -> dict[str, Any]:
    facts = replay_facts(
        2,
        live=live,
        misses=1 if miss else 0,
        miss=make_miss(miss, "messages", "agent/core.py", 40 + n) if miss else None,
    )
    return make_test(f"tests/test_agent.py::test_{n}", outcome, line=10 + n, replay=facts)


class Job:
    """A GitLab CI job's environment, its dotenv report and log, with the fake as the API."""

    def __init__(self, tmp: Path, gl: FakeGitLab, capsys: pytest.CaptureFixture[str]) -> None:
        self.tmp, self.gl, self.capsys = tmp, gl, capsys
        self.waits: list[float] = []
        self.dotenv = tmp / "attest.env"
        self.verdict = tmp / "attest-verdict.json"
        self.env = {
            "GITLAB_CI": "true",
            "CI_API_V4_URL": gl.api_url,
            "CI_PROJECT_ID": str(PROJECT),
            "CI_MERGE_REQUEST_IID": str(IID),
            "CI_COMMIT_SHA": SHA,
            "CI_SERVER_URL": "https://gitlab.example",
            "CI_PROJECT_PATH": PATH,
            "CI_PROJECT_DIR": str(tmp),
            "ATTEST_GITLAB_TOKEN": TOKEN,
            "ATTEST_CI_DOTENV": str(self.dotenv),
        }

    def report(self, tests: list[dict[str, Any]], name: str = "report.json") -> Path:
        """The run's report, and the verdict file the policy step writes from it."""
        report = make_report(tests)
        write_verdict(self.verdict, judge(report, load_policy(None, root=self.tmp)))
        return write_report(report, self.tmp / name)

    def publish(self, report: Path, **options: Any) -> str:
        """Publish; the job's log (stdout and stderr)."""
        retry = RetryPolicy(sleep=self.waits.append, clock=lambda: NOW)
        code = publish_step(
            NoteOptions(report, self.verdict, project_dir=self.tmp, **options),
            GitLabStep(self.env),
            self.env,
            retry,
        )
        assert code == 0
        out = self.capsys.readouterr()
        return out.out + out.err

    def outputs(self) -> dict[str, str]:
        lines = self.dotenv.read_text(encoding="utf-8").splitlines()
        return dict(line.split("=", 1) for line in lines)

    def note(self) -> str:
        [note] = [n for n in self.gl.notes(PROJECT, IID) if n["author"]["id"] == BOT]
        return str(note["body"])


@pytest.fixture
def gl() -> Any:
    with FakeGitLab() as fake:
        fake.add_merge_request(PROJECT, PATH, IID)
        fake.add_user(BOT, "project_42_bot", TOKEN)
        fake.add_user(OTHER, "mallory", "glpat-someone-else")
        yield fake


@pytest.fixture
def job(
    tmp_path: Path, gl: FakeGitLab, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> Job:
    monkeypatch.chdir(tmp_path)
    return Job(tmp_path, gl, capsys)


# --- the sticky note -------------------------------------------------------------------------------


def test_the_first_publish_creates_the_note_and_the_next_updates_it_in_place(job: Job) -> None:
    log = job.publish(job.report([row(1)]))
    [created] = job.gl.notes(PROJECT, IID)
    assert created["body"].splitlines()[0].startswith("attest replay: 2 replayed")
    assert created["body"].rstrip("\n").endswith(MARKER)
    url = f"https://gitlab.example/{PATH}/-/merge_requests/{IID}#note_{created['id']}"
    assert f"attest: note created: {url}" in log
    assert job.outputs()["ATTEST_COMMENT_URL"] == url

    job.publish(job.report([row(1), row(2)]))
    [updated] = job.gl.notes(PROJECT, IID)
    assert updated["id"] == created["id"] and "test_2" in updated["body"]
    assert [r.method for r in job.gl.requests() if r.method != "GET"] == ["POST", "PUT"]
    lists = [r for r in job.gl.requests("GET") if r.path.endswith("/notes")]
    assert all(r.query["sort"] == "asc" and r.query["per_page"] == "100" for r in lists)


def test_an_unchanged_report_sends_no_write(job: Job) -> None:
    report = job.report([row(1)])
    job.publish(report)
    log = job.publish(report)
    assert "attest: note unchanged" in log
    assert [r.method for r in job.gl.requests() if r.method != "GET"] == ["POST"]


def test_a_note_of_another_user_with_the_marker_is_never_edited(job: Job) -> None:
    # A Maintainer's token may edit anyone's note: GitLab would let it, so the author check is ours.
    job.gl.maintainer(PROJECT, BOT)
    planted = job.gl.add_note(PROJECT, IID, f"All checks passed, merge away\n{MARKER}\n", OTHER)
    job.publish(job.report([row(1)]))
    assert job.gl.notes(PROJECT, IID)[0] == planted
    assert not [r for r in job.gl.requests() if r.method in ("PUT", "DELETE")]
    assert "test_1" in job.note()


def test_a_non_maintainer_never_even_tries_to_edit_another_users_note(job: Job) -> None:
    job.gl.add_note(PROJECT, IID, f"summary\n{MARKER}", OTHER)
    log = job.publish(job.report([row(1)]))
    assert not [r for r in job.gl.requests() if r.status == 403]
    assert "attest: note created" in log


def test_system_notes_and_quotes_of_the_marker_are_not_ours(job: Job) -> None:
    job.gl.add_note(PROJECT, IID, f"{MARKER}\nquoted, not last", BOT)
    job.gl.add_note(PROJECT, IID, f"changed the description\n{MARKER}", BOT, system=True)
    job.publish(job.report([row(1)]))
    assert [r.method for r in job.gl.requests() if r.method != "GET"] == ["POST"]


# --- duplicates from racing pipelines ---------------------------------------------------------------


def test_our_duplicates_are_deleted_keeping_the_oldest_and_never_anyone_elses(job: Job) -> None:
    # Relies on: DELETE .../notes/:note_id is a 204, and a Maintainer may delete anyone's note.
    job.gl.maintainer(PROJECT, BOT)
    oldest = job.gl.add_note(PROJECT, IID, f"summary A\n{MARKER}\n", BOT)
    theirs = job.gl.add_note(PROJECT, IID, f"summary of mallory\n{MARKER}\n", OTHER)
    newer = job.gl.add_note(PROJECT, IID, f"summary B\n{MARKER}\n", BOT)
    quote = job.gl.add_note(PROJECT, IID, f"> {MARKER}\n> quoted by a reviewer", BOT)
    log = job.publish(job.report([row(1)]))
    deletes = [r.path for r in job.gl.requests("DELETE")]
    assert deletes == [f"/projects/{PROJECT}/merge_requests/{IID}/notes/{newer['id']}"]
    kept, *others = job.gl.notes(PROJECT, IID)
    assert kept["id"] == oldest["id"] and "test_1" in kept["body"]
    assert others == [theirs, quote]
    url = f"https://gitlab.example/{PATH}/-/merge_requests/{IID}#note_{oldest['id']}"
    assert f"attest: note updated: {url} (1 duplicate(s) removed)" in log


def test_a_note_created_while_another_pipeline_creates_one_leaves_only_the_oldest(job: Job) -> None:
    # Both pipelines found no note and both post one: each keeps the oldest and deletes the other.
    job.gl.race_next_create(f"the other pipeline's summary\n{MARKER}\n", BOT)
    log = job.publish(job.report([row(1)]))
    [note] = job.gl.notes(PROJECT, IID)
    assert note["body"].startswith("attest replay: 2 replayed") and "test_1" in note["body"]
    assert [r.method for r in job.gl.requests() if r.method != "GET"] == ["POST", "DELETE", "PUT"]
    assert f"#note_{note['id']} (1 duplicate(s) removed)" in log
    assert job.outputs()["ATTEST_COMMENT_URL"].endswith(f"#note_{note['id']}")


def test_a_racing_note_by_someone_else_is_not_deleted(job: Job) -> None:
    # Just before ours is created, another user posts a note that looks like a summary: keeping the
    # oldest must not keep theirs and delete ours, even with a Maintainer's token.
    job.gl.maintainer(PROJECT, BOT)
    forged = f"forged summary\n{MARKER}\n"
    job.gl.race_next_create(forged, OTHER)
    log = job.publish(job.report([row(1)]))
    notes = job.gl.notes(PROJECT, IID)
    assert [(n["author"]["id"], n["body"] == forged) for n in notes] == [(OTHER, True), (BOT, False)]
    assert not job.gl.requests("DELETE") and not job.gl.requests("PUT")
    assert (
        f"attest: note created: https://gitlab.example/{PATH}/-/merge_requests/{IID}#note_{notes[1]['id']}"
        in log
    )


def test_a_duplicate_the_racing_pipeline_deleted_first_is_no_failure(job: Job) -> None:
    job.gl.add_note(PROJECT, IID, f"summary A\n{MARKER}\n", BOT)
    newer = job.gl.add_note(PROJECT, IID, f"summary B\n{MARKER}\n", BOT)
    job.gl.before_next("DELETE", lambda: job.gl.state.notes[(PROJECT, IID)].remove(newer))
    log = job.publish(job.report([row(1)]))
    assert [r.status for r in job.gl.requests("DELETE")] == [404]
    assert "WARNING" not in log and "duplicate" not in log
    assert "attest: note updated" in log and "test_1" in job.note()


@pytest.mark.parametrize("headers", ["x-next-page", "x-next-page without x-total", "Link only"])
def test_the_note_is_found_on_page_three(job: Job, headers: str) -> None:
    job.gl.state.omit_total = headers == "x-next-page without x-total"
    job.gl.state.link_only = headers == "Link only"
    for i in range(230):
        job.gl.add_note(PROJECT, IID, f"review comment {i}", OTHER)
    job.publish(job.report([row(1)]))  # created: the 231st note, on page 3
    job.publish(job.report([row(1), row(2)]))
    assert [r.method for r in job.gl.requests() if r.method != "GET"] == ["POST", "PUT"]
    pages = [r.query.get("page", "1") for r in job.gl.requests("GET") if r.path.endswith("/notes")]
    assert pages == ["1", "2", "3"] * 3  # listed again after creating: a racing pipeline's note


def test_a_429_waits_as_retry_after_says_then_succeeds(job: Job) -> None:
    job.gl.rate_limit(2, retry_after=7, reset=int(NOW) + 30)
    log = job.publish(job.report([row(1)]))
    assert job.waits == [7.0, 7.0]
    assert "attest: note created" in log


def test_a_429_without_retry_after_waits_until_the_reset(job: Job) -> None:
    job.gl.rate_limit(1, retry_after=None, reset=int(NOW) + 30)
    job.publish(job.report([row(1)]))
    assert job.waits == [31.0]
    assert len(job.gl.notes(PROJECT, IID)) == 1


def test_a_reset_far_away_gives_up_at_once_with_one_warning(job: Job) -> None:
    job.gl.rate_limit(1, retry_after=3600, reset=int(NOW) + 3600)
    log = job.publish(job.report([row(1)]))
    assert job.waits == []
    [line] = [line for line in log.splitlines() if line.startswith("WARNING")]
    assert "GitLab asked to wait 3600s" in line and "the gate's verdict is unchanged" in line
    assert job.outputs()["ATTEST_VERDICT"] == "blocked"


def test_a_huge_report_is_trimmed_under_the_note_limit_and_never_refused(job: Job) -> None:
    # Relies on: a note over 1,000,000 characters is a 400.
    tests = [row(i, miss=f"miss {i}: " + "the system prompt changed " * 12) for i in range(4000)]
    job.publish(job.report(tests))
    body = job.note()
    assert 900_000 < len(body) <= NOTE_LIMIT
    assert body.rstrip("\n").endswith(MARKER)
    assert not [r for r in job.gl.requests() if r.status == 400]


def test_the_safety_trim_closes_what_it_cut_and_says_so() -> None:
    body = note_body("line\n```\n" + ("y" * 99 + "\n") * 20_000)
    assert len(body) <= NOTE_LIMIT
    assert body.count("```") % 2 == 0
    assert "1,000,000-character note limit" in body
    assert body.rstrip("\n").endswith(MARKER)


def test_miss_locations_link_to_the_commit_on_gitlab(job: Job) -> None:
    job.publish(job.report([row(1)]))
    assert f"](https://gitlab.example/{PATH}/-/blob/{SHA}/agent/core.py#L41)" in job.note()


# --- what the note may hold ------------------------------------------------------------------------


def test_a_credential_in_the_report_reaches_nothing_published(job: Job) -> None:
    # Redacted as the GitHub comment is: the whole report before anything is rendered.
    key, echoed = "sk-proj-" + "Pub_l1sh_K3y_" * 2, "hdr-0b8f2c9e7d"
    failed = row(1, miss=f"replay miss: X-Custom-Auth: {echoed}")
    failed["message"] = f"assert {key!r} with {TOKEN}"
    failed["id"] = f"tests/test_agent.py::test_1[{key}]"
    failed["replay"]["miss"]["location"]["file"] = f"agent/{key}.py"
    log = job.publish(job.report([failed, row(2)]))
    published = [job.note(), log, job.dotenv.read_text(), json.dumps([r.body for r in job.gl.requests()])]
    for text in published:
        for secret in (key, echoed, TOKEN, key.replace("_", "\\_")):
            assert secret not in text


MD = MarkdownIt("gfm-like")
CANARY = "octocat"
HOSTILE = [
    f"# Heading @{CANARY}\n\n## second",
    f"<img src=x onerror=alert(1)> <details><summary>{CANARY}</summary>",
    f"[click](https://evil.example/{CANARY}) ![img](https://evil.example/{CANARY}.png)",
    f"https://evil.example/{CANARY} @{CANARY} please approve #1 !2 ~3 %4",
    f"a | b | {CANARY} |\n|---|---|",
    f"{MARKER}\n{MARKER}",
    f"```\n{CANARY}\n```",
    f"**bold** _em_ ~~{CANARY}~~ &lt;b&gt; <!-- {CANARY} -->",
]


def _tree(markdown: str) -> list[tuple[Any, ...]]:
    shape: list[tuple[Any, ...]] = []

    def visit(tokens: list[Token], depth: int) -> None:
        for t in tokens:
            if t.type not in ("text", "text_special"):
                href = t.attrGet("href")
                shape.append(
                    (depth, t.type, t.tag, t.nesting, str(href).split("/-/blob/")[0] if href else None)
                )
            visit(t.children or [], depth + 1)

    visit(MD.parse(markdown), 0)
    return shape


def _plain(markdown: str) -> str:
    out: list[str] = []

    def visit(tokens: list[Token]) -> None:
        for t in tokens:
            if t.type in ("text", "text_special", "html_inline", "html_block"):
                out.append(t.content)
            visit(t.children or [])

    visit(MD.parse(markdown))
    return "\n".join(out)


def _hostile_rows(strings: list[str]) -> list[dict[str, Any]]:
    tests = []
    for i, s in enumerate(strings):
        facts = replay_facts(1, misses=1, miss=make_miss(s, "messages", f"agent/{s}.py", 40 + i))
        tests.append(
            make_test(f"tests/{s}.py::test_miss[{s}]", "failed", line=i + 1, message=s, replay=facts)
        )
        tests.append(make_test(f"tests/{s}.py::test_ne[{s}]", "not_evaluated", line=i + 1, reason=s))
    return tests


def test_report_strings_leave_the_notes_element_tree_unchanged(job: Job) -> None:
    job.publish(job.report(_hostile_rows(HOSTILE), "hostile.json"))
    hostile = job.note()
    job.gl.state.notes[(PROJECT, IID)] = []
    job.publish(job.report(_hostile_rows([f"plain words {i}" for i in range(len(HOSTILE))]), "benign.json"))
    assert _tree(hostile) == _tree(job.note())
    assert CANARY not in _plain(hostile)
    assert [line.strip() for line in hostile.splitlines()].count(MARKER) == 1


# --- pipelines that get no note --------------------------------------------------------------------


def test_without_a_token_publishing_is_skipped_with_one_warning_and_the_outputs_stand(job: Job) -> None:
    # A fork's merge request runs in the fork, without the parent's variables.
    del job.env["ATTEST_GITLAB_TOKEN"]
    log = job.publish(job.report([row(1)]))
    assert log.splitlines() == [
        "WARNING: attest: no GitLab token in ATTEST_GITLAB_TOKEN or GITLAB_TOKEN (a fork's pipeline gets none):"
        " skipping the merge request note"
    ]
    assert job.gl.requests() == []
    assert job.outputs()["ATTEST_VERDICT"] == "blocked" and job.outputs()["ATTEST_MISSES"] == "1"


def test_gitlab_token_is_read_when_attest_gitlab_token_is_not_set(job: Job) -> None:
    job.env["GITLAB_TOKEN"] = job.env.pop("ATTEST_GITLAB_TOKEN")
    job.publish(job.report([row(1)]))
    assert len(job.gl.notes(PROJECT, IID)) == 1


def test_a_pipeline_that_is_not_a_merge_requests_gets_no_note(job: Job) -> None:
    del job.env["CI_MERGE_REQUEST_IID"]
    log = job.publish(job.report([row(1)]))
    assert log.splitlines() == [
        "WARNING: attest: not a merge request pipeline (no CI_MERGE_REQUEST_IID): skipping the merge request note"
    ]
    assert job.gl.requests() == []


@pytest.mark.parametrize(
    ("change", "answer"),
    [
        (
            {"ATTEST_GITLAB_TOKEN": "glpat-revoked"},
            "GitLab answered 401: the token is missing, invalid, expired or revoked",
        ),
        ({"CI_PROJECT_ID": "999"}, "GitLab answered 404: no such project or merge request"),
        ({"CI_MERGE_REQUEST_IID": "999"}, "GitLab answered 404: no such project or merge request"),
    ],
)
def test_a_refusal_is_one_warning_line_and_the_step_passes(
    job: Job, change: dict[str, str], answer: str
) -> None:
    job.env.update(change)
    log = job.publish(job.report([row(1)]))
    [line] = log.splitlines()
    assert line.startswith("WARNING: attest: publishing to GitLab failed: ") and answer in line
    assert "glpat" not in line and "Traceback" not in log


def test_attest_ci_publish_acts_for_gitlab_without_an_artifact_dir(job: Job) -> None:
    report = job.report([row(1)])
    env = clean_env(**job.env)
    env = {
        k: v for k, v in env.items() if not k.startswith(("GITHUB_", "ATTEST_CI_")) or k == "ATTEST_CI_DOTENV"
    }
    done = run_cli(["ci", "publish", "--report", str(report)], cwd=job.tmp, env=env)
    assert done.returncode == 0, done.stderr
    assert "::" not in done.stdout
    assert len(job.gl.notes(PROJECT, IID)) == 1
    assert job.outputs()["ATTEST_VERDICT"] == "blocked"


def test_an_escape_sequence_in_a_warning_is_shown_not_sent(capsys: pytest.CaptureFixture[str]) -> None:
    GitLabStep({}).warning("base \x1b[0Ksection_start:1:x\r\nfake line")
    assert capsys.readouterr().out == "WARNING: attest: base \\x1b[0Ksection_start:1:x fake line\n"


def test_the_token_never_follows_a_link_to_another_host(job: Job) -> None:
    job.gl.state.link_only = True
    job.gl.state.link_origin = "http://127.0.0.2:9"  # nothing listens there: following it would fail
    for i in range(150):
        job.gl.add_note(PROJECT, IID, f"review comment {i}", OTHER)
    log = job.publish(job.report([row(1)]))
    assert "WARNING" not in log
    pages = [r.query.get("page", "1") for r in job.gl.requests("GET") if r.path.endswith("/notes")]
    assert pages == ["1", "1"]  # both listings (before and after creating) stop at their first page


def test_a_dotenv_value_is_one_line_cut_to_fit_gitlabs_5_kb(tmp_path: Path) -> None:
    dotenv = tmp_path / "attest.env"
    GitLabStep({"ATTEST_CI_DOTENV": str(dotenv)}).outputs({"reason": "changed:\n" + "tests/x.py " * 200})
    [line] = dotenv.read_text(encoding="utf-8").splitlines()
    name, value = line.split("=", 1)
    assert name == "ATTEST_REASON" and value.startswith("changed: tests/x.py")
    assert len(value.encode("utf-8")) <= 300 and value.endswith("…")


def test_on_change_posts_no_note_for_a_run_with_nothing_to_tell(job: Job) -> None:
    log = job.publish(
        job.report([make_test("tests/test_agent.py::test_ok", replay=replay_facts(2))]),
        comment_on_change=True,
    )
    assert "attest: note not posted: nothing to tell a reviewer" in log
    assert job.gl.notes(PROJECT, IID) == [] and job.outputs()["ATTEST_COMMENT_URL"] == ""


def test_the_fake_lets_a_maintainer_edit_anyones_note_and_no_one_else(gl: FakeGitLab) -> None:
    # The contract the author check stands on: GitLab itself would let a Maintainer's token edit it.
    note = gl.add_note(PROJECT, IID, f"theirs\n{MARKER}", OTHER)
    url = f"{gl.api_url}/projects/{PROJECT}/merge_requests/{IID}/notes/{note['id']}"
    headers = {"PRIVATE-TOKEN": TOKEN}
    assert requests.put(url, json={"body": "ours"}, headers=headers, timeout=10).status_code == 403
    gl.maintainer(PROJECT, BOT)
    assert requests.put(url, json={"body": "ours"}, headers=headers, timeout=10).status_code == 200
    assert requests.put(url, json={"body": "x"}, timeout=10).status_code == 401
    assert requests.put(url, json={"body": "x" * 1_000_001}, headers=headers, timeout=10).status_code == 400


def test_the_fake_deletes_a_note_as_gitlab_documents(gl: FakeGitLab) -> None:
    # The contract the duplicate clean-up stands on: 204; 403 for another user's note unless the
    # token's user is a Maintainer; 404 for a note it does not know.
    ours, theirs = gl.add_note(PROJECT, IID, "ours", BOT), gl.add_note(PROJECT, IID, "theirs", OTHER)
    notes = f"{gl.api_url}/projects/{PROJECT}/merge_requests/{IID}/notes"
    headers = {"PRIVATE-TOKEN": TOKEN}
    assert requests.delete(f"{notes}/{theirs['id']}", headers=headers, timeout=10).status_code == 403
    assert requests.delete(f"{notes}/{ours['id']}", timeout=10).status_code == 401
    done = requests.delete(f"{notes}/{ours['id']}", headers=headers, timeout=10)
    assert (done.status_code, done.content) == (204, b"")
    assert requests.delete(f"{notes}/{ours['id']}", headers=headers, timeout=10).status_code == 404
    gl.maintainer(PROJECT, BOT)
    assert requests.delete(f"{notes}/{theirs['id']}", headers=headers, timeout=10).status_code == 204
    assert gl.notes(PROJECT, IID) == []
