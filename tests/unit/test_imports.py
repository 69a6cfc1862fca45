"""The package's modules import each other without a circle, and its parts in layers, read statically
from the source.

Every import counts wherever it is written (at module level, inside a function, under
`TYPE_CHECKING`): an import moved into a function still ties the two modules together, it only hides
the circle from Python. A package's `__init__` is an edge too, since importing `pkg.mod` runs it.

The parts of the package (its subpackages, loose modules and data directories) stand in `LAYERS`,
from the ground up: a part imports only from its own layer or the ones below, and no two parts import
each other, directly or round a circle (import-linter's `layers` contract, in the test the project
already has). Entry modules (`__main__`) stand aside: an entry point may fall back to the CLI.
"""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import REPO

PACKAGE = REPO / "toolkit" / "attest_toolkit"
ROOT = "attest_toolkit"
# From the ground up. A part imports only from its own layer or a lower one. A new forge is a name
# beside `github` and `gitlab`; a new part of the package is placed here, or this fails.
LAYERS: tuple[frozenset[str], ...] = tuple(
    frozenset(layer.split())
    for layer in (
        "__init__ errors repo_root git progress data schemas",  # facts about errors and the checkout
        "credentials providers guard",  # what a secret and a provider are; the egress guard
        "normalize",  # a request's key
        "tools",  # the tool channel's format
        "fixtures",  # the document model
        "pricing proxy sandbox",  # services: prices, the HTTP kit, no-network runs
        "replay",  # the engine
        "report",  # report-v2, policy, summary
        "capture selection starter",  # recording; which tests a change runs; `attest init`
        "forge image pytest_plugin",  # the gate as no forge in particular runs it; images; pytest
        "github gitlab",  # the forges
        "forges",  # the one place the forge a job runs on is chosen
        "cli",
    )
)


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _absolute(node: ast.ImportFrom, name: str, is_package: bool) -> str:
    """The module an `from ... import` names; relative levels count from `name`'s package."""
    if node.level == 0:
        return node.module or ""
    base = name.split(".") if is_package else name.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imports(name: str, path: Path, known: dict[str, Path]) -> list[tuple[str, int]]:
    """The package's modules that `name` imports, anywhere in its source, each with its line."""
    found: list[tuple[str, int]] = []
    is_package = path.name == "__init__.py"
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            target = _absolute(node, name, is_package)
            # `from pkg import mod` imports the submodule when there is one, else a name of pkg.
            targets = [f"{target}.{alias.name}" for alias in node.names if f"{target}.{alias.name}" in known]
            targets = targets or [target]
        elif _is_import_module(node):
            targets = _dynamic(node, name if is_package else name.rpartition(".")[0])
        else:
            continue
        found += [(_with_parents(t, known), node.lineno) for t in targets if t.split(".")[0] == ROOT]
    return [(target, line) for target, line in found if target and target != name]


def imported(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The package's modules that `name` imports, anywhere in its source."""
    return {target for target, _ in imports(name, path, known)}


def _is_import_module(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "import_module"
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "importlib"
    )


def _dynamic(node: ast.Call, package: str) -> list[str]:
    """The module an `importlib.import_module` call names (the CLI loads its commands lazily); a name
    built at run time is no import a reader can follow, and the package has none."""
    arg = node.args[0] if node.args else None
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return [arg.value if not arg.value.startswith(".") else package + arg.value]
    raise AssertionError(f"{package}: import_module of a name built at run time")


def _with_parents(target: str, known: dict[str, Path]) -> str:
    while target and target not in known:
        target = target.rpartition(".")[0]
    return target


def graph() -> dict[str, set[str]]:
    """Each module's imports, and for `pkg.mod` the edge to each enclosing package's `__init__`."""
    known = modules()
    edges = {name: imported(name, path, known) for name, path in known.items()}
    for name in known:
        parent = name.rpartition(".")[0]
        if parent and parent in known:
            # importing `pkg.mod` runs `pkg/__init__` first; a circle through it is still a circle
            for importer, targets in edges.items():
                if name in targets and importer != parent and not importer.startswith(parent + "."):
                    targets.add(parent)
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected group of more than one module (Tarjan), each as a sorted list."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(edges.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return sorted(groups)


def test_the_graph_sees_imports_at_every_level():
    edges = graph()
    # module level, relative
    assert "attest_toolkit.replay.session" in edges["attest_toolkit.replay.server"]
    # inside a function (engine/__main__ imports its runner only when it serves)
    assert "attest_toolkit.replay.runner" in edges["attest_toolkit.replay.__main__"]
    # a submodule imported by name (`from . import gemini`, the provider registry)
    assert "attest_toolkit.providers.gemini" in edges["attest_toolkit.providers"]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_module_imports_itself_through_others():
    found = cycles(graph())
    assert found == [], "import circles:\n" + "\n".join(" <-> ".join(group) for group in found)


def part_of(module: str) -> str:
    """The part of the package a module belongs to: `replay` for `attest_toolkit.replay.session`,
    `errors` for `attest_toolkit.errors`, `__init__` for the package itself."""
    return module.split(".")[1] if "." in module else "__init__"


def layer_of(part: str) -> int:
    return next(i for i, layer in enumerate(LAYERS) if part in layer)


def parts() -> list[str]:
    """Every part of the package: subpackages, loose modules and data directories."""
    skipped = {"py.typed", "__pycache__"}
    return sorted(p.name.removesuffix(".py") for p in PACKAGE.iterdir() if p.name not in skipped)


def is_entry(module: str) -> bool:
    return module.rpartition(".")[2] == "__main__"


def upward_imports() -> list[str]:
    """Each import from a lower layer to a higher one: its file, line, and both layers."""
    known = modules()
    found = []
    for name, path in known.items():
        if is_entry(name):
            continue
        here = part_of(name)
        for target, line in imports(name, path, known):
            there = part_of(target)
            if layer_of(there) > layer_of(here):
                where = path.relative_to(REPO).as_posix()
                found.append(
                    f"{where}:{line} imports {target}: `{here}` (layer {layer_of(here)}) is below "
                    f"`{there}` (layer {layer_of(there)})"
                )
    return found


def part_graph(edges: dict[str, set[str]]) -> dict[str, set[str]]:
    """The imports between parts, entry modules aside."""
    between: dict[str, set[str]] = {}
    for module, targets in edges.items():
        if not is_entry(module):
            here = part_of(module)
            between.setdefault(here, set()).update(part_of(t) for t in targets if part_of(t) != here)
    return between


def test_every_part_of_the_package_has_a_layer():
    placed = set().union(*LAYERS)
    assert [part for part in parts() if part not in placed] == []
    assert sum(len(layer) for layer in LAYERS) == len(placed), "a part stands in two layers"


def test_no_part_imports_from_a_layer_above_its_own():
    found = upward_imports()
    assert found == [], "imports from a lower layer to a higher one:\n" + "\n".join(found)


def test_no_two_parts_import_each_other():
    found = cycles(part_graph(graph()))
    assert found == [], "circles between parts:\n" + "\n".join(" <-> ".join(group) for group in found)
