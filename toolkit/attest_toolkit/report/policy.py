"""The policy gate: a file in the repository says what a test run must satisfy, and `evaluate` says
whether a report does (pass, blocked, or not evaluated), rule by rule.

The file is YAML or JSON (`schemas/policy.schema.json`), by default `.attest/policy.yml`. Settings apply
to every test, and `overrides` change them for the tests whose file matches a glob; for each key the
last matching override that sets it wins. Count limits (live calls, cost) apply to the tests a setting
covers, together.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml

from ..errors import AttestError, read_text
from ..fixtures.catalog import age_days
from ..fixtures.validation import first_error, json_pointer
from ..normalize.rules import parse_ignore
from ..progress import counted
from .build import EGRESS_MODES, FAILED_OUTCOMES, Report, Test, replay_of
from .policy_paths import default_policy_path

DEFAULTS: dict[str, Any] = {
    "failures": "block",
    "misses": "block",
    "unused": "warn",
    "not_evaluated": "report",
    "max_live_calls": 0,
    "max_live_tool_calls": 0,
    "max_live_cost_usd": None,
    "require_egress": "off",
    "require_isolation_verified": False,
    "max_fixture_age_days": None,
    "stale": "warn",
}
# Keys that only shape another rule (`stale`: what a fixture older than max_fixture_age_days does).
MODIFIERS = frozenset({"stale"})
# The order rules are evaluated and shown in: what the tests did first, then how the run was isolated.
RULES = tuple(k for k in DEFAULTS if k not in MODIFIERS)
RUN_RULES = frozenset({"require_egress", "require_isolation_verified"})
TOP = -1  # the scope of the policy's own settings, as opposed to an override's index

PASS, BLOCKED, NOT_EVALUATED = "pass", "blocked", "not_evaluated"
EXIT_CODES = {PASS: 0, BLOCKED: 1, NOT_EVALUATED: 2}


class PolicyError(AttestError):
    """A policy file is missing (when named), malformed, or fails validation."""


# --- the policy file -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Override:
    paths: tuple[str, ...]
    settings: dict[str, Any]
    pattern: re.Pattern[str]

    def covers(self, file: str) -> bool:
        return bool(file) and self.pattern.fullmatch(file.removeprefix("./")) is not None


@dataclass(frozen=True)
class Policy:
    settings: dict[str, Any] = field(default_factory=lambda: dict(DEFAULTS))
    overrides: tuple[Override, ...] = ()
    source: str = "built-in defaults"
    ignore: tuple[str, ...] = ()  # matching rules every replay applies (`match: {ignore: [...]}`)

    def scope_label(self, scope: int) -> str:
        return "policy" if scope == TOP else f"overrides[{scope}] ({', '.join(self.overrides[scope].paths)})"

    def setting(self, key: str, scope: int) -> Any:
        return self.settings[key] if scope == TOP else self.overrides[scope].settings[key]

    def modifier(self, key: str, scope: int) -> Any:
        """A modifier of the rule that chose `scope`: the override's own, else the policy's."""
        own = {} if scope == TOP else self.overrides[scope].settings
        return own.get(key, self.settings[key])


def glob_regex(pattern: str) -> re.Pattern[str]:
    """A glob over repository-relative paths: `*` and `?` stay in a directory, `**` crosses them, and a
    pattern that names a directory covers everything under it (as in .gitignore and CODEOWNERS)."""
    glob = pattern.strip().removeprefix("./").strip("/")
    out: list[str] = []
    i = 0
    while i < len(glob):
        if glob.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif glob.startswith("**", i):
            out.append(".*")
            i += 2
        else:
            token, i = _glob_token(glob, i)
            out.append(token)
    return re.compile("(?:" + "".join(out) + ")(?:/.*)?", re.DOTALL)


def _glob_token(glob: str, i: int) -> tuple[str, int]:
    char = glob[i]
    if char == "*":
        return "[^/]*", i + 1
    if char == "?":
        return "[^/]", i + 1
    if char == "[":
        end = glob.find("]", i + 2)
        if end != -1:
            body = glob[i + 1 : end]
            negate = body[:1] in ("!", "^")
            body = re.escape(body[1:] if negate else body).replace("\\-", "-")
            return ("[^/" if negate else "[") + body + "]", end + 1
    return re.escape(char), i + 1


class _Refused(yaml.YAMLError):
    """A YAML construct a policy file may not use; `problem_mark` says where."""

    def __init__(self, problem: str, mark: yaml.Mark) -> None:
        super().__init__(problem)
        self.problem, self.problem_mark = problem, mark


class _Loader(yaml.SafeLoader):
    """YAML 1.2 booleans: only true/false. `require_egress: off` must stay the string "off".

    A policy is read from a pull request's checkout, so it is input: no aliases (a few nested ones
    expand to billions of nodes for every reader that walks the document), and no key twice in a
    mapping (the last one would win in silence)."""

    def compose_node(self, parent: yaml.Node | None, index: int) -> yaml.Node | None:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise _Refused(f"alias *{event.anchor}: a policy file may not use aliases", event.start_mark)
        return super().compose_node(parent, index)

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if not isinstance(key, Hashable):
                continue  # not a key a policy has: the schema names it
            if key in seen:
                raise _Refused(f"duplicate key {key!r}", key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


_Loader.yaml_implicit_resolvers = {
    key: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:bool"]
    for key, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.copy().items()
}
_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)


def load_policy(path: str | Path | None = None, *, root: Path | None = None) -> Policy:
    """The named policy file (which must exist), else the default file, else the built-in defaults."""
    if path is None:
        found = default_policy_path(root)
        return Policy() if found is None else parse_policy(_read(found), found)
    return parse_policy(_read(Path(path)), Path(path))


def _read(path: Path) -> Any:
    return parse_text(read_text(path, PolicyError, "policy file"), path)


def parse_text(text: str, source: str | Path) -> Any:
    """A policy document from its text: JSON when `source` ends in .json, else YAML."""
    if str(source).lower().endswith(".json"):
        try:
            return json.loads(text, object_pairs_hook=lambda pairs: _unique_keys(pairs, source))
        except json.JSONDecodeError as exc:
            raise PolicyError(
                f"not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})", source
            ) from None
    try:
        return yaml.load(text, Loader=_Loader)  # a SafeLoader subclass: no arbitrary objects
    except yaml.YAMLError as exc:
        raise PolicyError(f"not valid YAML ({_yaml_problem(exc)})", source) from None


def _unique_keys(pairs: list[tuple[str, Any]], source: str | Path) -> dict[str, Any]:
    doc: dict[str, Any] = {}
    for key, value in pairs:
        if key in doc:
            raise PolicyError(f"duplicate key {key!r}", source)
        doc[key] = value
    return doc


def _yaml_problem(exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or "cannot parse"
    return f"line {mark.line + 1}, column {mark.column + 1}: {problem}" if mark else problem


def _non_finite(node: Any, where: tuple[str | int, ...] = ()) -> str | None:
    """NaN or infinity (YAML `.nan`, JSON `NaN`) passes a schema's "number" and compares false with
    everything, so a limit would silently never apply: name where it is."""
    if isinstance(node, float) and not math.isfinite(node):
        return f"{json_pointer(list(where))}: {node} is not a finite number"
    children = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    return next((p for k, v in children if (p := _non_finite(v, (*where, k)))), None)


def parse_policy(doc: Any, source: str | Path = "policy") -> Policy:
    """A Policy from a parsed document (an empty file means the defaults)."""
    doc = {} if doc is None else doc
    if not isinstance(doc, dict):
        raise PolicyError("a policy must be a mapping of settings", source)
    problem = _non_finite(doc) or first_error("policy.schema.json", doc)
    if problem:
        raise PolicyError(problem, source)
    settings = {key: doc.get(key, default) for key, default in DEFAULTS.items()}
    overrides = tuple(
        Override(
            paths=tuple(o["paths"]),
            settings={k: v for k, v in o.items() if k != "paths"},
            pattern=_paths_pattern(o["paths"], index, source),
        )
        for index, o in enumerate(doc.get("overrides", []))
    )
    ignore = tuple(doc.get("match", {}).get("ignore", []))
    try:
        parse_ignore(ignore, "match.ignore")
    except AttestError as exc:
        raise PolicyError(str(exc), source) from None
    return Policy(settings, overrides, str(source), ignore)


def _paths_pattern(paths: list[str], index: int, source: str | Path) -> re.Pattern[str]:
    """One pattern for an override's globs; a glob that is no pattern (`[z-a]`) is named."""
    parts = []
    for number, glob in enumerate(paths):
        try:
            parts.append(glob_regex(glob).pattern)
        except re.error as exc:
            where = json_pointer(["overrides", index, "paths", number])
            raise PolicyError(f"{where}: {glob!r} is not a valid glob ({exc.msg})", source) from None
    return re.compile("|".join(f"(?:{part})" for part in parts), re.DOTALL)


