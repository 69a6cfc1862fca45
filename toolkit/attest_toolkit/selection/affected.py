"""`attest select`: from a git diff, the tests a change affects.

- A changed, added, deleted or renamed fixture (`*.attest.json`) selects the tests that use it, under
  its new and its old path: found by the static scan of the test sources at head, and in the last
  report's per-test fixtures (the union of both).
- A changed line of the lock file beside the fixtures directory (`tests/attest/fixtures.lock`: a
  fixture pinned by digest, its bytes in the object store) is a changed fixture of that name.
- A changed test file (`test_*.py`, `*_test.py`, `*.test.ts`, `*.spec.js`, ... under the tests
  directory) selects the whole file; a deleted one selects nothing.
- Any other change (source, conftest.py, helpers, configuration) selects everything, unless
  `only_fixtures`: then only fixture changes select anything.

Without `head`, the working tree (staged, unstaged and untracked files) is compared with the merge
base of `base` and HEAD, so a local run sees uncommitted edits; with `head`, exactly `base...head`.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from ..fixtures.document import DEFAULT_DIR, SUFFIX, name_of
from ..fixtures.remote.lock import changed_names, lock_path, parse_lock
from ..git import Change, GitRepo, Tree
from ..repo_root import normalize_path
from ..report.build import Report
from .ids import collapse, file_of
from .last_run import durations, files_of, known_ids, tests_by_fixture
from .scan import Progress, Usage, is_test_file, scan_tree
from .shard import shard

Kind = Literal["none", "some", "all"]


@dataclass(frozen=True)
class Selection:
    """What to run. `kind` is "none" (nothing to run), "some" (the listed tests) or "all" (the whole
    suite; `tests` then holds the tests directory). `fixtures` are the changed fixture paths."""

    kind: Kind
    tests: list[str]
    fixtures: list[str]
    reason: str
    shard: tuple[int, int] | None = None
    changes: list[Change] = field(default_factory=list, repr=False)

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "selection": self.kind,
            "tests": self.tests,
            "fixtures": self.fixtures,
            "reason": self.reason,
        }
        if self.shard:
            doc["shard"] = {"index": self.shard[0], "total": self.shard[1]}
        return doc


@dataclass
class _Diff:
    fixtures: list[Change]
    tests: list[Change]
    other: list[Change]
    lock: Change | None = None
    pinned: list[str] = field(default_factory=list)  # fixture paths whose lock line changed

    @property
    def fixture_paths(self) -> list[str]:
        files = {p for c in self.fixtures for p in (c.path, c.old_path) if p and p.endswith(SUFFIX)}
        return sorted(files | set(self.pinned))


def select_tests(
    repo: Path,
    base: str,
    head: str | None = None,
    *,
    fixtures_dir: str = str(DEFAULT_DIR),
    tests_dir: str = "tests",
    report: Report | None = None,
    only_fixtures: bool = False,
    progress: Progress | None = None,
) -> Selection:
    """The tests the changes between `base` and `head` (or the working tree) affect."""
    git = GitRepo(Path(repo))
    changes = git.changes(base, head)
    if not changes:
        return Selection("none", [], [], f"no changes between {base} and {head or 'the working tree'}")
    tests_dir, fixtures_dir = normalize_path(tests_dir), normalize_path(fixtures_dir)
    diff = _classify(changes, tests_dir, lock_path(fixtures_dir).as_posix())
    if diff.lock:
        diff.pinned = _pinned_changes(git, base, head, diff.lock, fixtures_dir)
    fixtures = diff.fixture_paths
    if diff.other and not only_fixtures:
        reason = f"{_some(diff.other)} changed, not a fixture or a test file: running everything"
        return Selection("all", [tests_dir], fixtures, reason, changes=changes)
    tree = git.tree(head)
    ids: set[str] = set()
    if not only_fixtures:
        ids |= {c.path for c in diff.tests if not c.deleted}
    if fixtures:
        ids |= _users(tree, fixtures, tests_dir, fixtures_dir, report, progress)
    selected = collapse(ids)
    kind: Kind = "all" if tests_dir in selected else "some" if selected else "none"
    return Selection(kind, selected, fixtures, _reason(diff, selected, only_fixtures), changes=changes)


def _classify(changes: list[Change], tests_dir: str, lock: str) -> _Diff:
    diff = _Diff([], [], [])
    for change in changes:
        paths = [p for p in (change.path, change.old_path) if p]
        if not change.outside and lock in paths:
            diff.lock = change
        elif not change.outside and any(p.endswith(SUFFIX) for p in paths):
            diff.fixtures.append(change)
        elif not change.outside and _under(change.path, tests_dir) and is_test_file(change.path):
            diff.tests.append(change)
        else:
            diff.other.append(change)
    return diff


def _pinned_changes(git: GitRepo, base: str, head: str | None, lock: Change, fixtures_dir: str) -> list[str]:
    """The fixture paths whose lock line differs between the merge base and head."""
    head_sha = git.resolve(head if head is not None else "HEAD")
    since = git.tree(git.merge_base(git.resolve(base), head_sha, base, head or "HEAD"))
    before_path = lock.old_path or lock.path
    before = "" if lock.status == "A" else since.read([before_path])[before_path]
    after = "" if lock.deleted else git.tree(head).read([lock.path])[lock.path]
    names = changed_names(parse_lock(before, before_path), parse_lock(after, lock.path))
    return [normalize_path(posixpath.join(fixtures_dir, f"{name}{SUFFIX}")) for name in names]


def _under(path: str, directory: str) -> bool:
    return directory == "." or path.startswith(directory + "/")


def _users(
    tree: Tree,
    fixtures: list[str],
    tests_dir: str,
    fixtures_dir: str,
    report: Report | None,
    progress: Progress | None,
) -> set[str]:
    """The tests that use any of `fixtures`: the static scan's, and the last report's that still exist."""
    names = {name_of(p) for p in fixtures}
    usages = scan_tree(tree, tests_dir, fixtures_dir, names, progress)
    known = known_ids(report) if report else set()
    changed = set(fixtures)
    ids = {u.owner for u in usages if _uses(u, changed) or (u.name is None and u.owner not in known)}
    if report:
        users = tests_by_fixture(report)
        reported = {test for path in fixtures for test in users.get(path, ())}
        files = files_of(report)
        present = tree.existing({files.get(t, file_of(t)) for t in reported})
        ids |= {t for t in reported if files.get(t, file_of(t)) in present}
    return ids


def _uses(usage: Usage, changed: set[str]) -> bool:
    """Whether a literal usage names one of the changed fixture paths."""
    if usage.name is None:
        return False
    file = f"{usage.name}{SUFFIX}"
    if usage.directory is not None:
        return normalize_path(posixpath.join(usage.directory, file)) in changed
    return any(p == file or p.endswith("/" + file) for p in changed)


def _reason(diff: _Diff, selected: list[str], only_fixtures: bool) -> str:
    parts = []
    if diff.fixtures:
        parts.append(_count(len(diff.fixture_paths), "changed fixture"))
    if diff.tests:
        parts.append(_count(len(diff.tests), "changed test file") + (" (ignored)" if only_fixtures else ""))
    if diff.other:
        parts.append(f"{_some(diff.other)} changed, ignored (--only-fixtures)")
    outcome = _count(len(selected), "test") + " selected" if selected else "nothing to run"
    return "; ".join(parts) + f": {outcome}"


def _some(changes: list[Change]) -> str:
    first = changes[0].path
    return first if len(changes) == 1 else f"{first} and {len(changes) - 1} more"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


# --- scale-out ------------------------------------------------------------------------------------


def split(
    selection: Selection,
    repo: Path,
    head: str | None,
    index: int,
    total: int,
    *,
    report: Report | None = None,
) -> Selection:
    """Shard `index` of `total` of a selection. Directories (the whole suite) are expanded into their
    test files first, so that every shard gets a share; the last report's durations weigh them."""
    if selection.kind == "none":
        return replace(selection, shard=(index, total))
    units = _units(selection.tests, GitRepo(Path(repo)).tree(head))
    weights = durations(report, units) if report else None
    mine = shard(units, index, total, weights)
    kind: Kind = selection.kind if mine else "none"
    reason = f"{selection.reason}; shard {index}/{total} runs {len(mine)} of {len(units)}"
    return replace(selection, kind=kind, tests=mine, reason=reason, shard=(index, total))


def _units(ids: list[str], tree: Tree) -> list[str]:
    units: set[str] = set()
    for test_id in ids:
        if "::" in test_id or is_test_file(test_id):
            units.add(test_id)
        else:
            units.update(p for p in tree.files(test_id) if is_test_file(p))
    return sorted(units)
