"""The architecture map (docs/contributing/architecture.md) names every module of the package, and the
test files the README and the documentation site cite are where they say, so both stay true."""

from __future__ import annotations

import re

from conftest import REPO

PACKAGE = REPO / "toolkit" / "attest_toolkit"
# Where the project cites its own test files by path (`make lint-workflows` runs one, the docs point
# readers at the test of a promise).
CITING = (
    "README.md",
    "bench/README.md",
    "sdks/vitest/README.md",
    "Makefile",
    ".ci/run",
    "pyproject.toml",
    *sorted(p.relative_to(REPO).as_posix() for p in (REPO / "docs").rglob("*.md")),
)
CITED = re.compile(r"\btests/[\w./-]+\.(?:py|cjs|txt)\b")


def test_every_module_is_in_the_architecture_map():
    section = (REPO / "docs" / "contributing" / "architecture.md").read_text(encoding="utf-8")
    modules = [p.name for p in PACKAGE.glob("*.py") if p.name != "__init__.py"]
    packages = [p for p in PACKAGE.rglob("*") if (p / "__init__.py").exists() and p.name != "cli"]
    names = [f"{p.relative_to(PACKAGE).as_posix()}/" for p in packages]
    # inside a package, each module by its name in the package's row (`replay/`: `index`, `session`, ...)
    inner = [m.stem for p in packages for m in p.glob("*.py") if m.name != "__init__.py"]
    missing = [m for m in modules + names if f"`{m}`" not in section]
    missing += [m for m in inner if f"`{m}`" not in section]
    assert missing == []


def test_every_test_file_cited_is_where_the_citation_says():
    ours = {p.name for p in (REPO / "tests").rglob("*") if p.is_file()}
    cited = {
        path
        for name in CITING
        for line in (REPO / name).read_text(encoding="utf-8").splitlines()
        if "../" not in line  # a command run on another project's checkout names its test files
        for path in CITED.findall(line)
    }
    # the README's examples cite a user's tests/test_agent.py and the like: only names of ours are checked
    stale = sorted(path for path in cited if path.rsplit("/", 1)[-1] in ours and not (REPO / path).is_file())
    assert stale == []