# --- evaluation ----------------------------------------------------------------------------------


@dataclass
class RuleResult:
    rule: str
    scope: str
    limit: Any
    actual: Any
    status: str  # "ok", "blocked" or "not_evaluated"
    tests: list[str] = field(default_factory=list)
    detail: str | None = None

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def to_dict(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "scope": self.scope,
            "limit": self.limit,
            "actual": self.actual,
            "ok": self.ok,
            "status": self.status,
            "tests": self.tests,
            "detail": self.detail,
        }


@dataclass
class Verdict:
    verdict: str  # "pass", "blocked" or "not_evaluated"
    rules: list[RuleResult]
    policy: str

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.verdict]

    def to_dict(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict,
            "exit_code": self.exit_code,
            "policy": self.policy,
            "rules": [r.to_dict() for r in self.rules],
        }


def evaluate(report: Report, policy: Policy | None = None) -> Verdict:
    """Every rule's result on `report`; blocked wins over not evaluated, which wins over pass."""
    policy = policy or Policy()
    scopes = _Scopes(policy, report["tests"])
    rules: list[RuleResult] = []
    for rule in RULES:
        rules.extend(_RULES[rule](report, policy, scopes))
    statuses = {r.status for r in rules}
    verdict = BLOCKED if BLOCKED in statuses else NOT_EVALUATED if NOT_EVALUATED in statuses else PASS
    return Verdict(verdict, rules, policy.source)


