"""The README's architecture map names every module of the package, so it stays true."""

from __future__ import annotations

from conftest import REPO

PACKAGE = REPO / "toolkit" / "attest_toolkit"


def test_every_module_is_in_the_architecture_map():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## Architecture") :]
    modules = [p.name for p in PACKAGE.glob("*.py") if p.name != "__init__.py"]
    packages = [f"{p.name}/" for p in PACKAGE.iterdir() if (p / "__init__.py").exists() and p.name != "cli"]
    missing = [m for m in modules + packages if f"`{m}`" not in section]
    assert missing == []
