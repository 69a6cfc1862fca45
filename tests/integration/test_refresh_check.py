"""`/attest refresh COMMIT [NAME...]`: who may start it (asked of the fake GitHub), which commit, and the
reply built from what the re-runs printed: redacted, and text inside a fence nothing in it can close."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from attest_toolkit.credentials.scan import Secrets
from attest_toolkit.github.publisher import Publisher, RetryPolicy, is_sticky
from attest_toolkit.github.refresh import NotAllowed, fenced, keep_logs, parse_comment, plan, reply
from fake_github import FakeGitHub
from markdown_it import MarkdownIt

REPO = "acme/agent"
HEAD = "a1" * 20
OLD = "b2" * 20
KEY = "sk-proj-" + "Qx7vLm2" * 6
QUIET = RetryPolicy(sleep=lambda _: None, seconds_between_requests=None, seconds_between_writes=None)


@pytest.fixture
def gh() -> Any:
    with FakeGitHub() as fake:
        fake.add_pull(REPO, 7, HEAD)
        fake.add_pull(REPO, 8, HEAD, head_repo="mallory/agent")
        for login, role in [("ada", "admin"), ("max", "maintain"), ("wes", "write"), ("tia", "triage")]:
            fake.role(REPO, login, role)
        fake.role(REPO, "ren", "read")
        fake.role(REPO, "org-member", None)
        yield fake


def check(gh: FakeGitHub, body: str, login: str = "max", number: int = 7) -> Any:
    event = {"issue": {"number": number}, "comment": {"body": body, "user": {"login": login}}}
    github = Publisher("test-token", REPO, gh.url, QUIET)
    try:
        return plan(event, REPO, github)
    finally:
        github.close()


@pytest.mark.parametrize("login", ["ada", "max", "wes"])
def test_write_maintain_and_admin_may_refresh_the_commit_they_name(gh: FakeGitHub, login: str) -> None:
    got = check(gh, f"/attest refresh {HEAD} alpha beta", login)

    assert (got.sha, got.ref, got.names, got.refused) == (HEAD, "topic", ("alpha", "beta"), "")


@pytest.mark.parametrize("login", ["tia", "ren", "org-member"])
def test_triage_read_and_a_bare_organisation_member_may_not(gh: FakeGitHub, login: str) -> None:
    with pytest.raises(NotAllowed, match=f"{login} has read permission on acme/agent; a refresh needs write"):
        check(gh, f"/attest refresh {HEAD}", login)
    asked = [r.path for r in gh.requests()]
    # Refused on the permission alone, before the pull request is read (an older PyGithub also reads
    # the repository itself first).
    assert f"/repos/{REPO}/collaborators/{login}/permission" in asked
    assert not any("/pulls" in path or "/issues" in path for path in asked)


def test_a_login_github_does_not_know_starts_nothing(gh: FakeGitHub) -> None:
    with pytest.raises(
        NotAllowed, match="ghost's permission on acme/agent could not be read: permission: GitHub"
    ):
        check(gh, f"/attest refresh {HEAD}", "ghost")


def test_a_head_that_moved_and_a_fork_are_refused_in_one_line(gh: FakeGitHub) -> None:
    moved = check(gh, f"/attest refresh {OLD}")
    fork = check(gh, f"/attest refresh {HEAD}", number=8)

    assert moved.sha == "" and moved.refused.startswith(
        f"attest refresh: refused, the pull request moved: its head is {HEAD}"
    )
    assert (fork.sha, fork.refused) == ("", "attest refresh: not run for pull requests from forks.")


@pytest.mark.parametrize(
    "body",
    [
        "/attest refresh",
        "/attest refresh alpha",
        f"/attest refresh {HEAD[:12]} alpha",
        f"/attest refresh {HEAD.upper()}",
    ],
)
def test_a_comment_must_name_the_full_commit(body: str) -> None:
    assert str(parse_comment(body)).startswith("attest refresh: name the commit you read:")


def test_a_name_that_is_not_a_fixture_name_is_refused() -> None:
    assert parse_comment(f"/attest refresh {HEAD} ../x") == "attest refresh: not a fixture name: `../x`."


@pytest.mark.parametrize("text", ["plain", "```\n**bold**\n```", "a ```` run and `one`", "~~~\n<!-- x -->"])
def test_fenced_text_is_one_code_block_holding_exactly_the_text(text: str) -> None:
    [token] = MarkdownIt("gfm-like").parse(fenced(text))

    assert (token.type, token.content) == ("fence", text.rstrip() + "\n")


def test_the_kept_logs_and_the_reply_hold_no_key_and_no_markdown_of_the_run(tmp_path: Path) -> None:
    raw, out = tmp_path / "raw", tmp_path / "out"
    raw.mkdir()
    printed = (
        f"api_key={KEY}\nraw {KEY[::-1]} and {KEY}\n```\n**attest: pass**\n<!-- attest-toolkit:summary -->\n"
    )
    (raw / "alpha.log").write_text(printed, encoding="utf-8")
    (raw / "alpha.exit").write_text("1\n", encoding="utf-8")

    keep_logs(raw, out, Secrets.of([KEY[::-1]]))
    text = reply(out, "attest refresh: nothing changed.", "", Secrets.of([]))

    kept = (out / "logs" / "alpha.log").read_text(encoding="utf-8")
    for published in (kept, text):
        assert KEY not in published and KEY[::-1] not in published
    tokens = MarkdownIt("gfm-like").parse(text)
    assert [t.type for t in tokens if "attest: pass" in t.content] == ["fence"]
    assert not any(t.type.startswith("html") for t in tokens)
    assert not is_sticky(text)
    assert "- `alpha`: exit 1" in text


def test_a_name_that_is_not_a_fixture_name_never_reaches_the_reply(tmp_path: Path) -> None:
    (tmp_path / "results.json").write_text('[{"name": "[x](https://example.invalid)", "exit": 0}]')

    with pytest.raises(Exception, match="not a list of"):
        reply(tmp_path, "attest refresh: nothing changed.", "", Secrets.of([]))
