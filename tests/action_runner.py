"""Run a composite action's steps as GitHub's runner does, for end-to-end tests of action.yml.

What the runner does and this reproduces: input defaults (which may be expressions), `${{ }}`
expressions in `env`, `if`, `working-directory` and the action's outputs, with the contexts `inputs`,
`github`, `runner` and `steps`; each `run:` step as `bash --noprofile --norc -eo pipefail FILE` in its
working directory with fresh GITHUB_OUTPUT, GITHUB_ENV and GITHUB_PATH files, read afterwards: the
first into `steps.<id>.outputs`, the second into the environment of every later step (below a step's
own `env`, which wins), each line of the third put in front of PATH for every later step; an
implicit `success()` on every step, so the first failing step ends the action with its exit code.
`uses:` steps are not run (they would fetch other actions): they are recorded with their `with`.

The expression language is the subset action.yml uses: property paths, string literals, `==`, `!=`,
`&&`, `||`, `!` and parentheses, with GitHub's rules (`||` and `&&` return an operand; an empty
string and null are falsy; strings compare ignoring case, other mixed types as numbers, so a missing
output equals ''). Anything else is an error, so a test
cannot pass on an expression this runner misread.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from fake_runner import parse_outputs

EXPRESSION = re.compile(r"\$\{\{(.*?)\}\}", re.S)
TOKEN = re.compile(r"\s*(?:(?P<str>'(?:[^']|'')*')|(?P<op>==|!=|&&|\|\||!|\(|\))|(?P<ref>[A-Za-z_][\w.-]*))")


class ExpressionError(ValueError):
    """An expression outside the supported subset."""


def _tokens(text: str) -> list[tuple[str, str]]:
    out, pos, text = [], 0, text.strip()
    while pos < len(text):
        match = TOKEN.match(text, pos)
        if not match or match.end() == pos:
            raise ExpressionError(f"cannot read {text[pos:]!r} in {text!r}")
        kind = match.lastgroup or ""
        out.append((kind, match.group(kind)))
        pos = match.end()
    return out


class _Parser:
    def __init__(self, text: str, contexts: Mapping[str, Any]) -> None:
        self.tokens = _tokens(text)
        self.pos = 0
        self.contexts = contexts
        self.text = text

    def parse(self) -> Any:
        value = self._or()
        if self.pos != len(self.tokens):
            raise ExpressionError(f"unexpected {self.tokens[self.pos][1]!r} in {self.text!r}")
        return value

    def _peek(self) -> str | None:
        return self.tokens[self.pos][1] if self.pos < len(self.tokens) else None

    def _take(self) -> tuple[str, str]:
        if self.pos >= len(self.tokens):
            raise ExpressionError(f"unexpected end of {self.text!r}")
        self.pos += 1
        return self.tokens[self.pos - 1]

    def _or(self) -> Any:
        value = self._and()
        while self._peek() == "||":
            self._take()
            right = self._and()
            value = value if truthy(value) else right
        return value

    def _and(self) -> Any:
        value = self._compare()
        while self._peek() == "&&":
            self._take()
            right = self._compare()
            value = right if truthy(value) else value
        return value

    def _compare(self) -> Any:
        left = self._unary()
        if self._peek() in ("==", "!="):
            op = self._take()[1]
            right = self._unary()
            equal = _equal(left, right)
            return equal if op == "==" else not equal
        return left

    def _unary(self) -> Any:
        if self._peek() == "!":
            self._take()
            return not truthy(self._unary())
        return self._primary()

    def _primary(self) -> Any:
        kind, text = self._take()
        if text == "(":
            value = self._or()
            if self._take()[1] != ")":
                raise ExpressionError(f"missing ) in {self.text!r}")
            return value
        if kind == "str":
            return text[1:-1].replace("''", "'")
        if kind == "ref":
            if self._peek() == "(":
                raise ExpressionError(f"function {text}() is not supported in {self.text!r}")
            return _lookup(self.contexts, text)
        raise ExpressionError(f"unexpected {text!r} in {self.text!r}")


def _lookup(contexts: Mapping[str, Any], path: str) -> Any:
    value: Any = contexts
    for part in path.split("."):
        if not isinstance(value, Mapping):
            return None
        value = value.get(part)
    return value


def _number(value: Any) -> float:
    """GitHub's coercion when the operands' types differ: null 0, booleans 1/0, strings parsed."""
    if value is None:
        return 0.0
    if isinstance(value, bool | int | float):
        return float(value)
    try:
        return float(value.strip() or 0)
    except ValueError:
        return float("nan")


def _equal(left: Any, right: Any) -> bool:
    if isinstance(left, str) and isinstance(right, str):
        return left.lower() == right.lower()
    if type(left) is type(right):
        return left == right
    return _number(left) == _number(right)


def truthy(value: Any) -> bool:
    return value not in (None, "", False, 0)


def evaluate(text: str, contexts: Mapping[str, Any]) -> Any:
    return _Parser(text, contexts).parse()


def _string(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def interpolate(text: Any, contexts: Mapping[str, Any]) -> str:
    """A value with every `${{ }}` replaced, as the runner does for env, with and defaults."""
    return EXPRESSION.sub(lambda m: _string(evaluate(m.group(1), contexts)), _string(text))


def condition(text: Any, contexts: Mapping[str, Any]) -> bool:
    """A step's `if`: a bare expression, or one wrapped in `${{ }}`."""
    if text is None:
        return True
    raw = str(text).strip()
    match = EXPRESSION.fullmatch(raw)
    return truthy(evaluate(match.group(1) if match else raw, contexts))


