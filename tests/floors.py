"""The lower bounds of pyproject.toml as exact pins: the runtime dependencies and the extras named on the
command line (`python tests/floors.py bedrock`), one `name==version` a line, for a constraints file.

`make test-floors` installs attest with these constraints, so every runtime dependency is at the oldest
version pyproject.toml says it runs with, and runs the unit and integration suites there.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import tomllib

PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"
# `name[extra]>=1.2` (and more specifiers after it): the name and its lower bound.
LOWER_BOUND = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*>=\s*([^,;\s]+)")


def floors(extras: list[str]) -> list[str]:
    project = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]
    listed = [*project["dependencies"], *(r for e in extras for r in project["optional-dependencies"][e])]
    return [f"{m.group(1)}=={m.group(2)}" for m in map(LOWER_BOUND.match, listed) if m is not None]


if __name__ == "__main__":
    print("\n".join(floors(sys.argv[1:])))
