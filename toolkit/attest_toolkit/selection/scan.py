"""The static scan: which tests use which fixture, read from the test sources without running them.

Python is parsed with `ast`: an `attest_replay("name")` call inside a test function gives the node id
`file::Class::test_function` (parametrised tests resolve to their function, which runs every case). A
name that is a module-level string constant, or a `pytest.mark.parametrize` argument with literal
values, is resolved too. TypeScript and JavaScript are read with regular expressions: a
`useReplay("name")` inside `it("title", ...)` / `test("title", ...)` gives `file::title`.

A call the scan cannot place in a test function selects something wider, never less: the test file,
the directory of a `conftest.py`, or the whole tests directory for a helper module. A name that is not
a literal is kept as an unknown usage; only the last report can say which fixture it loads.
"""

from __future__ import annotations

import ast
import posixpath
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TypeVar

from ..fixtures.document import SUFFIX
from ..git import Tree
from ..repo_root import normalize_path
from .ids import file_of

T = TypeVar("T")
Progress = Callable[[Iterable[T], int], Iterator[T]]

PY_HELPER = "attest_replay"
JS_HELPER = "useReplay"
JS_SUFFIXES = (".ts", ".tsx", ".mts", ".cts", ".js", ".jsx", ".mjs", ".cjs")
_PY_TEST_FILE = re.compile(r"^(test_.*|.*_test)\.py$")
_JS_TEST_FILE = re.compile(r"^.+\.(test|spec)\.[cm]?[jt]sx?$")
# git grep (POSIX ERE, line by line): a helper call whose first argument is not a plain string
# literal on the same line, so the file may load a fixture by a computed name.
_DYNAMIC_ERE = r"""(attest_replay|useReplay)[[:space:]]*\([[:space:]]*($|[^'"`[:space:])]|`[^`]*\$\{)"""
_ERE_SPECIAL = re.compile(r"([\\.\[\](){}*+?|^$])")
PREFILTER_NAMES = 200  # above this many changed fixtures, every file using a helper is read

# A quoted JS string: group `q` is the quote, group `text` the raw contents.
_JS_STR = r"""(?P<q>['"`])(?P<text>(?:\\.|(?!(?P=q))[^\\])*)(?P=q)"""
_JS_MODIFIERS = r"(?:\s*\.\s*(?:only|skip|todo|concurrent|sequential|fails))*"
_JS_TEST_CALL = re.compile(r"(?<![\w.$])(?:it|test)" + _JS_MODIFIERS + r"\s*(?P<open>\()\s*" + _JS_STR, re.S)
_JS_REPLAY_CALL = re.compile(r"\buseReplay\s*\(")
_JS_LEADING_STR = re.compile(r"\s*" + _JS_STR + r"\s*(?=,|$)", re.S)
_JS_DIR = re.compile(r"\bfixturesDir\s*:\s*(?:" + _JS_STR + r")?", re.S)


@dataclass(frozen=True)
class Usage:
    """A test's use of a fixture.

    `owner` is what selecting it runs: a node id, a test file, a conftest directory or the tests
    directory. `name` is None when the fixture name is not a literal; `directory` is None when the
    fixtures directory is not a literal (then any directory holding a fixture of that name matches).
    """

    owner: str
    name: str | None
    directory: str | None


def pytest_runnable(tests: Iterable[str]) -> list[str]:
    """The ids pytest can be given: the Vitest files a selection names are not its to run."""
    return [t for t in tests if not file_of(t).endswith(JS_SUFFIXES)]


def is_test_file(path: str) -> bool:
    base = posixpath.basename(path)
    return bool(_PY_TEST_FILE.match(base) or _JS_TEST_FILE.match(base))


def fallback_owner(path: str, tests_dir: str) -> str:
    """What a use outside any test function selects: its test file, a conftest's directory, or all."""
    if is_test_file(path):
        return path
    if posixpath.basename(path) == "conftest.py":
        return posixpath.dirname(path) or "."
    return tests_dir


def scan_tree(
    tree: Tree,
    tests_dir: str,
    default_dir: str,
    names: set[str] | None = None,
    progress: Progress | None = None,
) -> list[Usage]:
    """Every fixture use under `tests_dir`. With `names`, git grep first narrows the files to those
    that mention one of the names or load a fixture by a computed name; the rest cannot matter."""
    candidates = [p for p in tree.grep(_prefilter(names), tests_dir, exclude=f"*{SUFFIX}") if _scannable(p)]
    texts = tree.read(candidates)
    files: Iterable[str] = candidates if progress is None else progress(candidates, len(candidates))
    usages: list[Usage] = []
    for path in files:
        scanner = scan_python if path.endswith(".py") else scan_js
        usages += scanner(path, texts[path], default_dir, tests_dir)
    return usages


