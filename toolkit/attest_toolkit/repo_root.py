"""The repository a path belongs to: git's top level, for paths stored or shown relative to it."""

from __future__ import annotations

import os
import posixpath
import subprocess
from pathlib import Path

# git as attest runs it: what a repository's own configuration could start is off. The tests a gate
# judges may have written `.git/config`; its `core.fsmonitor` command would run on every status or
# working-tree diff, in the step that holds the comment token, and a hook on any command that has one.
GIT = ("git", "-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null")


def normalize_path(path: str) -> str:
    """A repository path in one spelling: forward slashes, no `./` or `a/../`, `.` for the top."""
    clean = posixpath.normpath(path.replace("\\", "/"))
    return "." if clean in ("", ".") else clean


def git_in(directory: Path) -> tuple[str, ...]:
    """GIT for the repository at `directory`, named with -C: the process keeps its own working
    directory, so a `git` planted in the checkout is never found through a relative PATH entry."""
    return (*GIT, "-C", str(directory))


def toplevel(cwd: Path) -> Path | None:
    """git's top level for `cwd`, or None outside a repository (or without git)."""
    try:
        done = subprocess.run(
            [*git_in(cwd), "rev-parse", "--show-toplevel"], capture_output=True, text=True, check=False
        )
    except OSError:  # no git
        return None
    return Path(done.stdout.strip()) if done.returncode == 0 and done.stdout.strip() else None


def _existing(directory: Path) -> Path:
    """`directory`, or its nearest ancestor that exists (a fixtures directory is made on first write)."""
    while not directory.is_dir() and directory != directory.parent:
        directory = directory.parent
    return directory


def fixtures_root(fixtures_dir: Path) -> Path:
    """Where paths stored in a fixture start: the git top level of the fixtures directory, else the
    directory above it, so a fixture never holds an absolute path of the machine that wrote it."""
    fixtures_dir = Path(os.path.realpath(fixtures_dir))
    return toplevel(_existing(fixtures_dir)) or fixtures_dir.parent


def relative_to_root(path: str | Path, root: Path) -> str:
    """`path` relative to `root`, with `/` separators (`../` steps when it lies outside). Directories
    are compared with their links resolved, as git reports its top level; the file's own name is kept."""
    path = Path(path)
    where = Path(os.path.realpath(path.parent)) / path.name
    return Path(os.path.relpath(where, os.path.realpath(root))).as_posix()


def cwd_relative(path: Path) -> Path:
    """`path` as a line shows it: relative to the working directory when it lies below it (a
    machine's absolute path says nothing to whoever reads the output elsewhere), else as it is."""
    if not path.is_absolute():
        return path
    try:
        return Path(os.path.realpath(path)).relative_to(os.path.realpath(Path.cwd()))
    except ValueError:
        return path
