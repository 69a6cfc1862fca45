"""`/attest refresh COMMIT [NAME...]` on a pull request: who may start it, what it re-records, the reply.

Who: the commenter's permission on the repository, asked of the API (admin, or write, which GitHub
also reports for the maintain role). A comment's author association is not a permission: MEMBER is
any member of the organisation.

What: COMMIT is the full hash of the pull request's head the commenter read. GitHub's issue_comment
event names no commit, and a commit's dates are whatever its author wrote, so only the commenter can
say which commit they read; a pull request from a fork, or whose head is no longer COMMIT, is refused
with one reply line and nothing runs.

The reply: what each re-run printed is redacted where it was printed (with the job's own secret
values and the credential scan) before anything keeps it, redacted again by the job that posts it,
and shown inside a code fence longer than any run of backticks in it, so it is text and never
markdown of its own (no verdict, link or sticky marker can be written through it).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..credentials.scan import Secrets, is_env_secret
from ..errors import UsageError, read_text
from ..fixtures.document import atomic_write
from .event import read_event
from .publisher import Publisher, PublishError

COMMAND = "/attest refresh"
USAGE = f"`{COMMAND} COMMIT [NAME...]`, COMMIT the full hash of the pull request's head you read"
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
COMMIT = re.compile(r"[0-9a-f]{40}")
MAY_REFRESH = frozenset({"admin", "write"})  # GitHub reports the maintain role as write
RESULTS = "results.json"
LOGS = "logs"
LOG_CHARS = 8_000  # of each re-run's output in the reply: its end, where the error is


class NotAllowed(UsageError):
    """The commenter may not start a refresh: nothing runs and nothing is replied."""

    exit_code = 1


@dataclass(frozen=True)
class Plan:
    """What to re-record, or `refused`: the one line to reply instead."""

    sha: str = ""
    ref: str = ""
    names: tuple[str, ...] = ()
    refused: str = ""

    def outputs(self) -> dict[str, str]:
        return {"sha": self.sha, "ref": self.ref, "names": " ".join(self.names), "refused": self.refused}


def _field(event: Mapping[str, Any], *path: str) -> Any:
    value: Any = event
    for key in path:
        value = value.get(key) if isinstance(value, Mapping) else None
    return value


def parse_comment(body: str) -> tuple[str, tuple[str, ...]] | str:
    """(commit, names) from the comment's first line, or the reply line that refuses it."""
    words = (body.splitlines() or [""])[0].split()
    if words[:2] != COMMAND.split():
        return f"attest refresh: not a refresh request; write {USAGE}."
    if len(words) < 3 or not COMMIT.fullmatch(words[2]):
        return f"attest refresh: name the commit you read: {USAGE}."
    bad = [name for name in words[3:] if not NAME.fullmatch(name)]
    if bad:
        return f"attest refresh: not a fixture name: `{bad[0][:64].replace('`', '')}`."
    return words[2], tuple(words[3:])


def plan(event: Mapping[str, Any], repository: str, github: Publisher) -> Plan:
    """Check who asked and which commit they read; raises NotAllowed for a commenter without write."""
    login = _field(event, "comment", "user", "login")
    number = _field(event, "issue", "number")
    body = _field(event, "comment", "body")
    if not isinstance(login, str) or not isinstance(number, int) or not isinstance(body, str):
        raise UsageError("not an issue_comment event (comment.user.login, issue.number, comment.body)")
    try:
        permission = github.permission(login)
    except PublishError as exc:  # GitHub answers 404 for a login it does not know
        raise NotAllowed(f"{login}'s permission on {repository} could not be read: {exc}") from None
    if permission not in MAY_REFRESH:
        raise NotAllowed(f"{login} has {permission} permission on {repository}; a refresh needs write")
    parsed = parse_comment(body)
    if isinstance(parsed, str):
        return Plan(refused=parsed)
    commit, names = parsed
    try:
        head_repo, ref, head = github.pull_head(number)
    except PublishError as exc:
        raise UsageError(str(exc)) from None
    if head_repo != repository:
        return Plan(refused="attest refresh: not run for pull requests from forks.")
    if head != commit:
        return Plan(
            refused=f"attest refresh: refused, the pull request moved: its head is {head}, not {commit}."
            " Read it, then comment again with its commit."
        )
    return Plan(sha=head, ref=ref, names=names)