def _prefilter(names: set[str] | None) -> str:
    if not names or len(names) > PREFILTER_NAMES:
        return f"{PY_HELPER}|{JS_HELPER}"
    return "|".join([*(_ERE_SPECIAL.sub(r"\\\1", n) for n in sorted(names)), _DYNAMIC_ERE])


def _scannable(path: str) -> bool:
    return path.endswith(".py") or path.endswith(JS_SUFFIXES)


# --- Python ----------------------------------------------------------------------------------------


def scan_python(path: str, text: str, default_dir: str, tests_dir: str) -> list[Usage]:
    try:
        module = ast.parse(text, filename=path)
    except (SyntaxError, ValueError):
        # It cannot be collected either; keep it selectable by any fixture change.
        return [Usage(fallback_owner(path, tests_dir), None, None)]
    scanner = _PythonScan(path, default_dir, tests_dir, _module_constants(module))
    scanner.visit(module, [])
    return scanner.usages


class _PythonScan:
    def __init__(self, path: str, default_dir: str, tests_dir: str, constants: dict[str, str]) -> None:
        self.path = path
        self.default_dir = default_dir
        self.tests_dir = tests_dir
        self.constants = constants
        self.usages: list[Usage] = []

    def visit(self, node: ast.AST, chain: list[ast.AST]) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                self.visit(child, [*chain, child])
                continue
            if isinstance(child, ast.Call) and _called_name(child.func) == PY_HELPER:
                self.record(child, chain)
            self.visit(child, chain)

    def record(self, call: ast.Call, chain: list[ast.AST]) -> None:
        owner, scope = self.owner(chain)
        directory = self.directory(_argument(call, 99, "fixtures_dir"))
        names = self.names(_argument(call, 0, "name"), scope)
        for name in names if names is not None else [None]:
            self.usages.append(Usage(owner, name, directory))

    def owner(self, chain: list[ast.AST]) -> tuple[str, list[ast.AST]]:
        """The node id of the test function holding the call, and the definitions whose decorators
        can parametrise it; or the fallback owner when the call is not inside a test function."""
        functions = (i for i, n in enumerate(chain) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef))
        first = next(functions, None)
        if first is None:
            return fallback_owner(self.path, self.tests_dir), []
        func = chain[first]
        assert isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef)
        if not (func.name.startswith("test") and is_test_file(self.path)):
            return fallback_owner(self.path, self.tests_dir), chain[: first + 1]
        parts = [n.name for n in chain[: first + 1]]  # type: ignore[attr-defined]
        return "::".join([self.path, *parts]), chain[: first + 1]

    def names(self, expr: ast.expr | None, scope: list[ast.AST]) -> list[str] | None:
        literal = _string(expr, self.constants)
        if literal is not None:
            return [literal]
        if isinstance(expr, ast.Name):
            return _parametrized_values(expr.id, scope, self.constants)
        return None

    def directory(self, expr: ast.expr | None) -> str | None:
        if expr is None:
            return self.default_dir
        literal = _string(expr, self.constants)
        return normalize_path(literal) if literal is not None and not literal.startswith("/") else None


def _called_name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _argument(call: ast.Call, position: int, keyword: str) -> ast.expr | None:
    if position < len(call.args) and not any(isinstance(a, ast.Starred) for a in call.args[: position + 1]):
        return call.args[position]
    return next((k.value for k in call.keywords if k.arg == keyword), None)


def _string(expr: ast.expr | None, constants: dict[str, str]) -> str | None:
    if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
        return expr.value
    if isinstance(expr, ast.Name):
        return constants.get(expr.id)
    return None


def _module_constants(module: ast.Module) -> dict[str, str]:
    """Top-level `NAME = "text"` assignments; a name assigned twice is not a constant."""
    seen: dict[str, str | None] = {}
    for stmt in module.body:
        targets: list[ast.expr] = []
        if isinstance(stmt, ast.Assign):
            targets = stmt.targets
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            targets = [stmt.target]
        for target in targets:
            if isinstance(target, ast.Name):
                value = getattr(stmt, "value", None)
                literal = _string(value, {}) if isinstance(value, ast.Constant) else None
                seen[target.id] = literal if target.id not in seen else None
    return {k: v for k, v in seen.items() if v is not None}


