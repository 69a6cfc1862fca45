"""Every GitHub API call attest makes, through PyGithub: the sticky comment, check runs, PR heads.

Retries follow GitHub's documented rate-limit contract, in this order: a `retry-after` header is
waited out; else, when `x-ratelimit-remaining` is 0, the wait lasts until `x-ratelimit-reset` (plus a
second, the reset being whole seconds); else a rate-limited 403/429 waits at least a minute, as the
documentation asks; else (5xx, a dropped connection) exponential backoff. Attempts per request and the
total wait of a publish are bounded, and a wait longer than allowed gives up at once instead of
blocking the job. The sleep function and the clock are injectable so tests never wait.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import requests
from github import Auth, Github, GithubException, GithubRetry, UnknownObjectException
from github.CheckRun import CheckRun
from github.IssueComment import IssueComment
from urllib3.exceptions import MaxRetryError, ResponseError

from ..forge.sticky import MARKER as MARKER  # named here too, where the GitHub modules read it
from ..forge.sticky import is_sticky, sticky_body
from ..forge.waits import retry_after
from .trim import COMMENT_LIMIT

# Who comments with an Actions GITHUB_TOKEN (an installation token, for which GET /user answers 403).
ACTIONS_BOT = "github-actions[bot]"
ANNOTATIONS_PER_REQUEST = 50
COMMENT_NOTICE = "… trimmed to fit GitHub's 65,536-character comment limit; see the job summary for the rest."


class PublishError(Exception):
    """GitHub could not be reached or refused a request; publishing degrades, the verdict stands."""


class ReadOnlyToken(PublishError):
    """403 "Resource not accessible by integration": the token may read but not write (a fork's)."""


@dataclass(frozen=True)
class RetryPolicy:
    """How long and how often to retry; `sleep` and `clock` are injectable for tests."""

    attempts: int = 5
    backoff: float = 2.0
    max_wait: float = 120.0
    total_wait: float = 300.0
    secondary_wait: float = 60.0
    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.time
    # PyGithub's pacing between requests (GitHub asks for a second between writes); None turns it off.
    seconds_between_requests: float | None = 0.25
    seconds_between_writes: float | None = 1.0


# What a publish uses when not told otherwise (tests replace it to make waiting instant).
DEFAULT_RETRY = RetryPolicy()


@dataclass
class _Budget:
    """The total wait left to one publish, shared by every request's retry state."""

    left: float
    waits: list[float] = field(default_factory=list)
    gave_up: str | None = None


def _header(response: Any, name: str) -> str | None:
    headers = getattr(response, "headers", None) or {}
    value = headers.get(name)
    return value.strip() if isinstance(value, str) else None


class _Retry(GithubRetry):
    """PyGithub's retry (it tells a rate-limited 403 from a refused one) with GitHub's documented waits."""

    def __init__(self, policy: RetryPolicy, budget: _Budget, planned: float = 0.0, **kwargs: Any) -> None:
        self.policy = policy
        self.budget = budget
        self.planned = planned
        super().__init__(**kwargs)

    def new(self, **kw: Any) -> _Retry:
        kw.setdefault("policy", self.policy)
        kw.setdefault("budget", self.budget)
        return super().new(**kw)

    def wait_for(self, response: Any, retry_number: int) -> float:
        now = self.policy.clock()
        status = getattr(response, "status", None)
        after = _header(response, "retry-after")
        if after is not None and (wait := retry_after(after, now)) is not None:
            return wait
        reset = _header(response, "x-ratelimit-reset")
        if _header(response, "x-ratelimit-remaining") == "0" and reset and reset.isdigit():
            return max(int(reset) - now, 0.0) + 1.0
        backoff = self.policy.backoff * 2 ** (retry_number - 1)
        if status in (403, 429):
            return max(self.policy.secondary_wait, backoff)
        return backoff

    def increment(  # type: ignore[override]
        self,
        method: str | None = None,
        url: str | None = None,
        response: Any = None,
        error: Exception | None = None,
        _pool: Any = None,
        _stacktrace: Any = None,
    ) -> _Retry:
        new = super().increment(method, url, response, error, _pool, _stacktrace)
        wait = self.wait_for(response, len(new.history))
        if wait > self.policy.max_wait or wait > self.budget.left:
            # Waiting that long would hold the job up for a comment: give up on this request now.
            allowed = min(self.policy.max_wait, self.budget.left)
            self.budget.gave_up = f"GitHub asked to wait {wait:.0f}s, more than the {allowed:.0f}s allowed"
            raise MaxRetryError(_pool, url or "", ResponseError(self.budget.gave_up))
        assert isinstance(new, _Retry)  # urllib3 builds the next retry with `new`, ours
        new.planned = wait
        return new

    def sleep(self, response: Any = None) -> None:
        self.budget.left -= self.planned
        self.budget.waits.append(self.planned)
        self.policy.sleep(self.planned)


def make_retry(policy: RetryPolicy) -> _Retry:
    return _Retry(
        policy,
        _Budget(left=policy.total_wait),
        total=policy.attempts - 1,
        status_forcelist=[429, *range(500, 600)],
        allowed_methods=frozenset({"GET", "POST", "PATCH", "DELETE", "PUT", "HEAD"}),
        # The last response reaches PyGithub, which turns it into an exception naming the status.
        raise_on_status=False,
    )


@dataclass(frozen=True)
class CommentResult:
    url: str
    action: str  # "created", "updated" or "unchanged"
    deleted: int = 0


def comment_body(markdown: str) -> str:
    """The rendered summary, trimmed under GitHub's limit, with the footer and the sticky marker line."""
    return sticky_body(markdown, COMMENT_LIMIT, COMMENT_NOTICE)


def _message(exc: GithubException) -> str:
    data = exc.data if isinstance(exc.data, dict) else {}
    message = str(data.get("message") or "").strip()
    errors = [e for e in data.get("errors", []) if isinstance(e, dict)]
    details = [str(e["message"]) for e in errors if e.get("message")]
    text = "; ".join([message, *details]) if message else "; ".join(details)
    return " ".join(text.split()) or "no message"


@contextmanager
def _calling(step: str, budget: _Budget) -> Iterator[None]:
    """PyGithub and transport failures as PublishError / ReadOnlyToken, one line, no token."""
    budget.gave_up = None
    try:
        yield
    except GithubException as exc:
        message = _message(exc)
        if exc.status == 403 and "not accessible by" in message.lower():
            raise ReadOnlyToken(f"{step}: the token is read-only ({message})") from None
        if budget.gave_up:
            message = f"rate limited: {budget.gave_up}"
        raise PublishError(f"{step}: GitHub answered {exc.status}: {message}") from None
    except (requests.RequestException, MaxRetryError, OSError) as exc:
        raise PublishError(f"{step}: {type(exc).__name__}: {' '.join(str(exc).split())}") from None


class Publisher:
    """A repository on GitHub (or a server at `api_url` speaking its REST API)."""

    def __init__(
        self,
        token: str,
        repository: str,
        api_url: str = "https://api.github.com",
        retry: RetryPolicy | None = None,
        per_page: int = 100,
        bot_login: str = ACTIONS_BOT,
    ) -> None:
        policy = retry or DEFAULT_RETRY
        self.bot_login = bot_login
        self._login: str | None = None
        self.retry = make_retry(policy)
        # PyGithub logs each retry at INFO on stderr; the publish prints its own one-line outcome.
        logging.getLogger("github").setLevel(logging.WARNING)
        self._github = Github(
            auth=Auth.Token(token),
            base_url=api_url,
            per_page=per_page,
            retry=self.retry,
            seconds_between_requests=policy.seconds_between_requests,
            seconds_between_writes=policy.seconds_between_writes,
            lazy=True,
        )
        self._repo = self._github.get_repo(repository)

    def close(self) -> None:
        self._github.close()

    @property
    def waits(self) -> list[float]:
        """Every retry wait so far, in order."""
        return self.retry.budget.waits

    def login(self) -> str:
        """Who the token comments as: `GET /user` for a user's token; an installation token (an
        Actions GITHUB_TOKEN, a GitHub App's) may not read /user and comments as its app's bot.
        """
        if self._login is None:
            with _calling("token identity", self.retry.budget):
                try:
                    self._login = str(self._github.get_user().login)
                except GithubException as exc:
                    if not (exc.status == 403 and "not accessible by" in _message(exc).lower()):
                        raise
                    self._login = self.bot_login
        return self._login

    def _sticky(self, pr_number: int) -> list[IssueComment]:
        """Our summary comments: the marker as the last line AND written by this token's identity.

        Anyone can paste the marker into a comment; only the author tells ours from theirs, so a
        comment by anyone else is never edited or deleted, whatever it contains.
        """
        login = self.login()
        # PaginatedList follows the Link header's rel="next" across every page.
        comments = [
            c
            for c in self._repo.get_issue(pr_number).get_comments()
            if is_sticky(c.body) and c.user is not None and c.user.login == login
        ]
        return sorted(comments, key=lambda c: (c.created_at, c.id))

    def _delete(self, comments: list[IssueComment]) -> int:
        deleted = 0
        for comment in comments:
            try:
                comment.delete()
                deleted += 1
            except UnknownObjectException:
                pass  # a concurrent publish removed it first
        return deleted

    def upsert_comment(self, pr_number: int, markdown: str, *, create: bool = True) -> CommentResult:
        """The one sticky comment of the PR holds `markdown`: created, updated in place, or left alone.
        `create=False` edits an existing comment but posts no new one (`comment: on-change`)."""
        body = comment_body(markdown)
        with _calling("comment", self.retry.budget):
            found = self._sticky(pr_number)
            if not found and not create:
                return CommentResult("", "not posted", 0)
            if not found:
                created = self._repo.get_issue(pr_number).create_comment(body)
                # Two publishes racing may both have created one: keep the oldest, as a later run would.
                found = self._sticky(pr_number) or [created]
                keep, deleted = found[0], self._delete(found[1:])
                if keep.id == created.id or keep.body == body:
                    return CommentResult(keep.html_url, "created", deleted)
                keep.edit(body)
                return CommentResult(keep.html_url, "updated", deleted)
            keep, deleted = found[0], self._delete(found[1:])
            if keep.body == body:
                return CommentResult(keep.html_url, "unchanged", deleted)
            keep.edit(body)
            return CommentResult(keep.html_url, "updated", deleted)

    def default_branch_file(self, paths: tuple[str, ...]) -> tuple[str, str, str] | None:
        """(branch, path, text) of the first of `paths` on the default branch, through the contents
        API, so nothing is checked out and nothing of a pull request runs; None when none exists."""
        with _calling("policy file", self.retry.budget):
            branch = self._repo.default_branch
            for path in paths:
                try:
                    content = self._repo.get_contents(path, ref=branch)
                except UnknownObjectException:
                    continue
                if isinstance(content, list):  # a directory of that name
                    continue
                return branch, path, content.decoded_content.decode("utf-8", errors="replace")
        return None

    def pull_head_sha(self, pr_number: int) -> str:
        with _calling("pull request", self.retry.budget):
            return self._repo.get_pull(pr_number).head.sha

    def pull_head(self, pr_number: int) -> tuple[str, str, str]:
        """(the head's repository, its branch, its commit) of a pull request."""
        with _calling("pull request", self.retry.budget):
            head = self._repo.get_pull(pr_number).head
            return head.repo.full_name, head.ref, head.sha

    def permission(self, login: str) -> str:
        """`login`'s permission on the repository as GitHub reports it: admin, write (which the
        maintain role reports too), read or none."""
        with _calling("permission", self.retry.budget):
            return self._repo.get_collaborator_permission(login)

    def create_check_run(
        self,
        *,
        name: str,
        head_sha: str,
        conclusion: str,
        title: str,
        summary: str,
        annotations: list[dict[str, Any]],
    ) -> str:
        """A completed check run; annotations go 50 per request (create, then updates that append)."""
        size = ANNOTATIONS_PER_REQUEST
        chunks = [annotations[i : i + size] for i in range(0, len(annotations), size)]
        output: dict[str, Any] = {"title": title, "summary": summary}
        with _calling("check run", self.retry.budget):
            run: CheckRun = self._repo.create_check_run(
                name=name,
                head_sha=head_sha,
                status="completed",
                conclusion=conclusion,
                output={**output, "annotations": chunks[0]} if chunks else output,
            )
            for chunk in chunks[1:]:
                run.edit(output={**output, "annotations": chunk})
        return run.html_url
