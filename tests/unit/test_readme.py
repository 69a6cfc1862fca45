"""The README's architecture map names every module of the package, so it stays true."""

from __future__ import annotations

from conftest import REPO

PACKAGE = REPO / "toolkit" / "attest_toolkit"


def test_every_module_is_in_the_architecture_map():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## Architecture") :]
    modules = [p.name for p in PACKAGE.glob("*.py") if p.name != "__init__.py"]
    packages = [p for p in PACKAGE.rglob("*") if (p / "__init__.py").exists() and p.name != "cli"]
    names = [f"{p.relative_to(PACKAGE).as_posix()}/" for p in packages]
    # inside a package, each module by its name in the package's row (`replay/`: `index`, `session`, ...)
    inner = [m.stem for p in packages for m in p.glob("*.py") if m.name != "__init__.py"]
    missing = [m for m in modules + names if f"`{m}`" not in section]
    missing += [m for m in inner if f"`{m}`" not in section]
    assert missing == []
