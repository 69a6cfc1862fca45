"""workflows/refresh-on-comment.yml run job by job as GitHub's runner runs it, against the fake GitHub.

A pull request of this repository re-records `alpha`: the refresh job checks the comment, re-runs the
capture (a stand-in `attest` on PATH plays the capture and an agent that prints its key and markdown),
keeps the redacted output, and the commit job commits the fixture to the branch (a local bare
repository stands in for GitHub's) and replies (a stand-in `gh` keeps the reply). What the `uses:`
steps would do, the test does: the checkouts, the artifact carried between the jobs, and the toolkit
the install steps would fetch (a virtual environment that sees this checkout's toolkit).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import plants
import pytest
from attest_toolkit.github.publisher import is_sticky
from conftest import GIT_ENV, REPO, chat_request, chat_response, exchange, git, write_fixture
from fake_github import FakeGitHub
from markdown_it import MarkdownIt
from workflow_runner import JobRun, run_job

WORKFLOW = REPO / "workflows" / "refresh-on-comment.yml"
OWNER_REPO = "acme/agent"
NUMBER = 7
FIXTURES = "tests/attest/fixtures"
TOKEN = "ghs_" + "w" * 36
OPENAI_KEY = "sk-proj-" + "Qx7vLm2" * 6  # made up: the job's provider keys
ANTHROPIC_KEY = "sk-ant-api03-" + "Zr4kPq9" * 6
# Markdown of its own, a forged verdict and the sticky comment's marker, as an agent might print them.
HOSTILE = "````\n**attest: pass** · [all good](https://example.invalid)\n<!-- attest-toolkit:summary -->\n"

CAPTURE = """#!/bin/sh
# `attest capture --refresh NAME ...` and the agent it re-runs: it prints its keys as an error would.
echo "agent: request failed: api_key=$OPENAI_API_KEY" >&2
echo "agent: headers x-api-key: $ANTHROPIC_API_KEY and raw $OPENAI_API_KEY" >&2
cat "$ATTEST_TEST_PRINTS"
cp "$ATTEST_TEST_REFRESHED/$3.attest.json" "tests/attest/fixtures/$3.attest.json"
"""
GH = """#!/bin/sh
# `gh pr comment N --repo R --body TEXT | --body-file FILE`: each reply kept in $ATTEST_TEST_REPLIES
n=$(ls "$ATTEST_TEST_REPLIES" | wc -l)
while [ $# -gt 0 ]; do
  case $1 in
    --body) printf '%s' "$2" >"$ATTEST_TEST_REPLIES/$n.md"; shift ;;
    --body-file) cp "$2" "$ATTEST_TEST_REPLIES/$n.md"; shift ;;
  esac
  shift
done
"""
GIT = """#!/bin/sh
# git, offline: a clone (pip fetching the toolkit from its repository) fails at once.
if [ "$1" = clone ]; then echo "git clone: no network in this test" >&2; exit 128; fi
exec /usr/bin/git "$@"
"""


@dataclass
class Pull:
    """The pull request's repository (a bare one standing in for GitHub's), its head, the runner's tools."""

    tmp: Path
    origin: Path
    checkout: Path
    base: str
    head: str
    gh: FakeGitHub
    runs: int = 0

    def replies(self) -> list[str]:
        folder = self.tmp / "replies"
        return [p.read_text(encoding="utf-8") for p in sorted(folder.iterdir())]

    def branch(self) -> str:
        return git(self.origin, "rev-parse", "topic").strip()


def executable(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8")
    path.chmod(0o755)


def commit(repo: Path, message: str) -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD").strip()


@pytest.fixture
def pull(tmp_path: Path) -> Iterator[Pull]:
    origin, checkout = tmp_path / "origin.git", tmp_path / "checkout"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(origin))
    checkout.mkdir()
    git(checkout, "init", "-q", "-b", "main")
    write_fixture(
        checkout / FIXTURES, "alpha", [exchange(chat_request("Say hello"), chat_response("Hello!"))]
    )
    (checkout / "requirements.txt").write_text("", encoding="utf-8")
    base = commit(checkout, "alpha")
    git(checkout, "checkout", "-q", "-b", "topic")
    (checkout / "agent.py").write_text("print('hello')\n", encoding="utf-8")
    head = commit(checkout, "the agent")
    git(checkout, "push", "-q", str(origin), "main", "topic")
    refreshed = tmp_path / "refreshed"
    write_fixture(refreshed, "alpha", [exchange(chat_request("Say hello"), chat_response("Hello there!"))])
    (tmp_path / "prints.txt").write_text(HOSTILE, encoding="utf-8")
    tools = tmp_path / "bin"
    tools.mkdir()
    executable(tools / "attest", CAPTURE)
    executable(tools / "gh", GH)
    executable(tools / "git", GIT)
    (tmp_path / "replies").mkdir()
    with FakeGitHub() as gh:
        gh.add_pull(OWNER_REPO, NUMBER, head)
        gh.role(OWNER_REPO, "maintainer", "maintain")
        gh.role(OWNER_REPO, "member", None)  # an organisation member without a role here: read
        yield Pull(tmp_path, origin, checkout, base, head, gh)


def toolkit_venv(path: Path) -> None:
    """What the install steps would fetch: a virtual environment that imports this checkout's toolkit."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True, timeout=120)
    site = subprocess.run(
        [
            str(path / "bin" / "python"),
            "-I",
            "-c",
            "import sysconfig; print(sysconfig.get_paths()['purelib'])",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    here = sysconfig.get_paths()["purelib"]
    Path(site, "attest-test.pth").write_text(f"{REPO / 'toolkit'}\n{here}\n", encoding="utf-8")


def comment_event(body: str, login: str) -> dict[str, object]:
    return {
        "action": "created",
        "issue": {
            "number": NUMBER,
            "pull_request": {"url": f"https://api.github.com/repos/{OWNER_REPO}/pulls/7"},
        },
        "comment": {
            "body": body,
            "user": {"login": login},
            "author_association": "MEMBER",
            "created_at": "2026-01-01T00:00:00Z",
        },
        "repository": {"full_name": OWNER_REPO},
    }


def runner_env(pull: Pull, event: Path) -> dict[str, str]:
    tools = [pull.tmp / "bin", Path(sys.executable).parent, Path("/usr/bin"), Path("/bin")]
    push_url = f"https://x-access-token:{TOKEN}@github.com/{OWNER_REPO}.git"
    return {
        **GIT_ENV,
        "PATH": ":".join(map(str, tools)),
        "HOME": str(pull.tmp / "home"),
        "LANG": "C.UTF-8",
        "GITHUB_ACTIONS": "true",
        "GITHUB_API_URL": pull.gh.url,
        "GITHUB_REPOSITORY": OWNER_REPO,
        "GITHUB_EVENT_NAME": "issue_comment",
        "GITHUB_EVENT_PATH": str(event),
        "PIP_NO_INDEX": "1",
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        # the push to GitHub goes to the bare repository
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": f"url.{pull.origin}.insteadOf",
        "GIT_CONFIG_VALUE_0": push_url,
        "ATTEST_TEST_PRINTS": str(pull.tmp / "prints.txt"),
        "ATTEST_TEST_REFRESHED": str(pull.tmp / "refreshed"),
        "ATTEST_TEST_REPLIES": str(pull.tmp / "replies"),
    }


@dataclass
class Refresh:
    refresh: JobRun
    commit: JobRun | None
    artifact: Path | None


def run_refresh(pull: Pull, body: str, login: str = "maintainer", plant: bool = False) -> Refresh:
    """Both jobs for one comment; `plant`: the checkouts also hold everything of tests/plants.py."""
    pull.runs += 1
    run = pull.tmp / f"run-{pull.runs}"
    run.mkdir()
    event = comment_event(body, login)
    (run / "event.json").write_text(json.dumps(event), encoding="utf-8")
    env = runner_env(pull, run / "event.json")
    github = {"token": TOKEN, "repository": OWNER_REPO, "event": event}
    secrets = {"OPENAI_API_KEY": OPENAI_KEY, "ANTHROPIC_API_KEY": ANTHROPIC_KEY}
    common = {"github": github, "env": env, "secrets": secrets, "substitute": {"TOOLKIT": "pip"}}
    first_temp = run / "refresh-temp"
    first_temp.mkdir()
    toolkit_venv(first_temp / "attest-toolkit")
    if plant:
        plants.plant(pull.checkout, run / "markers")
    first = run_job(WORKFLOW, "refresh", workspace=pull.checkout, runner_temp=first_temp, **common)
    if first.returncode != 0:
        return Refresh(first, None, None)
    second_temp, workspace = run / "commit-temp", run / "commit-workspace"
    second_temp.mkdir()
    workspace.mkdir()
    toolkit_venv(second_temp / "attest-toolkit")
    artifact = None
    if first.outputs["sha"]:
        checkout = workspace / "pull-request"
        git(run, "clone", "-q", str(pull.origin), str(checkout))
        git(checkout, "checkout", "-q", "--detach", first.outputs["sha"])
        if plant:
            plants.plant(checkout, run / "markers")
        artifact = first.upload("attest-refresh")
        shutil.copytree(artifact, second_temp / "attest-refresh")
    needs = {"refresh": {"result": "success", "outputs": first.outputs}}
    second = run_job(WORKFLOW, "commit", workspace=workspace, runner_temp=second_temp, needs=needs, **common)
    return Refresh(first, second, artifact)


def files_under(path: Path) -> str:
    return "".join(
        p.read_text(encoding="utf-8", errors="replace") for p in sorted(path.rglob("*")) if p.is_file()
    )


# --- the reply carries no key and no markdown of the pull request's -------------------------------


def test_a_refresh_commits_the_fixture_and_replies_with_no_key_and_no_markdown_of_the_runs(
    pull: Pull,
) -> None:
    done = run_refresh(pull, f"/attest refresh {pull.head} alpha")

    assert done.commit is not None and done.artifact is not None, done.refresh.log
    assert done.commit.returncode == 0, done.refresh.log + done.commit.log
    [reply] = pull.replies()
    pushed = pull.branch()
    assert git(pull.origin, "rev-parse", "topic^").strip() == pull.head
    assert reply.splitlines()[0] == f"attest refresh: committed {pushed[:7]} to `topic`."
    assert "- `alpha`: exit 0" in reply
    published = reply + files_under(done.artifact) + git(pull.origin, "show", "topic")
    for key in (OPENAI_KEY, ANTHROPIC_KEY, OPENAI_KEY[:24], ANTHROPIC_KEY[-24:]):
        assert key not in published
    assert "api_key={{redacted}}" in reply
    tokens = MarkdownIt("gfm-like").parse(reply)
    assert {t.type for t in tokens} & {"html_block", "html_inline"} == set()
    assert [t for t in tokens if "attest-toolkit:summary" in t.content or "attest: pass" in t.content] == [
        t for t in tokens if t.type == "fence" and "attest: pass" in t.content
    ]
    assert all(t.type != "strong_open" for block in tokens for t in block.children or [])
    assert not is_sticky(reply)


# --- who may start a refresh, and on which commit --------------------------------------------------


def test_a_member_without_write_permission_starts_nothing(pull: Pull) -> None:
    done = run_refresh(pull, f"/attest refresh {pull.head} alpha", login="member")

    assert done.refresh.returncode == 1
    assert "member has read permission on acme/agent; a refresh needs write" in done.refresh.log
    assert done.commit is None
    assert pull.replies() == []
    assert pull.branch() == pull.head
    asked = pull.gh.requests("GET", "/collaborators/member/permission")
    assert len(asked) == 1


def test_a_pull_request_that_moved_since_the_commit_the_comment_names_is_refused_in_one_line(
    pull: Pull,
) -> None:
    done = run_refresh(pull, f"/attest refresh {pull.base} alpha")

    assert done.commit is not None and done.commit.returncode == 0, done.commit.log
    assert pull.replies() == [
        f"attest refresh: refused, the pull request moved: its head is {pull.head}, not {pull.base}."
        " Read it, then comment again with its commit."
    ]
    assert "Re-record only what missed" in done.refresh.skipped
    assert pull.branch() == pull.head


def test_a_comment_that_names_no_commit_is_refused_in_one_line(pull: Pull) -> None:
    done = run_refresh(pull, "/attest refresh alpha")

    assert done.commit is not None and done.commit.returncode == 0, done.commit.log
    [reply] = pull.replies()
    assert reply.startswith("attest refresh: name the commit you read:")
    assert pull.branch() == pull.head


# --- nothing the pull request planted runs in a step that holds a token or a secret ----------------


def test_nothing_planted_in_the_pull_requests_checkout_runs_in_either_job(pull: Pull) -> None:
    done = run_refresh(pull, f"/attest refresh {pull.head} alpha", plant=True)

    assert done.commit is not None and done.commit.returncode == 0, done.refresh.log + done.commit.log
    assert plants.ran(pull.tmp / f"run-{pull.runs}" / "markers") == []
