"""A local fake of GitLab's REST API v4: just what the publisher uses, following the documented contract.

It runs `http.server` in a thread on 127.0.0.1 (port 0), under `/api/v4` as CI_API_V4_URL names it,
and reproduces:

- Authentication (https://docs.gitlab.com/api/rest/authentication/): a token is sent as the
  `PRIVATE-TOKEN` header; a request without one, or with one GitLab does not know, is a 401
  `{"message": "401 Unauthorized"}`.
- Users API, `GET /user` (https://docs.gitlab.com/api/users/#get-the-current-user): the token's own
  user, with its numeric `id` and `username`.
- Notes API on merge requests (https://docs.gitlab.com/api/notes/#merge-requests):
  `GET /projects/:id/merge_requests/:iid/notes` with `sort` (asc or desc, default desc) and
  `order_by` (created_at or updated_at); `POST` of `{"body"}` creates (201, the note with its
  `author`); `PUT .../notes/:note_id` updates (200); `DELETE .../notes/:note_id` deletes (204 No
  Content, https://docs.gitlab.com/api/notes/#delete-a-merge-request-note). A project is found by
  its numeric id or its URL-encoded path; an unknown project or merge request is a 404
  `{"message": "404 Project Not Found"}` (or "404 Merge Request Not Found", and "404 Note Not
  Found" for a note id it does not know). A note over 1,000,000 characters is a 400 "Note is too
  long" (the notes API's documented body limit). Editing or deleting a note of another user is a
  403 unless the token's user is a Maintainer of the project (GitLab lets a Maintainer edit and
  delete anyone's note, so telling ours from theirs is the publisher's job).
- Other clients: `race_next_create` posts another note just before the next one is created, as a
  pipeline racing this one would; `before_next` runs a change just before the next request of a
  method is answered (a racing pipeline deleting a note first).
- REST pagination (https://docs.gitlab.com/api/rest/#pagination): `page` and `per_page` (default
  20, at most 100); the headers `x-page`, `x-per-page`, `x-next-page` (empty on the last page),
  `x-prev-page`, `x-total` and `x-total-pages`, and a `Link` header with rel="prev"/"next"/
  "first"/"last" absolute URLs. `omit_total` leaves out `x-total` and `x-total-pages`, as GitLab
  does for large lists; `link_only` sends only the `Link` header, as keyset pagination does;
  `link_origin` points the `Link` URLs at another host, which a client must not send its token to.
- Rate limits (https://docs.gitlab.com/security/rate_limits/, https://docs.gitlab.com/user/gitlab_com/#rate-limits-on-gitlabcom):
  injected for the next N requests, a 429 "Retry later" with `Retry-After` (seconds) and the
  `RateLimit-Limit`, `RateLimit-Observed`, `RateLimit-Remaining`, `RateLimit-Reset` (Unix seconds)
  and `RateLimit-ResetTime` headers.

Every request is recorded (method, path, query, JSON body, status) so tests assert what was sent.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlencode, urlsplit

NOTE_MAX = 1_000_000
PREFIX = "/api/v4"
_EPOCH = datetime(2024, 1, 1, tzinfo=timezone.utc)


@dataclass
class Recorded:
    method: str
    path: str  # after /api/v4
    query: dict[str, str]
    body: Any
    status: int = 0


@dataclass
class State:
    projects: dict[int, str] = field(default_factory=dict)  # id -> path_with_namespace
    notes: dict[tuple[int, int], list[dict[str, Any]]] = field(default_factory=dict)  # (project, iid)
    tokens: dict[str, int] = field(default_factory=dict)  # token -> user id
    users: dict[int, str] = field(default_factory=dict)  # user id -> username
    maintainers: set[tuple[int, int]] = field(default_factory=set)  # (project, user id)
    faults: list[tuple[int, dict[str, str], Any]] = field(default_factory=list)
    requests: list[Recorded] = field(default_factory=list)
    omit_total: bool = False
    link_only: bool = False
    link_origin: str = ""  # another origin for the Link header's URLs (none: the fake's own)
    races: list[tuple[str, int]] = field(default_factory=list)  # (body, user id) posted before a create
    before: list[tuple[str, Callable[[], None]]] = field(default_factory=list)  # (method, what happens)
    next_id: int = 500
    tick: int = 0


class FakeGitLab:
    """Start with `with FakeGitLab() as gl:`; `gl.api_url` is CI_API_V4_URL."""

    def __init__(self) -> None:
        self.state = State()
        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.api_url = self.url + PREFIX
        self._thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)

    def __enter__(self) -> FakeGitLab:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self._thread.join()

    # --- set-up ------------------------------------------------------------------------------------

    def add_merge_request(self, project_id: int, path: str, iid: int) -> None:
        self.state.projects[project_id] = path
        self.state.notes.setdefault((project_id, iid), [])

    def add_user(self, user_id: int, username: str, token: str | None = None) -> None:
        self.state.users[user_id] = username
        if token is not None:
            self.state.tokens[token] = user_id

    def maintainer(self, project_id: int, user_id: int) -> None:
        self.state.maintainers.add((project_id, user_id))

    def add_note(
        self, project_id: int, iid: int, body: str, user_id: int, system: bool = False
    ) -> dict[str, Any]:
        with self.lock:
            return self._new_note(project_id, iid, body, user_id, system)

    def race_next_create(self, body: str, user_id: int) -> None:
        """The next note created has, just before it, this one: another pipeline's, or someone's."""
        self.state.races.append((body, user_id))

    def before_next(self, method: str, happening: Callable[[], None]) -> None:
        """`happening` runs just before the next `method` request is answered: another client's change."""
        self.state.before.append((method, happening))

    def rate_limit(self, count: int, retry_after: int | None, reset: int) -> None:
        """The next `count` requests are a 429 with these headers (`retry_after` None: no Retry-After)."""
        headers = {
            "RateLimit-Limit": "600",
            "RateLimit-Observed": "601",
            "RateLimit-Remaining": "0",
            "RateLimit-Reset": str(reset),
            "RateLimit-ResetTime": datetime.fromtimestamp(reset, timezone.utc).strftime(
                "%a, %d %b %Y %H:%M:%S GMT"
            ),
        }
        if retry_after is not None:
            headers["Retry-After"] = str(retry_after)
        self.state.faults.extend([(429, headers, "Retry later\n")] * count)

    # --- what happened ------------------------------------------------------------------------------

    def requests(self, method: str | None = None) -> list[Recorded]:
        return [r for r in self.state.requests if method is None or r.method == method]

    def notes(self, project_id: int, iid: int) -> list[dict[str, Any]]:
        return list(self.state.notes.get((project_id, iid), []))

    # --- internals ----------------------------------------------------------------------------------

    def _new_note(
        self, project_id: int, iid: int, body: str, user_id: int, system: bool = False
    ) -> dict[str, Any]:
        self.state.next_id += 1
        self.state.tick += 1
        now = (_EPOCH + timedelta(seconds=self.state.tick)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
        note = {
            "id": self.state.next_id,
            "type": None,
            "body": body,
            "author": {"id": user_id, "username": self.state.users.get(user_id, f"user{user_id}")},
            "created_at": now,
            "updated_at": now,
            "system": system,
            "noteable_id": 1000 + iid,
            "noteable_type": "MergeRequest",
            "noteable_iid": iid,
        }
        self.state.notes.setdefault((project_id, iid), []).append(note)
        return note


class _Reply(Exception):
    def __init__(self, status: int, body: Any = None, headers: dict[str, str] | None = None) -> None:
        self.status, self.body, self.headers = status, body, headers or {}


_ROUTES = [
    (m, re.compile(p), h)
    for m, p, h in (
        ("GET", r"^/user$", "get_user"),
        ("GET", r"^/projects/([^/]+)/merge_requests/(\d+)/notes$", "list_notes"),
        ("POST", r"^/projects/([^/]+)/merge_requests/(\d+)/notes$", "create_note"),
        ("PUT", r"^/projects/([^/]+)/merge_requests/(\d+)/notes/(\d+)$", "update_note"),
        ("DELETE", r"^/projects/([^/]+)/merge_requests/(\d+)/notes/(\d+)$", "delete_note"),
    )
]


def _handler(fake: FakeGitLab) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            self._serve("GET")

        def do_POST(self) -> None:
            self._serve("POST")

        def do_PUT(self) -> None:
            self._serve("PUT")

        def do_DELETE(self) -> None:
            self._serve("DELETE")

        def _serve(self, method: str) -> None:
            # The raw path: a project path's %2F must stay one segment.
            split = urlsplit(self.path)
            query = {k: v[-1] for k, v in parse_qs(split.query).items()}
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw) if raw else None
            except json.JSONDecodeError:
                body = None
            path = split.path[len(PREFIX) :] if split.path.startswith(PREFIX) else split.path
            record = Recorded(method, path, query, body)
            with fake.lock:
                fake.state.requests.append(record)
                try:
                    self._answer(method, path, query, body)
                except _Reply as reply:
                    record.status = reply.status
                    self._send(reply.status, reply.body, reply.headers)

        def _answer(self, method: str, path: str, query: dict[str, str], body: Any) -> None:
            state = fake.state
            ready = [b for b in state.before if b[0] == method][:1]
            for hook in ready:
                state.before.remove(hook)
                hook[1]()
            if state.faults:
                status, headers, text = state.faults.pop(0)
                raise _Reply(status, text, headers)
            user = state.tokens.get(self.headers.get("PRIVATE-TOKEN", ""))
            if user is None:
                raise _Reply(401, {"message": "401 Unauthorized"})
            self.user = user
            for route_method, pattern, name in _ROUTES:
                match = pattern.match(path)
                if match and route_method == method:
                    getattr(self, name)(*match.groups(), query=query, body=body)
            raise _Reply(404, {"error": "404 Not Found"})

        def _project(self, ref: str) -> int:
            ref = unquote(ref)
            for pid, path in fake.state.projects.items():
                if ref in (str(pid), path):
                    return pid
            raise _Reply(404, {"message": "404 Project Not Found"})

        def _notes(self, ref: str, iid: str) -> tuple[int, list[dict[str, Any]]]:
            pid = self._project(ref)
            notes = fake.state.notes.get((pid, int(iid)))
            if notes is None:
                raise _Reply(404, {"message": "404 Merge Request Not Found"})
            return pid, notes

        def get_user(self, **_: Any) -> None:
            raise _Reply(200, {"id": self.user, "username": fake.state.users[self.user], "state": "active"})

        def list_notes(self, ref: str, iid: str, query: dict[str, str], **_: Any) -> None:
            _, notes = self._notes(ref, iid)
            key = "updated_at" if query.get("order_by") == "updated_at" else "created_at"
            ordered = sorted(
                notes, key=lambda n: (n[key], n["id"]), reverse=query.get("sort", "desc") == "desc"
            )
            per_page = min(max(int(query.get("per_page", 20)), 1), 100)
            page = max(int(query.get("page", 1)), 1)
            pages = max((len(ordered) + per_page - 1) // per_page, 1)
            items = ordered[(page - 1) * per_page : page * per_page]
            raise _Reply(200, items, self._page_headers(ref, iid, query, page, pages, per_page, len(ordered)))

        def _page_headers(
            self, ref: str, iid: str, query: dict[str, str], page: int, pages: int, per_page: int, total: int
        ) -> dict[str, str]:
            base = f"{fake.state.link_origin or fake.url}{PREFIX}/projects/{ref}/merge_requests/{iid}/notes"

            def at(p: int) -> str:
                return f"<{base}?{urlencode({**query, 'page': p, 'per_page': per_page})}>"

            links = {"first": at(1), "last": at(pages)}
            if page > 1:
                links["prev"] = at(page - 1)
            if page < pages:
                links["next"] = at(page + 1)
            headers = {"Link": ", ".join(f'{url}; rel="{rel}"' for rel, url in links.items())}
            if fake.state.link_only:
                return headers
            headers.update(
                {
                    "x-page": str(page),
                    "x-per-page": str(per_page),
                    "x-next-page": str(page + 1) if page < pages else "",
                    "x-prev-page": str(page - 1) if page > 1 else "",
                }
            )
            if not fake.state.omit_total:
                headers.update({"x-total": str(total), "x-total-pages": str(pages)})
            return headers

        def _body(self, body: Any) -> str:
            text = body.get("body") if isinstance(body, dict) else None
            if not isinstance(text, str) or not text:
                raise _Reply(400, {"message": "400 Bad request - body is missing"})
            if len(text) > NOTE_MAX:
                raise _Reply(400, {"message": {"note": [f"is too long (maximum is {NOTE_MAX} characters)"]}})
            return text

        def create_note(self, ref: str, iid: str, body: Any, **_: Any) -> None:
            pid, _ = self._notes(ref, iid)
            text = self._body(body)
            while fake.state.races:
                race, user = fake.state.races.pop(0)
                fake._new_note(pid, int(iid), race, user)
            raise _Reply(201, fake._new_note(pid, int(iid), text, self.user))

        def _note(self, ref: str, iid: str, note_id: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
            """The note the token's user may change: its author's, or anyone's for a Maintainer."""
            pid, notes = self._notes(ref, iid)
            note = next((n for n in notes if n["id"] == int(note_id)), None)
            if note is None:
                raise _Reply(404, {"message": "404 Note Not Found"})
            if note["author"]["id"] != self.user and (pid, self.user) not in fake.state.maintainers:
                raise _Reply(403, {"message": "403 Forbidden"})
            return notes, note

        def delete_note(self, ref: str, iid: str, note_id: str, **_: Any) -> None:
            notes, note = self._note(ref, iid, note_id)
            notes.remove(note)
            raise _Reply(204)

        def update_note(self, ref: str, iid: str, note_id: str, body: Any, **_: Any) -> None:
            _, note = self._note(ref, iid, note_id)
            note["body"] = self._body(body)
            fake.state.tick += 1
            note["updated_at"] = (_EPOCH + timedelta(seconds=fake.state.tick)).strftime(
                "%Y-%m-%dT%H:%M:%S.000Z"
            )
            raise _Reply(200, note)

        def _send(self, status: int, body: Any, headers: dict[str, str]) -> None:
            data = (
                b""
                if body is None
                else (body.encode() if isinstance(body, str) else json.dumps(body).encode())
            )
            self.send_response(status)
            for key, value in headers.items():
                self.send_header(key, value)
            kind = "text/plain" if isinstance(body, str) else "application/json"
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler
