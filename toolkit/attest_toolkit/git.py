"""The repository as `attest select` sees it: the changed files between two revisions, and the test
tree at the head revision (a commit, or the working tree when no head is given), read with git itself.
"""

from __future__ import annotations

import os
import posixpath
import subprocess
from dataclasses import dataclass
from pathlib import Path

from .errors import UsageError
from .repo_root import git_in, normalize_path

_GIT_ENV = {"GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C", "GIT_TERMINAL_PROMPT": "0"}


@dataclass(frozen=True)
class Change:
    """One line of `git diff --name-status`: `path` is relative to the project directory (`--repo`);
    `old_path` is set for renames and copies; `outside` marks a file outside the project directory."""

    status: str
    path: str
    old_path: str | None = None
    outside: bool = False

    @property
    def deleted(self) -> bool:
        return self.status == "D"

    @property
    def renamed(self) -> bool:
        return self.status == "R"


class GitRepo:
    """A project directory inside a git work tree. Every path it returns is relative to that directory."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        if not directory.is_dir():
            raise UsageError("no such directory", directory)
        # Where the project sits in the work tree: git reports paths from the top, we from here.
        self.prefix = self.git(
            ["rev-parse", "--show-prefix"], what="not a git repository", detail=False
        ).strip()

    # --- running git ---------------------------------------------------------------------------

    def git(self, args: list[str], *, what: str, ok: tuple[int, ...] = (0,), detail: bool = True) -> str:
        try:
            proc = subprocess.run(
                [*git_in(self.directory), *args],
                capture_output=True,
                text=True,
                encoding="utf-8",
                errors="surrogateescape",
                env={**os.environ, **_GIT_ENV},
                check=False,
            )
        except FileNotFoundError:
            raise UsageError("git is not installed or not on PATH", self.directory) from None
        if proc.returncode not in ok:
            said = _last_line(proc.stderr) if detail else ""
            raise UsageError(what + (f" (git: {said})" if said else ""), self.directory)
        return proc.stdout

    def resolve(self, ref: str) -> str:
        """The commit `ref` names, or a one-line error (`--end-of-options`: a ref is never an option)."""
        sha = self.git(
            ["rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}"],
            what=f"bad revision {ref!r}: not a commit in this repository",
        )
        return sha.strip()

    def merge_base(self, base_sha: str, head_sha: str, base: str, head: str) -> str:
        out = self.git(
            ["merge-base", base_sha, head_sha],
            what=f"no common ancestor of {base!r} and {head!r} (a shallow clone? fetch with fetch-depth: 0)",
        )
        return out.strip()

    # --- the diff ------------------------------------------------------------------------------

    def changes(self, base: str, head: str | None) -> list[Change]:
        """`git diff --name-status -M base...head`. Without `head`: the merge base of `base` and HEAD
        against the working tree, staged, unstaged and untracked (not ignored) files included."""
        base_sha = self.resolve(base)
        head_sha = self.resolve(head if head is not None else "HEAD")
        since = self.merge_base(base_sha, head_sha, base, head or "HEAD")
        # --no-relative: a user's diff.relative setting must not change which paths we get.
        args = ["diff", "--name-status", "-z", "-M", "--no-relative", "--no-color", "--no-ext-diff", since]
        if head is not None:
            args.append(head_sha)
        raw = self.git([*args, "--"], what="git diff failed")
        changes = _parse_name_status(raw)
        if head is None:
            untracked = self.git(
                ["ls-files", "-z", "--others", "--exclude-standard", "--full-name", "--", ":/"],
                what="git ls-files failed",
            )
            changes += [Change("A", p) for p in untracked.split("\0") if p]
        return [self._localize(c) for c in changes]

    def _localize(self, change: Change) -> Change:
        path, outside = self._local(change.path)
        old = self._local(change.old_path)[0] if change.old_path else None
        return Change(change.status, path, old, outside)

    def _local(self, top_relative: str) -> tuple[str, bool]:
        if not self.prefix:
            return top_relative, False
        if top_relative.startswith(self.prefix):
            return top_relative[len(self.prefix) :], False
        return posixpath.relpath(top_relative, self.prefix.rstrip("/")), True

    # --- the tree at head ----------------------------------------------------------------------

    def tree(self, head: str | None) -> Tree:
        return Tree(self, self.resolve(head) if head is not None else None)


class Tree:
    """The files of the project at one revision, or in the working tree when `commit` is None."""

    def __init__(self, repo: GitRepo, commit: str | None) -> None:
        self.repo = repo
        self.commit = commit

    def grep(self, pattern: str, under: str, exclude: str | None = None) -> list[str]:
        """Files under `under` (but not matching the glob `exclude`) with a line matching the POSIX
        extended regex `pattern` (git grep; its exit 1 means no match)."""
        args = ["grep", "-l", "-z", "-I", "-E", "-e", pattern]
        args += [self.commit] if self.commit else ["--untracked"]
        spec = [normalize_path(under)] + ([f":(exclude){exclude}"] if exclude else [])
        out = self.repo.git([*args, "--", *spec], what="git grep failed", ok=(0, 1))
        paths = [p for p in out.split("\0") if p]
        if self.commit:
            paths = [p.split(":", 1)[1] for p in paths]
        return sorted(paths)

    def files(self, under: str) -> list[str]:
        if self.commit:
            args = ["ls-tree", "-r", "-z", "--name-only", self.commit]
        else:
            args = ["ls-files", "-z", "--cached", "--others", "--exclude-standard"]
        out = self.repo.git([*args, "--", normalize_path(under)], what="git could not list files")
        return sorted({p for p in out.split("\0") if p})

    def read(self, paths: list[str]) -> dict[str, str]:
        if not self.commit:
            return {p: _read_text(self.repo.directory / p) for p in paths}
        prefix = self.repo.prefix
        spec = "".join(f"{self.commit}:{prefix}{p}\n" for p in paths)
        return dict(zip(paths, _cat_file_batch(self.repo, spec, len(paths)), strict=True))

    def existing(self, paths: set[str]) -> set[str]:
        if not paths:
            return set()
        if not self.commit:
            return {p for p in paths if (self.repo.directory / p).is_file()}
        out = self.repo.git(
            ["ls-tree", "-z", "--name-only", self.commit, "--", *sorted(paths)], what="git ls-tree failed"
        )
        return {p for p in out.split("\0") if p}


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:  # removed since git listed it: nothing in it can select a test
        return ""


def _cat_file_batch(repo: GitRepo, spec: str, count: int) -> list[str]:
    """Blob texts in request order from one `git cat-file --batch` process."""
    proc = subprocess.run(
        [*git_in(repo.directory), "cat-file", "--batch"],
        input=spec.encode("utf-8"),
        capture_output=True,
        env={**os.environ, **_GIT_ENV},
        check=False,
    )
    if proc.returncode != 0:
        said = _last_line(proc.stderr.decode("utf-8", errors="replace"))
        raise UsageError(f"git cat-file failed (git: {said})", repo.directory)
    data, texts, pos = proc.stdout, [], 0
    for _ in range(count):
        end = data.index(b"\n", pos)
        header = data[pos:end].split()
        pos = end + 1
        if len(header) < 3 or header[1] != b"blob":
            texts.append("")
            continue
        size = int(header[2])
        texts.append(data[pos : pos + size].decode("utf-8", errors="replace"))
        pos += size + 1
    return texts


def _parse_name_status(raw: str) -> list[Change]:
    fields = raw.split("\0")
    changes: list[Change] = []
    i = 0
    while i < len(fields) and fields[i]:
        status = fields[i][0]
        if status in "RC":
            changes.append(Change(status, fields[i + 2], old_path=fields[i + 1]))
            i += 3
        else:
            changes.append(Change(status, fields[i + 1]))
            i += 2
    return changes


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else ""