@dataclass
class StepRun:
    name: str
    id: str | None
    returncode: int
    stdout: str
    stderr: str
    outputs: dict[str, str]
    env_written: dict[str, str] = field(default_factory=dict)
    path_written: list[str] = field(default_factory=list)
    cwd: Path | None = None  # where the step was started


@dataclass
class ActionRun:
    returncode: int
    outputs: dict[str, str]
    steps: list[StepRun] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    uses: list[tuple[str, str, dict[str, str]]] = field(default_factory=list)  # (name, action, with)

    @property
    def log(self) -> str:
        return "".join(f"--- {s.name}\n{s.stdout}{s.stderr}" for s in self.steps)

    def step(self, name_or_id: str) -> StepRun:
        return next(s for s in self.steps if name_or_id in (s.id, s.name))


def load_action(path: Path) -> dict[str, Any]:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def run_action(
    action_path: Path,
    inputs: Mapping[str, str],
    *,
    github: Mapping[str, Any],
    env: Mapping[str, str],
    workspace: Path,
    runner_temp: Path,
    only: Collection[str] | None = None,
) -> ActionRun:
    """Run action.yml's steps in `workspace` with `inputs` and the `github` context (token, event...).
    `only`: run just the steps of these names, each whatever its `if:` and whatever those before did."""
    action = load_action(action_path / "action.yml")
    contexts: dict[str, Any] = {
        "github": {"workspace": str(workspace), **github},
        "runner": {"temp": str(runner_temp)},
        "steps": {},
    }
    contexts["inputs"] = _inputs(action, inputs, contexts)
    base_env = {
        "GITHUB_WORKSPACE": str(workspace),
        **env,
        "GITHUB_ACTION_PATH": str(action_path),
        "RUNNER_TEMP": str(runner_temp),
    }
    job_env: dict[str, str] = {}  # what steps wrote to GITHUB_ENV and GITHUB_PATH, for the steps after them
    result = ActionRun(returncode=0, outputs={})
    for index, step in enumerate(action["runs"]["steps"]):
        name = step.get("name", f"step {index}")
        chosen = condition(step.get("if"), contexts) if only is None else name in only
        if not chosen:
            result.skipped.append(name)
            continue
        if "uses" in step:
            given = {k: interpolate(v, contexts) for k, v in (step.get("with") or {}).items()}
            result.uses.append((name, step["uses"], given))
            continue
        run = run_step(step, name, index, contexts, {**base_env, **job_env}, workspace, runner_temp)
        job_env.update(run.env_written)
        for directory in run.path_written:
            job_env["PATH"] = f"{directory}:{job_env.get('PATH', base_env.get('PATH', ''))}"
        result.steps.append(run)
        if run.id:
            contexts["steps"][run.id] = {"outputs": run.outputs}
        if run.returncode != 0:
            result.returncode = run.returncode
            if only is None:
                break
    result.outputs = {k: interpolate(v["value"], contexts) for k, v in action.get("outputs", {}).items()}
    return result


def _inputs(action: dict[str, Any], given: Mapping[str, str], contexts: Mapping[str, Any]) -> dict[str, str]:
    declared = action.get("inputs", {})
    unknown = set(given) - set(declared)
    if unknown:
        raise KeyError(f"not inputs of the action: {sorted(unknown)}")
    values = {}
    for name, spec in declared.items():
        if name in given:
            values[name] = given[name]
        elif spec.get("required"):
            raise KeyError(f"the action requires the input {name!r}")
        else:
            values[name] = interpolate(spec.get("default", ""), contexts)
    return values


def step_directory(step: Mapping[str, Any], contexts: Mapping[str, Any], workspace: Path) -> Path:
    """Where the runner starts a step: its working-directory, from the workspace unless absolute."""
    return workspace / interpolate(step.get("working-directory", "."), contexts)


def run_step(
    step: dict[str, Any],
    name: str,
    index: int,
    contexts: Mapping[str, Any],
    base_env: Mapping[str, str],
    workspace: Path,
    runner_temp: Path,
    default_shell: list[str] | None = None,
) -> StepRun:
    """One `run:` step; `default_shell`: the command for a step without `shell:` (a workflow's)."""
    shells = {"bash": ["bash", "--noprofile", "--norc", "-eo", "pipefail"], None: default_shell}
    shell = shells.get(step.get("shell"))
    if shell is None:
        raise ValueError(f"step {name!r}: only shell: bash steps are supported")
    if EXPRESSION.search(step["run"]):
        raise ValueError(f"step {name!r}: expressions in run: scripts are injectable; pass them in env")
    script = runner_temp / f"step-{index}.sh"
    script.write_text(step["run"], encoding="utf-8")
    files = {
        kind: runner_temp / f"{kind.lower()}-{index}"
        for kind in ("GITHUB_OUTPUT", "GITHUB_ENV", "GITHUB_PATH")
    }
    for path in files.values():
        path.write_text("", encoding="utf-8")
    step_env = {k: interpolate(v, contexts) for k, v in (step.get("env") or {}).items()}
    cwd = step_directory(step, contexts, workspace)
    done = subprocess.run(
        [*shell, str(script)],
        cwd=cwd,
        env={**base_env, **step_env, **{kind: str(path) for kind, path in files.items()}},
        capture_output=True,
        text=True,
        timeout=300,
    )
    written = {kind: path.read_text(encoding="utf-8") for kind, path in files.items()}
    return StepRun(
        name,
        step.get("id"),
        done.returncode,
        done.stdout,
        done.stderr,
        parse_outputs(written["GITHUB_OUTPUT"]),
        parse_outputs(written["GITHUB_ENV"]),
        [line for line in written["GITHUB_PATH"].splitlines() if line],
        cwd,
    )