class _Scopes:
    """For each rule, the tests each scope (the policy or one override) governs."""

    def __init__(self, policy: Policy, tests: list[Test]) -> None:
        # Matching globs once per file, not once per test and rule: suites have far fewer files.
        matches = {
            file: [i for i, o in enumerate(policy.overrides) if o.covers(file)]
            for file in {t["file"] for t in tests}
        }
        self._by_rule: dict[str, dict[int, list[Test]]] = {}
        for rule in RULES:
            groups: dict[int, list[Test]] = {TOP: []}
            for test in tests:
                scope = next(
                    (i for i in reversed(matches[test["file"]]) if rule in policy.overrides[i].settings), TOP
                )
                groups.setdefault(scope, []).append(test)
            self._by_rule[rule] = dict(sorted(groups.items()))

    def groups(self, rule: str) -> dict[int, list[Test]]:
        return self._by_rule[rule]


# The replay counts the rules add up, in a test row and in the run's totals alike.
_Summed = Literal["live", "tool_live", "misses", "unused", "unpriced", "live_cost_usd"]


def _replay_sum(tests: Iterable[Test], key: _Summed) -> float:
    return sum(replay_of(t).get(key, 0) for t in tests)


def _unattributed(report: Report, key: _Summed) -> float:
    """What the run counted outside any test (e.g. a call made at import time)."""
    return max(0, report["summary"]["replay"].get(key, 0) - _replay_sum(report["tests"], key))


def _ids(tests: Iterable[Test]) -> list[str]:
    return [t["id"] for t in tests]


def _counted(report: Report, tests: list[Test], key: _Summed, scope: int) -> tuple[int, list[str]]:
    """How many `key` a scope's tests counted (the policy's own scope also gets what was counted
    outside any test), and the tests that counted some."""
    actual = int(_replay_sum(tests, key) + (_unattributed(report, key) if scope == TOP else 0))
    return actual, _ids(t for t in tests if replay_of(t).get(key, 0) > 0)


def _count_limit(rule: str, key: _Summed) -> Callable[[Report, Policy, _Scopes], list[RuleResult]]:
    """A rule that caps a count of the tests it covers (live model calls, live tool calls)."""

    def evaluate(report: Report, policy: Policy, scopes: _Scopes) -> list[RuleResult]:
        results = []
        for scope, tests in scopes.groups(rule).items():
            limit = policy.setting(rule, scope)
            actual, involved = _counted(report, tests, key, scope)
            status = "ok" if actual <= limit else "blocked"
            results.append(RuleResult(rule, policy.scope_label(scope), limit, actual, status, involved))
        return results

    return evaluate


_live_calls = _count_limit("max_live_calls", "live")


def _live_cost(report: Report, policy: Policy, scopes: _Scopes) -> list[RuleResult]:
    results = []
    for scope, tests in scopes.groups("max_live_cost_usd").items():
        limit = policy.setting("max_live_cost_usd", scope)
        extra = scope == TOP
        cost = round(
            _replay_sum(tests, "live_cost_usd") + (_unattributed(report, "live_cost_usd") if extra else 0), 6
        )
        unpriced = int(_replay_sum(tests, "unpriced") + (_unattributed(report, "unpriced") if extra else 0))
        involved = _ids(t for t in tests if replay_of(t).get("live", 0) > 0)
        status, detail = "ok", None
        if limit is None:
            detail = "no ceiling"
        elif cost > limit:
            status = "blocked"
        elif unpriced:
            # An unpriced call's cost is unknown, so the run cannot be shown to be under the ceiling.
            status, detail = "blocked", f"{unpriced} live call(s) unpriced: cost unknown"
        results.append(
            RuleResult("max_live_cost_usd", policy.scope_label(scope), limit, cost, status, involved, detail)
        )
    return results


def _misses(report: Report, policy: Policy, scopes: _Scopes) -> list[RuleResult]:
    results = []
    for scope, group in scopes.groups("misses").items():
        # An auto-mode miss that could not go live made its test not evaluated: the not_evaluated rule
        # decides about it (the seed: "exit 2 unless the policy blocks it"), not this one.
        tests = [t for t in group if t["outcome"] != "not_evaluated"]
        limit = policy.setting("misses", scope)
        actual, involved = _counted(report, tests, "misses", scope)
        status = "blocked" if actual and limit == "block" else "ok"
        results.append(RuleResult("misses", policy.scope_label(scope), limit, actual, status, involved))
    return results


def _unused(report: Report, policy: Policy, scopes: _Scopes) -> list[RuleResult]:
    results = []
    for scope, tests in scopes.groups("unused").items():
        limit = policy.setting("unused", scope)
        actual, involved = _counted(report, tests, "unused", scope)
        status = "blocked" if actual and limit == "block" else "ok"
        detail = f"warning: {counted(actual, 'recording')} unused" if actual and limit == "warn" else None
        results.append(
            RuleResult("unused", policy.scope_label(scope), limit, actual, status, involved, detail)
        )
    return results


def _failures(report: Report, policy: Policy, scopes: _Scopes) -> list[RuleResult]:
    del report
    results = []
    for scope, tests in scopes.groups("failures").items():
        limit = policy.setting("failures", scope)
        involved = _ids(t for t in tests if t["outcome"] in FAILED_OUTCOMES)
        status = "blocked" if involved and limit == "block" else "ok"
        results.append(
            RuleResult("failures", policy.scope_label(scope), limit, len(involved), status, involved)
        )
    return results