def _parametrized_values(arg: str, scope: list[ast.AST], constants: dict[str, str]) -> list[str] | None:
    """The literal values `@pytest.mark.parametrize` gives to argument `arg`, or None if any is not one."""
    for node in reversed(scope):
        for decorator in getattr(node, "decorator_list", []):
            if isinstance(decorator, ast.Call) and _called_name(decorator.func) == "parametrize":
                names = _argnames(_argument(decorator, 0, "argnames"), constants)
                if names is not None and arg in names:
                    return _parametrize_values(_argument(decorator, 1, "argvalues"), names, arg, constants)
    return None


def _parametrize_values(
    argvalues: ast.expr | None, names: list[str], arg: str, constants: dict[str, str]
) -> list[str] | None:
    if not isinstance(argvalues, ast.List | ast.Tuple):
        return None
    index, values = names.index(arg), []
    for case in argvalues.elts:
        if isinstance(case, ast.Call) and _called_name(case.func) == "param":
            items = case.args
        elif len(names) > 1 and isinstance(case, ast.List | ast.Tuple):
            items = case.elts
        else:
            items = [case]
        value = _string(items[index], constants) if index < len(items) else None
        if value is None:
            return None
        values.append(value)
    return values


def _argnames(expr: ast.expr | None, constants: dict[str, str]) -> list[str] | None:
    text = _string(expr, constants)
    if text is not None:
        return [n.strip() for n in text.split(",") if n.strip()]
    if isinstance(expr, ast.List | ast.Tuple):
        names = [_string(e, constants) for e in expr.elts]
        return None if None in names else names  # type: ignore[return-value]
    return None


# --- TypeScript / JavaScript -------------------------------------------------------------------------


def scan_js(path: str, source: str, default_dir: str, tests_dir: str) -> list[Usage]:
    text = _without_comments(source)
    calls = _JS_TEST_CALL.finditer(text)
    tests = [(m.start("open"), _closing(text, m.start("open")), m["text"]) for m in calls]
    usages = []
    for match in _JS_REPLAY_CALL.finditer(text):
        start = match.end()
        args = text[start : _closing(text, start - 1)]
        inside = [t for t in tests if t[0] < match.start() < t[1]]
        owner = f"{path}::{max(inside)[2]}" if inside else fallback_owner(path, tests_dir)
        usages.append(Usage(owner, _js_name(args), _js_dir(args, default_dir)))
    return usages


def _js_name(args: str) -> str | None:
    first = _JS_LEADING_STR.match(args)
    if first is None or (first["q"] == "`" and "${" in first["text"]):
        return None
    return first["text"]


def _js_dir(args: str, default_dir: str) -> str | None:
    match = _JS_DIR.search(args)
    if match is None:
        return default_dir
    literal = match["text"]
    if literal is None or (match["q"] == "`" and "${" in literal) or literal.startswith("/"):
        return None
    return normalize_path(literal)


def _without_comments(text: str) -> str:
    """`text` with its // and /* */ comments blanked (newlines kept, so offsets and lines still hold)."""
    out, i, copied, n = [], 0, 0, len(text)
    while i < n:
        if text[i] in "'\"`":
            i = _string_end(text, i) + 1
        elif text.startswith(("//", "/*"), i):
            end = _comment_end(text, i)
            out += [text[copied:i], re.sub(r"[^\n]", " ", text[i:end])]
            i = copied = end
        else:
            i += 1
    out.append(text[copied:])
    return "".join(out)


def _comment_end(text: str, start: int) -> int:
    if text.startswith("//", start):
        end = text.find("\n", start)
    else:
        end = text.find("*/", start + 2)
        end = end + 2 if end >= 0 else -1
    return len(text) if end < 0 else end


def _closing(text: str, open_at: int) -> int:
    """The index of the parenthesis closing the one at `open_at`, skipping strings."""
    depth, i, n = 0, open_at, len(text)
    while i < n:
        ch = text[i]
        if ch in "'\"`":
            i = _string_end(text, i)
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return n


def _string_end(text: str, start: int) -> int:
    quote, i = text[start], start + 1
    while i < len(text) and text[i] != quote:
        i += 2 if text[i] == "\\" else 1
    return i
