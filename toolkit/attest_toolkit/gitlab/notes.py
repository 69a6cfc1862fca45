"""The one sticky note of a merge request: found again by its marker AND its author, never another's.

A Maintainer's token may edit anyone's note, so GitLab will not stop us: the author check is ours,
against the `id` `GET /user` answers for the token (never GITLAB_USER_LOGIN, who started the
pipeline). Notes are listed oldest first (`sort=asc`), and the oldest of ours is the one kept.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from ..forge.sticky import is_sticky, sticky_body
from .client import Client, GitLabError

NOTE_LIMIT = 1_000_000  # GitLab refuses a longer note (400 "Note is too long")
NOTE_NOTICE = (
    "… trimmed to fit GitLab's 1,000,000-character note limit; the full report is in the job's artifacts."
)


@dataclass(frozen=True)
class NoteResult:
    note_id: int | None
    action: str  # created, updated, unchanged or not posted


def note_body(markdown: str) -> str:
    return sticky_body(markdown, NOTE_LIMIT, NOTE_NOTICE)


class MergeRequestNotes:
    def __init__(self, client: Client, project_id: str, iid: str) -> None:
        self.client = client
        self.path = f"/projects/{quote(project_id, safe='')}/merge_requests/{quote(iid, safe='')}/notes"

    def token_user_id(self) -> int:
        user = self.client.json("token identity", "GET", "/user")
        if not isinstance(user, dict) or not isinstance(user.get("id"), int):
            raise GitLabError("token identity: GitLab answered GET /user without an id")
        return int(user["id"])

    def ours(self) -> list[dict[str, Any]]:
        """Our notes, oldest first: the marker as the last line and written by this token's user."""
        me = self.token_user_id()
        found = self.client.pages("notes", self.path, {"sort": "asc", "order_by": "created_at"})
        return [n for n in found if _author(n) == me and not n.get("system") and is_sticky(n.get("body"))]

    def upsert(self, markdown: str, *, create: bool = True) -> NoteResult:
        """The sticky note holds `markdown`: created (POST), updated in place (PUT), or left alone.
        `create=False` updates an existing note but posts no new one."""
        body = note_body(markdown)
        found = self.ours()
        if not found:
            if not create:
                return NoteResult(None, "not posted")
            note = self.client.json("note", "POST", self.path, json={"body": body})
            return NoteResult(_id(note), "created")
        keep = found[0]
        if keep.get("body") == body:
            return NoteResult(_id(keep), "unchanged")
        note = self.client.json("note", "PUT", f"{self.path}/{_id(keep)}", json={"body": body})
        return NoteResult(_id(note), "updated")


def _author(note: dict[str, Any]) -> int | None:
    author = note.get("author")
    return author.get("id") if isinstance(author, dict) and isinstance(author.get("id"), int) else None


def _id(note: Any) -> int:
    if not isinstance(note, dict) or not isinstance(note.get("id"), int):
        raise GitLabError("note: GitLab answered without the note's id")
    return int(note["id"])