def _not_evaluated(report: Report, policy: Policy, scopes: _Scopes) -> list[RuleResult]:
    del report
    results = []
    for scope, tests in scopes.groups("not_evaluated").items():
        limit = policy.setting("not_evaluated", scope)
        involved = _ids(t for t in tests if t["outcome"] == "not_evaluated")
        status = "ok"
        if involved and limit != "allow":
            status = "blocked" if limit == "block" else "not_evaluated"
        results.append(
            RuleResult("not_evaluated", policy.scope_label(scope), limit, len(involved), status, involved)
        )
    return results


def _run_scopes(rule: str, report: Report, scopes: _Scopes) -> list[tuple[int, list[Test]]]:
    """Scopes of a run-wide rule that govern a test; the policy's own when the report has no tests."""
    groups = scopes.groups(rule)
    return [(s, t) for s, t in groups.items() if t or (s == TOP and not report["tests"])]


def _egress(report: Report, policy: Policy, scopes: _Scopes) -> list[RuleResult]:
    actual = report["summary"]["egress"]["mode"]
    results = []
    for scope, tests in _run_scopes("require_egress", report, scopes):
        limit = policy.setting("require_egress", scope)
        ok = EGRESS_MODES.index(actual) <= EGRESS_MODES.index(limit)
        detail = f"applies to {len(tests)} test(s)" if tests else None
        status = "ok" if ok else "blocked"
        results.append(
            RuleResult("require_egress", policy.scope_label(scope), limit, actual, status, [], detail)
        )
    return results


def _isolation(report: Report, policy: Policy, scopes: _Scopes) -> list[RuleResult]:
    actual = bool(report["summary"]["egress"]["isolation_verified"])
    results = []
    for scope, tests in _run_scopes("require_isolation_verified", report, scopes):
        limit = bool(policy.setting("require_isolation_verified", scope))
        detail = f"applies to {len(tests)} test(s)" if tests else None
        status = "ok" if actual or not limit else "blocked"
        results.append(
            RuleResult(
                "require_isolation_verified", policy.scope_label(scope), limit, actual, status, [], detail
            )
        )
    return results


def _fixture_age(report: Report, policy: Policy, scopes: _Scopes) -> list[RuleResult]:
    """Fixtures recorded more than `max_fixture_age_days` ago (off when null), by the report's
    `summary.fixtures`; `stale` says whether that warns or blocks."""
    recorded = report["summary"].get("fixtures") or {}
    results = []
    for scope, tests in scopes.groups("max_fixture_age_days").items():
        limit = policy.setting("max_fixture_age_days", scope)
        if limit is None:
            continue
        ages = {path: age_days(facts.get("recorded_at")) for path, facts in recorded.items()}
        old = {path for path, age in ages.items() if age is not None and age > limit}
        involved = _ids(t for t in tests if old & set(replay_of(t).get("fixtures") or []))
        used = {p for t in tests for p in replay_of(t).get("fixtures") or []}
        actual = max((age for p in used if (age := ages.get(p)) is not None), default=0)
        stale = policy.modifier("stale", scope)
        status = "blocked" if involved and stale == "block" else "ok"
        unknown = len(used - {p for p, a in ages.items() if a is not None})
        notes = (
            [f"warning: {len(old & used)} fixture(s) older than {limit} days"]
            if involved and stale == "warn"
            else []
        )
        notes += [f"{unknown} fixture(s) of unknown age"] if unknown else []
        results.append(
            RuleResult("max_fixture_age_days", policy.scope_label(scope), limit, actual, status, involved,
                       "; ".join(notes) or None)
        )  # fmt: skip
    return results


_RULES = {
    "max_live_calls": _live_calls,
    "max_live_tool_calls": _count_limit("max_live_tool_calls", "tool_live"),
    "max_live_cost_usd": _live_cost,
    "misses": _misses,
    "unused": _unused,
    "failures": _failures,
    "not_evaluated": _not_evaluated,
    "require_egress": _egress,
    "require_isolation_verified": _isolation,
    "max_fixture_age_days": _fixture_age,
}
