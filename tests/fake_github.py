"""A local fake of GitHub's REST API: just what the publisher uses, following the documented contract.

It runs `http.server` in a thread on 127.0.0.1 (port 0) and reproduces:

- `GET /repos/{o}/{r}/issues/{n}` (its `comments_url`, which a PyGithub that reads the issue before its
  comments follows), and issue comments: `GET /repos/{o}/{r}/issues/{n}/comments` paginated with `per_page` (default 30,
  at most 100) and `page`, and a `Link` header with rel="first"/"prev"/"next"/"last" absolute URLs,
  omitted when everything fits on one page; `POST` to the same path creates (201);
  `PATCH`/`DELETE /repos/{o}/{r}/issues/comments/{id}` update (200) and delete (204).
  A body over 65,536 characters is refused with 422 "Validation Failed" and the error GitHub sends
  ("body is too long (maximum is 65536 characters)").
- `GET /repos/{o}/{r}/collaborators/{username}/permission`: `permission` is the legacy base role
  (admin, write, read or none; the maintain role reports write and triage read) and `role_name` the
  role itself; a user given no role has read, as on a public repository; an unknown login is a 404.
- `GET /repos/{o}/{r}` (with its `default_branch`), `GET /repos/{o}/{r}/pulls/{n}` (head and base with
  their repositories) and `GET /repos/{o}/{r}/contents/{path}?ref=` (a file, base64; 404 when absent).
- Check runs: `POST /repos/{o}/{r}/check-runs` (201) and `PATCH /repos/{o}/{r}/check-runs/{id}`, where
  annotations are appended to those already there. With `null_urls`, check runs come back with a null
  `html_url`, as GitHub's description of the response allows.
- Request bodies are validated against the schemas of GitHub's OpenAPI description
  (tests/github_openapi.py extracts them from `@octokit/openapi`): a body it does not allow (a
  missing field, more than 50 annotations, a check run summary over 65,535 UTF-8 bytes, an annotation
  message over 64 KB or a title over 255 characters) is a 422 "Invalid request.", as GitHub answers.
- Token identities: `GET /user` answers a user's token (a PAT) with its login, and an installation
  token (an Actions `GITHUB_TOKEN`, the default here) with 403 "Resource not accessible by
  integration"; a comment is written by the token's identity (`github-actions[bot]` for an
  installation token). Like GitHub, a token with write access may edit or delete anyone's comment:
  telling ours from theirs is the publisher's job.
- A read-only token (a fork's `GITHUB_TOKEN`): reads work, every write answers 403
  "Resource not accessible by integration".
- Rate limits, injected for the next N requests: primary (403 or 429, `x-ratelimit-remaining: 0`,
  `x-ratelimit-reset` epoch seconds, message "API rate limit exceeded ..."), secondary (403 or 429
  with `retry-after` seconds, message "You have exceeded a secondary rate limit ..."), and 5xx.
- Every response carries the `x-ratelimit-*` headers; a request without a token is a 401.

Every request is recorded (method, path, query, JSON body) so tests assert what was sent.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import re
import threading
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlencode, urlsplit

import github_openapi
from jsonschema import Draft4Validator, ValidationError, validators
from jsonschema.exceptions import best_match

COMMENT_MAX = 65_536
DOCS = "https://docs.github.com/rest"
INSTALLATION_BOT = "github-actions[bot]"
_EPOCH = datetime(2024, 1, 1, tzinfo=timezone.utc)


@dataclass
class Recorded:
    method: str
    path: str
    query: dict[str, str]
    body: Any
    status: int = 0


@dataclass
class Fault:
    status: int
    headers: dict[str, str]
    body: dict[str, Any]
    methods: frozenset[str] | None = None  # None: any request


@dataclass
class State:
    repos: dict[str, dict[str, Any]] = field(default_factory=dict)
    pulls: dict[tuple[str, int], dict[str, Any]] = field(default_factory=dict)
    comments: dict[tuple[str, int], list[dict[str, Any]]] = field(default_factory=dict)
    check_runs: dict[int, dict[str, Any]] = field(default_factory=dict)
    read_only_tokens: set[str] = field(default_factory=set)
    files: dict[tuple[str, str, str], str] = field(default_factory=dict)  # (repo, ref, path) -> text
    user_tokens: dict[str, str] = field(default_factory=dict)  # a PAT -> its user's login
    roles: dict[tuple[str, str], str] = field(default_factory=dict)  # (repo, login) -> role_name
    users: set[str] = field(default_factory=set)  # logins that exist
    faults: list[Fault] = field(default_factory=list)
    requests: list[Recorded] = field(default_factory=list)
    next_id: int = 1000
    tick: int = 0
    race_bodies: list[tuple[str, str | None]] = field(default_factory=list)


class FakeGitHub:
    """Start with `with FakeGitHub() as gh:`; `gh.url` is the API base URL (GITHUB_API_URL)."""

    def __init__(self) -> None:
        self.state = State()
        self.null_urls = False
        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        # A short poll interval keeps shutdown quick between tests.
        self._thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)

    def __enter__(self) -> FakeGitHub:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self._thread.join()

    # --- set-up ------------------------------------------------------------------------------------

    def add_repo(self, full_name: str) -> None:
        owner, name = full_name.split("/")
        self.state.repos[full_name] = {
            "id": len(self.state.repos) + 1,
            "name": name,
            "full_name": full_name,
            "owner": {"login": owner},
            "private": False,
            "url": f"{self.url}/repos/{full_name}",
            "html_url": f"https://github.com/{full_name}",
            "default_branch": "main",
        }

    def add_pull(self, repo: str, number: int, head_sha: str, head_repo: str | None = None) -> None:
        for name in {repo, head_repo or repo}:
            if name not in self.state.repos:
                self.add_repo(name)
        self.state.pulls[(repo, number)] = {
            "number": number,
            "url": f"{self.url}/repos/{repo}/pulls/{number}",
            "html_url": f"https://github.com/{repo}/pull/{number}",
            "head": {"sha": head_sha, "ref": "topic", "repo": self.state.repos[head_repo or repo]},
            "base": {"sha": "0" * 40, "ref": "main", "repo": self.state.repos[repo]},
        }
        self.state.comments.setdefault((repo, number), [])

    def add_file(self, repo: str, path: str, text: str, ref: str = "main") -> None:
        """A file of `repo` at branch `ref`, for the contents API."""
        self.state.files[(repo, ref, path)] = text

    def add_comment(self, repo: str, number: int, body: str, login: str = "someone") -> dict[str, Any]:
        with self.lock:
            return self._new_comment(repo, number, body, login)

    def race_next_create(self, body: str, login: str | None = None) -> None:
        """Another comment lands just before the next one created: another publish of the same token
        racing (`login` None), or someone else's at that moment."""
        self.state.race_bodies.append((body, login))

    def user_token(self, token: str, login: str) -> None:
        """`token` is a user's personal access token: GET /user answers with `login`."""
        self.state.user_tokens[token] = login

    def role(self, repo: str, login: str, role_name: str | None) -> None:
        """`login` exists and has `role_name` (admin, maintain, write, triage, read) on `repo`, or none."""
        self.state.users.add(login)
        if role_name is not None:
            self.state.roles[(repo, login)] = role_name

    def read_only(self, token: str) -> None:
        self.state.read_only_tokens.add(token)

    def fail_next(
        self,
        count: int,
        status: int,
        headers: dict[str, str] | None = None,
        message: str = "Server Error",
        methods: set[str] | None = None,
    ) -> None:
        """The next `count` requests (of `methods`, default any) get this answer instead."""
        body = {"message": message, "documentation_url": DOCS}
        fault = Fault(status, dict(headers or {}), body, frozenset(methods) if methods else None)
        self.state.faults.extend([fault] * count)

    def primary_rate_limit(self, count: int, reset: int, status: int = 403) -> None:
        self.fail_next(
            count,
            status,
            {"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(reset), "x-ratelimit-limit": "1000"},
            "API rate limit exceeded for installation ID 1.",
        )

    def secondary_rate_limit(self, count: int, retry_after: int, status: int = 403) -> None:
        self.fail_next(
            count,
            status,
            {"retry-after": str(retry_after)},
            "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.",
        )

    # --- what happened ------------------------------------------------------------------------------

    def requests(self, method: str | None = None, path_contains: str = "") -> list[Recorded]:
        return [
            r
            for r in self.state.requests
            if (method is None or r.method == method) and path_contains in r.path
        ]

    def comments(self, repo: str, number: int) -> list[dict[str, Any]]:
        return list(self.state.comments.get((repo, number), []))

    # --- internals ----------------------------------------------------------------------------------

    def _now(self) -> str:
        self.state.tick += 1
        return (_EPOCH + timedelta(seconds=self.state.tick)).strftime("%Y-%m-%dT%H:%M:%SZ")

    def _new_comment(self, repo: str, number: int, body: str, login: str) -> dict[str, Any]:
        self.state.next_id += 1
        cid, now = self.state.next_id, self._now()
        comment = {
            "id": cid,
            "node_id": f"IC_{cid}",
            "url": f"{self.url}/repos/{repo}/issues/comments/{cid}",
            "html_url": f"https://github.com/{repo}/pull/{number}#issuecomment-{cid}",
            "issue_url": f"{self.url}/repos/{repo}/issues/{number}",
            "body": body,
            "user": {"login": login, "type": "Bot" if login.endswith("[bot]") else "User"},
            "created_at": now,
            "updated_at": now,
        }
        self.state.comments.setdefault((repo, number), []).append(comment)
        return comment


# The handlers whose request bodies GitHub's OpenAPI description constrains, by operationId.
OPERATIONS = {
    "create_comment": "issues/create-comment",
    "update_comment": "issues/update-comment",
    "create_check_run": "checks/create",
    "update_check_run": "checks/update",
}


def _max_bytes(validator: Any, limit: int, instance: Any, schema: dict[str, Any]) -> Any:
    if isinstance(instance, str) and len(instance.encode("utf-8")) > limit:
        yield ValidationError(f"is longer than {limit} bytes in UTF-8")


# JSON Schema as OpenAPI 3.0 uses it (draft 4's keywords), plus the byte limits github_openapi.py adds.
_Validator = validators.extend(Draft4Validator, {"x-max-bytes": _max_bytes})


@functools.cache
def _validators() -> dict[str, Any]:
    return {op: _Validator(entry["schema"]) for op, entry in github_openapi.load().items()}


def _validate(handler: str, body: Any) -> None:
    """A 422 as GitHub answers a body its OpenAPI description does not allow."""
    error = best_match(_validators()[OPERATIONS[handler]].iter_errors(body))
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "body"
        raise _error(422, f"Invalid request.\n\n{where}: {error.message}")


class _Reply(Exception):
    def __init__(self, status: int, body: Any = None, headers: dict[str, str] | None = None) -> None:
        self.status, self.body, self.headers = status, body, headers or {}


def _error(status: int, message: str, errors: list[dict[str, Any]] | None = None) -> _Reply:
    body: dict[str, Any] = {"message": message, "documentation_url": DOCS}
    if errors:
        body["errors"] = errors
    return _Reply(status, body)


_ROUTES: list[tuple[str, re.Pattern[str], str]] = [
    (m, re.compile(p), h)
    for m, p, h in (
        ("GET", r"^/user$", "get_user"),
        ("GET", r"^/repos/([^/]+/[^/]+)$", "get_repo"),
        ("GET", r"^/repos/([^/]+/[^/]+)/collaborators/([^/]+)/permission$", "get_permission"),
        ("GET", r"^/repos/([^/]+/[^/]+)/pulls/(\d+)$", "get_pull"),
        ("GET", r"^/repos/([^/]+/[^/]+)/contents/(.+)$", "get_content"),
        ("GET", r"^/repos/([^/]+/[^/]+)/issues/(\d+)$", "get_issue"),
        ("GET", r"^/repos/([^/]+/[^/]+)/issues/(\d+)/comments$", "list_comments"),
        ("POST", r"^/repos/([^/]+/[^/]+)/issues/(\d+)/comments$", "create_comment"),
        ("PATCH", r"^/repos/([^/]+/[^/]+)/issues/comments/(\d+)$", "update_comment"),
        ("DELETE", r"^/repos/([^/]+/[^/]+)/issues/comments/(\d+)$", "delete_comment"),
        ("POST", r"^/repos/([^/]+/[^/]+)/check-runs$", "create_check_run"),
        ("PATCH", r"^/repos/([^/]+/[^/]+)/check-runs/(\d+)$", "update_check_run"),
    )
]


def _handler(fake: FakeGitHub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:  # quiet test output
            pass

        def do_GET(self) -> None:
            self._serve("GET")

        def do_POST(self) -> None:
            self._serve("POST")

        def do_PATCH(self) -> None:
            self._serve("PATCH")

        def do_DELETE(self) -> None:
            self._serve("DELETE")

        def _serve(self, method: str) -> None:
            split = urlsplit(self.path)
            query = {k: v[-1] for k, v in parse_qs(split.query).items()}
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw) if raw else None
            except json.JSONDecodeError:
                body = None
            record = Recorded(method, split.path, query, body)
            with fake.lock:
                fake.state.requests.append(record)
                try:
                    self._answer(method, split.path, query, body)
                except _Reply as reply:
                    record.status = reply.status
                    self._send(reply.status, reply.body, reply.headers)

        def _answer(self, method: str, path: str, query: dict[str, str], body: Any) -> None:
            state = fake.state
            for i, fault in enumerate(state.faults):
                if fault.methods is None or method in fault.methods:
                    del state.faults[i]
                    raise _Reply(fault.status, fault.body, fault.headers)
            auth = self.headers.get("Authorization", "")
            token = auth.split(" ", 1)[1] if " " in auth else ""
            if not token:
                raise _error(401, "Requires authentication")
            if method != "GET" and token in state.read_only_tokens:
                raise _error(403, "Resource not accessible by integration")
            self.login = state.user_tokens.get(token, INSTALLATION_BOT)
            for route_method, pattern, name in _ROUTES:
                match = pattern.match(path)
                if match and route_method == method:
                    if name in OPERATIONS:
                        _validate(name, body)
                    getattr(self, name)(*match.groups(), query=query, body=body)
            raise _error(404, "Not Found")

        # --- endpoints (each raises its _Reply) ----------------------------------------------------

        def _repo(self, repo: str) -> dict[str, Any]:
            if repo not in fake.state.repos:
                raise _error(404, "Not Found")
            return fake.state.repos[repo]

        def get_user(self, **_: Any) -> None:
            if self.login == INSTALLATION_BOT:
                raise _error(403, "Resource not accessible by integration")
            raise _Reply(200, {"login": self.login, "id": 1, "type": "User"})

        def get_repo(self, repo: str, **_: Any) -> None:
            raise _Reply(200, self._repo(repo))

        def get_permission(self, repo: str, login: str, **_: Any) -> None:
            self._repo(repo)
            login = unquote(login)
            if login not in fake.state.users:
                raise _error(404, "Not Found")
            role = fake.state.roles.get((repo, login), "read")
            legacy = {"maintain": "write", "triage": "read"}.get(role, role)
            user = {"login": login, "id": 1, "type": "User"}
            raise _Reply(200, {"permission": legacy, "role_name": role, "user": user})

        def get_pull(self, repo: str, number: str, **_: Any) -> None:
            self._repo(repo)
            pull = fake.state.pulls.get((repo, int(number)))
            if pull is None:
                raise _error(404, "Not Found")
            raise _Reply(200, pull)

        def get_content(self, repo: str, path: str, query: dict[str, str], **_: Any) -> None:
            ref = query.get("ref") or self._repo(repo)["default_branch"]
            text = fake.state.files.get((repo, ref, unquote(path)))
            if text is None:
                raise _error(404, "Not Found")
            data = text.encode()
            raise _Reply(
                200,
                {
                    "type": "file",
                    "encoding": "base64",
                    "size": len(data),
                    "name": unquote(path).rsplit("/", 1)[-1],
                    "path": unquote(path),
                    "content": base64.b64encode(data).decode(),
                    "sha": hashlib.sha1(data).hexdigest(),
                    "url": f"{fake.url}/repos/{repo}/contents/{path}?ref={ref}",
                },
            )

        def _issue(self, repo: str, number: str) -> list[dict[str, Any]]:
            self._repo(repo)
            key = (repo, int(number))
            if key not in fake.state.comments:
                raise _error(404, "Not Found")
            return fake.state.comments[key]

        def get_issue(self, repo: str, number: str, **_: Any) -> None:
            comments = self._issue(repo, number)
            url = f"{fake.url}/repos/{repo}/issues/{number}"
            issue = {"id": int(number), "number": int(number), "state": "open", "title": f"#{number}"}
            raise _Reply(
                200, {**issue, "url": url, "comments_url": f"{url}/comments", "comments": len(comments)}
            )

        def list_comments(self, repo: str, number: str, query: dict[str, str], **_: Any) -> None:
            comments = self._issue(repo, number)
            per_page = min(max(int(query.get("per_page", 30)), 1), 100)
            page = max(int(query.get("page", 1)), 1)
            last = max((len(comments) + per_page - 1) // per_page, 1)
            items = comments[(page - 1) * per_page : page * per_page]
            links = {}
            if last > 1:
                base = f"{fake.url}/repos/{repo}/issues/{number}/comments"

                def at(p: int) -> str:
                    return f"<{base}?{urlencode({'per_page': per_page, 'page': p})}>"

                if page > 1:
                    links["prev"], links["first"] = at(page - 1), at(1)
                if page < last:
                    links["next"], links["last"] = at(page + 1), at(last)
            header = ", ".join(f'{url}; rel="{rel}"' for rel, url in links.items())
            raise _Reply(200, items, {"Link": header} if header else {})

        def _body(self, body: Any) -> str:
            text = body.get("body") if isinstance(body, dict) else None
            if not isinstance(text, str):
                raise _error(
                    422,
                    "Validation Failed",
                    [{"resource": "IssueComment", "code": "missing_field", "field": "body"}],
                )
            if len(text) > COMMENT_MAX:
                raise _error(
                    422,
                    "Validation Failed",
                    [
                        {
                            "resource": "IssueComment",
                            "code": "custom",
                            "field": "body",
                            "message": f"body is too long (maximum is {COMMENT_MAX} characters)",
                        }
                    ],
                )
            return text

        def create_comment(self, repo: str, number: str, body: Any, **_: Any) -> None:
            self._issue(repo, number)
            text = self._body(body)
            while fake.state.race_bodies:
                race, login = fake.state.race_bodies.pop(0)
                fake._new_comment(repo, int(number), race, login or self.login)
            raise _Reply(201, fake._new_comment(repo, int(number), text, self.login))

        def _find_comment(self, repo: str, cid: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
            for (r, _n), comments in fake.state.comments.items():
                for comment in comments:
                    if r == repo and comment["id"] == int(cid):
                        return comments, comment
            raise _error(404, "Not Found")

        def update_comment(self, repo: str, cid: str, body: Any, **_: Any) -> None:
            _, comment = self._find_comment(repo, cid)
            comment["body"] = self._body(body)
            comment["updated_at"] = fake._now()
            raise _Reply(200, comment)

        def delete_comment(self, repo: str, cid: str, **_: Any) -> None:
            comments, comment = self._find_comment(repo, cid)
            comments.remove(comment)
            raise _Reply(204)

        def _annotations(self, body: dict[str, Any]) -> list[dict[str, Any]]:
            return list((body.get("output") or {}).get("annotations") or [])

        def _check_run_json(self, repo: str, run: dict[str, Any]) -> dict[str, Any]:
            return {
                **{k: v for k, v in run.items() if k != "annotations"},
                "url": f"{fake.url}/repos/{repo}/check-runs/{run['id']}",
                "html_url": None if fake.null_urls else f"https://github.com/{repo}/runs/{run['id']}",
                "output": {**run.get("output", {}), "annotations_count": len(run["annotations"])},
            }

        def create_check_run(self, repo: str, body: Any, **_: Any) -> None:
            self._repo(repo)
            annotations = self._annotations(body)
            fake.state.next_id += 1
            run = {
                "id": fake.state.next_id,
                "name": body["name"],
                "head_sha": body["head_sha"],
                "status": body.get("status", "queued"),
                "conclusion": body.get("conclusion"),
                "output": {k: v for k, v in (body.get("output") or {}).items() if k != "annotations"},
                "annotations": list(annotations),
            }
            fake.state.check_runs[run["id"]] = run
            raise _Reply(201, self._check_run_json(repo, run))

        def update_check_run(self, repo: str, rid: str, body: Any, **_: Any) -> None:
            run = fake.state.check_runs.get(int(rid))
            if run is None:
                raise _error(404, "Not Found")
            annotations = self._annotations(body)
            run["annotations"].extend(annotations)
            for key in ("status", "conclusion", "name"):
                if key in (body or {}):
                    run[key] = body[key]
            if (body or {}).get("output"):
                run["output"] = {k: v for k, v in body["output"].items() if k != "annotations"}
            raise _Reply(200, self._check_run_json(repo, run))

        # --- the wire -------------------------------------------------------------------------------

        def _send(self, status: int, body: Any, headers: dict[str, str]) -> None:
            data = b"" if body is None else json.dumps(body).encode()
            self.send_response(status)
            base = {
                "x-ratelimit-limit": "1000",
                "x-ratelimit-remaining": "999",
                "x-ratelimit-reset": "1704070800",
                "x-ratelimit-used": "1",
                "x-ratelimit-resource": "core",
            }
            for key, value in {**base, **headers}.items():
                self.send_header(key, value)
            if body is not None:
                self.send_header("Content-Type", "application/json; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler
