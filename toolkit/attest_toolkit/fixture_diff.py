"""What a re-recorded fixture altered: interactions added, removed and changed, and for a changed one
which request components differ (by their hashes) and whether the response changed.

Interactions are paired by aligning the two recordings on their requests, so one call inserted at the
start reads as one addition, not as every later call changed.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .fixture import SUFFIX, model_interactions, name_of, parse_fixture, read_fixture, scan
from .fixture_sequence import changed_path
from .secrets import environment_secrets
from .store.lock import changed_names, lock_path, parse_lock, read_lock

if TYPE_CHECKING:
    from .select.git import Tree

COMPONENTS = ("system", "messages", "tools", "params", "model")

Fixture = dict[str, Any]
Interaction = dict[str, Any]


def fixture_changes(base_doc: Fixture | None, head_doc: Fixture | None, name: str) -> dict[str, Any]:
    """Compare two fixture documents (None: the fixture does not exist on that side)."""
    base = model_interactions(base_doc) if base_doc else []
    head = model_interactions(head_doc) if head_doc else []
    rows = _rows(base, head)
    counts = {kind: sum(1 for r in rows if r["change"] == kind) for kind in ("added", "removed", "changed")}
    status = _status(base_doc, head_doc, rows)
    return {
        "name": name,
        "status": status,
        # the agent's calls, base against head: the comment draws them as a diagram
        **({"path": changed_path(base_doc, head_doc)} if status in ("added", "changed") else {}),
        "base_digest": (base_doc or {}).get("digest"),
        "head_digest": (head_doc or {}).get("digest"),
        "interactions": rows,
        **counts,
    }


def _status(base_doc: Fixture | None, head_doc: Fixture | None, rows: list[dict[str, Any]]) -> str:
    if base_doc is None:
        return "added" if head_doc is not None else "unchanged"
    if head_doc is None:
        return "removed"
    # A change outside the model channel (the recorded command, a future channel) still counts.
    return "changed" if rows or base_doc.get("digest") != head_doc.get("digest") else "unchanged"


def _request_key(interaction: Interaction) -> tuple:
    hashes = interaction["hashes"]
    return (interaction["method"], interaction["path"], *(hashes[c] for c in COMPONENTS))


# A placeholder's number says where in the fixture its value first appeared, not what it is: a call
# appended after others (`--attest-record=new`) or re-recorded alone numbers the same value differently.
_PLACEHOLDER_NUMBER = re.compile(r"\{\{([a-z]+)_[0-9]+\}\}")


def _response_key(interaction: Interaction) -> str:
    response = interaction["response"]
    text = json.dumps([response["status"], response["body"]], sort_keys=True)
    return _PLACEHOLDER_NUMBER.sub(r"{{\1_N}}", text)


def _rows(base: list[Interaction], head: list[Interaction]) -> list[dict[str, Any]]:
    matcher = difflib.SequenceMatcher(
        a=[_request_key(i) for i in base], b=[_request_key(i) for i in head], autojunk=False
    )
    rows: list[dict[str, Any]] = []
    for tag, a0, a1, b0, b1 in matcher.get_opcodes():
        pairs = list(zip(range(a0, a1), range(b0, b1), strict=False))
        if tag in ("equal", "replace"):
            rows.extend(r for r in (_changed(base[a], head[b], a, b) for a, b in pairs) if r)
        rows.extend(_one(base[a], "removed", a, None) for a in range(a0 + len(pairs), a1))
        rows.extend(_one(head[b], "added", None, b) for b in range(b0 + len(pairs), b1))
    return rows


def _describe(interaction: Interaction) -> dict[str, Any]:
    return {"provider": interaction["provider"], "method": interaction["method"], "path": interaction["path"]}


def _one(
    interaction: Interaction, change: str, base_index: int | None, head_index: int | None
) -> dict[str, Any]:
    return {
        "change": change,
        "base_index": base_index,
        "head_index": head_index,
        **_describe(interaction),
        "components": [],
        "response_changed": False,
    }


def _changed(old: Interaction, new: Interaction, base_index: int, head_index: int) -> dict[str, Any] | None:
    components = [c for c in COMPONENTS if old["hashes"][c] != new["hashes"][c]]
    if old["path"] != new["path"] or old["method"] != new["method"]:
        components.insert(0, "endpoint")
    response_changed = _response_key(old) != _response_key(new)
    if not components and not response_changed:
        return None
    return {
        "change": "changed",
        "base_index": base_index,
        "head_index": head_index,
        **_describe(new),
        "components": components,
        "response_changed": response_changed,
        "status": [old["response"]["status"], new["response"]["status"]],
    }


def changes_between_dirs(base_dir: str | Path, head_dir: str | Path) -> list[dict[str, Any]]:
    """Every fixture added, removed or changed between two fixture directories, by name."""
    base = _fixture_files(Path(base_dir))
    head = _fixture_files(Path(head_dir))
    changes = []
    for name in sorted(base.keys() | head.keys()):
        base_doc = read_fixture(base[name]) if name in base else None
        head_doc = read_fixture(head[name]) if name in head else None
        change = fixture_changes(base_doc, head_doc, name)
        if change["status"] != "unchanged":
            changes.append(change)
    return changes


def _fixture_files(directory: Path) -> dict[str, Path]:
    if not directory.is_dir():
        return {}
    return {name_of(p): p for p in sorted(directory.rglob(f"*{SUFFIX}"))}


PinnedReader = Callable[[str, str], Fixture]  # (name, digest) -> the pinned fixture


def changes_since(
    repo: str | Path, base: str, fixtures_dir: str | Path, pinned: PinnedReader | None = None
) -> list[dict[str, Any]]:
    """Every fixture under `fixtures_dir` that the change since `base` (a git revision) re-recorded,
    added or removed, compared with its version at the merge base. A fixture is known by its name, so
    a rename reads as the old name removed and the new one added. A fixture pinned in the lock file
    beside the directory is compared through `pinned` (the object store); without it, its row says
    only that the pin moved."""
    from .select.git import GitRepo  # git is only needed when a base revision is given

    git = GitRepo(Path(repo))
    under = Path(fixtures_dir).as_posix().rstrip("/") + "/"
    lock = lock_path(fixtures_dir).as_posix()
    before: set[str] = set()
    after: set[str] = set()
    for change in git.changes(base, None):
        if change.old_path:
            before.add(change.old_path)
        elif not change.status.startswith("A"):
            before.add(change.path)
        if not change.deleted:
            after.add(change.path)
    wanted = {p for p in before | after if p.startswith(under) and p.endswith(SUFFIX)}
    if not wanted and lock not in before | after:
        return []
    since = git.tree(git.merge_base(git.resolve(base), git.resolve("HEAD"), base, "HEAD"))
    changes = _pinned_changes(since, Path(repo) / lock, lock, pinned) if lock in before | after else []
    repinned = {c["name"] for c in changes}
    old = since.read(sorted(wanted & before))
    for path in sorted(wanted, key=name_of):
        if name_of(path) in repinned:
            continue
        base_doc = _parsed(old[path], path) if path in old else None
        head_doc = read_fixture(Path(repo) / path) if path in after else None
        diff = fixture_changes(base_doc, head_doc, name_of(path))
        if diff["status"] != "unchanged":
            changes.append(diff)
    return sorted(changes, key=lambda c: c["name"])


def _pinned_changes(since: Tree, lock_file: Path, lock: str, pinned: PinnedReader | None) -> list[dict]:
    """The fixtures whose lock line changed, compared when the store can be read."""
    before = parse_lock(since.read([lock])[lock], f"{lock} at the base")
    after = read_lock(lock_file)
    rows = []
    for name in changed_names(before, after):
        old, new = before.get(name), after.get(name)
        if pinned is None:
            rows.append(_pin_moved(name, old, new))
            continue
        base_doc = pinned(name, old) if old else None
        head_doc = pinned(name, new) if new else None
        rows.append(fixture_changes(base_doc, head_doc, name))
    return rows


def _pin_moved(name: str, old: str | None, new: str | None) -> dict[str, Any]:
    status = "added" if old is None else "removed" if new is None else "changed"
    return {
        "name": name,
        "status": status,
        "base_digest": old,
        "head_digest": new,
        "interactions": [],
        "added": 0,
        "removed": 0,
        "changed": 0,
        "pin_only": True,
    }


def _parsed(text: str, path: str) -> Fixture:
    doc = parse_fixture(text, path)
    scan(doc, path, environment_secrets(), "read")  # a past version is read like any other
    return doc
