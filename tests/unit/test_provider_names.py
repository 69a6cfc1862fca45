"""No code outside `providers/` names a provider: every provider reads its own replies, keys and hosts.

A function, variable or string that names a provider or its host outside the registry is a second
place that knows about it, so adding or changing a provider would need an edit there too. Comments and
docstrings may name providers (they say why); code may not. OTLP is not looked for: it is the trace
protocol's name, which the report's `otlp_requests` count carries, not a model provider's.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

from attest_toolkit.providers import PROVIDERS, RECORDED
from conftest import REPO

PACKAGE = REPO / "toolkit" / "attest_toolkit"
REGISTRY = PACKAGE / "providers"


def provider_words() -> set[str]:
    """Each model provider's name and hosts: the guard's list and the default upstreams."""
    hosts = json.loads((REGISTRY / "hosts.json").read_text(encoding="utf-8"))["hosts"]
    upstreams = [urlsplit(PROVIDERS[n].default_upstream or "").hostname for n in RECORDED]
    return {w.lower() for w in [*RECORDED, *hosts, *upstreams] if w}


def _docstrings(tree: ast.Module) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def code_words(tree: ast.Module) -> Iterator[tuple[int, str]]:
    """Every name and string of the code, with its line: docstrings left out (comments never get here)."""
    docstrings = _docstrings(tree)
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            yield line, node.value
        elif isinstance(node, ast.Name):
            yield line, node.id
        elif isinstance(node, ast.Attribute):
            yield line, node.attr
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            yield line, node.name
        elif isinstance(node, ast.arg) or (isinstance(node, ast.keyword) and node.arg):
            yield line, node.arg
        elif isinstance(node, ast.alias):
            yield line, node.asname or node.name


def naming_providers(package: Path, words: set[str]) -> list[str]:
    """`file:line: word in 'text'` for each name or string outside `providers/` that names a provider."""
    found = []
    for path in sorted(package.rglob("*.py")):
        if "providers" in path.relative_to(package).parts:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for line, text in code_words(tree):
            named = sorted(w for w in words if w in text.lower())
            if named:
                found.append(f"{path.relative_to(package)}:{line}: {named[0]} in {text[:60]!r}")
    return found


def test_the_check_sees_names_strings_and_not_docstrings(tmp_path: Path) -> None:
    (tmp_path / "providers").mkdir()
    (tmp_path / "providers" / "own.py").write_text('NAME = "openai"\n')
    (tmp_path / "mod.py").write_text(
        '"""Reads OpenAI\'s replies."""\n'
        "# api.openai.com\n"
        "def _anthropic(x):\n"
        '    """Anthropic\'s."""\n'
        '    return x or "https://api.openai.com"\n'
    )
    found = naming_providers(tmp_path, {"openai", "anthropic", "api.openai.com"})
    assert [f.split(":")[:2] for f in found] == [["mod.py", "3"], ["mod.py", "5"]]


def test_no_code_outside_the_registry_names_a_provider() -> None:
    found = naming_providers(PACKAGE, provider_words())
    assert found == [], "provider names outside providers/:\n" + "\n".join(found)
