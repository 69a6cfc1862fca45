"""The one sticky note of a merge request: found again by its marker AND its author, never another's.

A Maintainer's token may edit anyone's note, so GitLab will not stop us: the author check is ours,
against the `id` `GET /user` answers for the token (never GITLAB_USER_LOGIN, who started the
pipeline). Notes are listed oldest first (`sort=asc`), and the oldest of ours is the one kept: two
pipelines of a merge request racing may each have posted one, and the newer ones are deleted, ours
alone, as the GitHub publisher deletes its racing duplicates.
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
    deleted: int = 0  # our duplicates from racing pipelines, removed


def note_body(markdown: str) -> str:
    return sticky_body(markdown, NOTE_LIMIT, NOTE_NOTICE)


class MergeRequestNotes:
    def __init__(self, client: Client, project_id: str, iid: str) -> None:
        self.client = client
        self.path = f"/projects/{quote(project_id, safe='')}/merge_requests/{quote(iid, safe='')}/notes"
        self._me: int | None = None

    def token_user_id(self) -> int:
        if self._me is None:
            user = self.client.json("token identity", "GET", "/user")
            if not isinstance(user, dict) or not isinstance(user.get("id"), int):
                raise GitLabError("token identity: GitLab answered GET /user without an id")
            self._me = int(user["id"])
        return self._me

    def ours(self) -> list[dict[str, Any]]:
        """Our notes, oldest first: the marker as the last line and written by this token's user."""
        me = self.token_user_id()
        found = self.client.pages("notes", self.path, {"sort": "asc", "order_by": "created_at"})
        return [n for n in found if _author(n) == me and not n.get("system") and is_sticky(n.get("body"))]

    def delete(self, notes: list[dict[str, Any]]) -> int:
        """Delete our `notes` (`ours()` chose them: never another user's); how many this run deleted."""
        deleted = 0
        for note in notes:
            gone = self.client.request("duplicate note", "DELETE", f"{self.path}/{_id(note)}", allow=(404,))
            if gone.status_code != 404:  # a 404: the racing pipeline deleted it first
                deleted += 1
        return deleted

    def upsert(self, markdown: str, *, create: bool = True) -> NoteResult:
        """The sticky note holds `markdown`: created (POST), updated in place (PUT), or left alone; our
        newer duplicates are deleted. `create=False` updates an existing note but posts no new one."""
        body = note_body(markdown)
        found = self.ours()
        if not found and not create:
            return NoteResult(None, "not posted")
        created = None
        if not found:
            created = self.client.json("note", "POST", self.path, json={"body": body})
            # A pipeline racing this one may have posted too: both keep the oldest, as a later run would.
            found = self.ours() or [created]
        keep, deleted = found[0], self.delete(found[1:])
        if created is not None and (_id(keep) == _id(created) or keep.get("body") == body):
            return NoteResult(_id(keep), "created", deleted)
        if keep.get("body") == body:
            return NoteResult(_id(keep), "unchanged", deleted)
        note = self.client.json("note", "PUT", f"{self.path}/{_id(keep)}", json={"body": body})
        return NoteResult(_id(note), "updated", deleted)


def _author(note: dict[str, Any]) -> int | None:
    author = note.get("author")
    return author.get("id") if isinstance(author, dict) and isinstance(author.get("id"), int) else None


def _id(note: Any) -> int:
    if not isinstance(note, dict) or not isinstance(note.get("id"), int):
        raise GitLabError("note: GitLab answered without the note's id")
    return int(note["id"])