def plan_from_env(env: Mapping[str, str], token_env: str) -> Plan:
    """`plan` for the run described by GITHUB_EVENT_PATH, GITHUB_REPOSITORY and GITHUB_API_URL."""
    token, repository = env.get(token_env, ""), env.get("GITHUB_REPOSITORY", "")
    if not token or not repository:
        raise UsageError(f"{token_env} and GITHUB_REPOSITORY must be set")
    event = read_event(env.get("GITHUB_EVENT_PATH", ""))
    github = Publisher(token, repository, env.get("GITHUB_API_URL", "https://api.github.com"))
    try:
        return plan(event, repository, github)
    finally:
        github.close()


# --- what the re-runs printed ----------------------------------------------------------------------


def job_secrets(env: Mapping[str, str], names: Iterable[str]) -> Secrets:
    """The values of the named variables and of every secret-looking one, beyond the scan's shapes."""
    named = [env[name] for name in names if env.get(name)]
    return Secrets.of([*named, *(value for key, value in env.items() if is_env_secret(key, value))])


def _exit_status(path: Path) -> int:
    text = read_text(path, UsageError, "exit status").strip()
    if not text.isdigit():
        raise UsageError(f"not an exit status: {text[:20]!r}", path)
    return int(text)


def keep_logs(raw: Path, out: Path, secrets: Secrets) -> list[dict[str, Any]]:
    """Each `NAME.exit` of `raw` with its `NAME.log`, redacted, written under `out` with RESULTS."""
    results = []
    (out / LOGS).mkdir(parents=True, exist_ok=True)
    for status in sorted(raw.glob("*.exit")):
        name = status.name.removesuffix(".exit")
        if not NAME.fullmatch(name):
            raise UsageError("not a fixture name", status)
        log = raw / f"{name}.log"
        text = log.read_text(encoding="utf-8", errors="replace") if log.is_file() else ""
        atomic_write(out / LOGS / f"{name}.log", secrets.redact(text[-LOG_CHARS:]), mode=0o644)
        results.append({"name": name, "exit": _exit_status(status)})
    atomic_write(out / RESULTS, json.dumps(results, indent=2) + "\n", mode=0o644)
    return results


# --- the reply --------------------------------------------------------------------------------------


def fenced(text: str) -> str:
    """`text` in a code block no line of it can close: the fence is longer than its longest backtick run."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}text\n{text.rstrip()}\n{fence}"


def _results(directory: Path) -> list[tuple[str, int]]:
    path = directory / RESULTS
    try:
        doc = json.loads(read_text(path, UsageError, "refresh results"))
    except json.JSONDecodeError as exc:
        raise UsageError(f"malformed JSON: {exc.msg}", path) from None
    rows = doc if isinstance(doc, list) else None
    if rows is None or not all(_is_result(row) for row in rows):
        raise UsageError("not a list of {name, exit} results", path)
    return [(row["name"], row["exit"]) for row in rows]


def _is_result(row: Any) -> bool:
    return (
        isinstance(row, dict)
        and isinstance(row.get("name"), str)
        and NAME.fullmatch(row["name"]) is not None
        and isinstance(row.get("exit"), int)
        and not isinstance(row["exit"], bool)
    )


def headline(commit: str, branch: str) -> str:
    """The reply's first line: what was committed (a hash) to which branch, or that nothing changed."""
    if not commit:
        return "attest refresh: nothing changed."
    if not re.fullmatch(r"[0-9a-f]{7,40}", commit):
        raise UsageError(f"not a commit hash: {commit[:40]!r}")
    return f"attest refresh: committed {commit} to `{branch.replace('`', '')}`."


def reply(directory: Path, first_line: str, diffstat: str, secrets: Secrets) -> str:
    """The reply's markdown: its first line, then each fixture's exit status and its output, fenced."""
    parts = [first_line, ""]
    for name, status in _results(directory):
        log = directory / LOGS / f"{name}.log"
        text = log.read_text(encoding="utf-8", errors="replace") if log.is_file() else ""
        parts.append(f"- `{name}`: exit {status}")
        if text.strip():
            parts += ["", fenced(secrets.redact(text[-LOG_CHARS:])), ""]
    if diffstat.strip():
        parts += ["", fenced(secrets.redact(diffstat))]
    return "\n".join(parts).rstrip() + "\n"
