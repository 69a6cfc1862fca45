"""`fixtures.lock`: the fixtures a repository pins by digest while their bytes live in the store.

One `name sha256:<hex>` line per fixture, sorted by name, under a one-line comment, so a pull request
that re-records a fixture shows one changed line. The lock sits beside the fixtures directory
(`tests/attest/fixtures` → `tests/attest/fixtures.lock`). Reading it does no I/O beyond the text given.
"""

from __future__ import annotations

import re
from pathlib import Path

from ..errors import UsageError
from ..fixture import DEFAULT_DIR, atomic_write, check_name

HEADER = "# attest fixtures pinned by digest: `attest fixture pull` fetches them from the object store\n"
_LINE = re.compile(r"^(?P<name>\S+)\s+(?P<digest>sha256:[0-9a-f]{64})$")

Lock = dict[str, str]  # fixture name -> "sha256:<hex>"


def lock_path(fixtures_dir: str | Path | None = None) -> Path:
    """The lock beside a fixtures directory: `<dir>.lock`."""
    directory = Path(fixtures_dir or DEFAULT_DIR)
    return directory.with_name(directory.name + ".lock")


def parse_lock(text: str, path: str | Path) -> Lock:
    """The pins of a lock file's text; a malformed line is one error naming the file and the line."""
    pins: Lock = {}
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        match = _LINE.match(line)
        if not match:
            raise UsageError(f"line {number}: expected `name sha256:<64 hex digits>`", path)
        name = match["name"]
        try:
            check_name(name)
        except UsageError as exc:
            raise UsageError(f"line {number}: {exc}", path) from None
        if name in pins:
            raise UsageError(f"line {number}: {name} is pinned twice", path)
        pins[name] = match["digest"]
    return pins


def read_lock(path: Path) -> Lock:
    """The lock file's pins; no file pins nothing."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read the lock file ({exc})", path) from None
    return parse_lock(text, path)


def render_lock(pins: Lock) -> str:
    return HEADER + "".join(f"{name} {pins[name]}\n" for name in sorted(pins))


def write_lock(path: Path, pins: Lock) -> None:
    """Atomically, and readable by all: the lock is meant for the repository, unlike a fixture."""
    atomic_write(path, render_lock(pins), mode=0o644)


def changed_names(before: Lock, after: Lock) -> list[str]:
    """Names pinned to another digest, newly pinned, or no longer pinned."""
    return sorted(n for n in before.keys() | after.keys() if before.get(n) != after.get(n))
