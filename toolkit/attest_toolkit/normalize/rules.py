"""Matching rules: the parts of a request a replay lets change, serving the recording and reporting
the change as drift.

An ignore rule is a path in the notation misses name paths in (so a path copied from a miss works):
a component (`system`, `messages`, `tools`, `params`, `model`), then any of `.key`, `["odd key"]`,
`*` as a key (every key), `[2]` (an index), `[*]` (every item), and `[?type=text&text= ]` (the items
that are objects holding exactly those string values). What a rule names is removed from the
recorded and the sent component alike before they are compared: `params.max_tokens`,
`params.reasoning.summary`, `messages[*].content[?type=text&text= ]` (blank text blocks),
`messages[*].content` (where a message's content is null or missing), `model`.

This is a JSONPath subset rather than JSONPath itself: the filter compares strings only, and every
path names where a difference may be, the way a miss names it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..errors import UsageError
from .decompose import COMPONENTS, canonical_hash

Step = tuple[str, Any]  # ("key", name) | ("keys", None) | ("index", n) | ("items", None) | ("where", pairs)
_STEP = re.compile(
    r"""\.(?P<key>[A-Za-z_][A-Za-z0-9_-]*)
      | \.(?P<keys>\*)
      | \[(?P<index>\d+)\]
      | \[(?P<items>\*)\]
      | \[\?(?P<where>[^\]]+)\]
      | \[(?P<quoted>"(?:[^"\\]|\\.)*")\]""",
    re.VERBOSE,
)
_GONE = object()  # what a rule removed


@dataclass(frozen=True)
class Rule:
    text: str
    component: str
    steps: tuple[Step, ...]


def _where(text: str, rule: str) -> tuple[tuple[str, str], ...]:
    pairs = []
    for term in text.split("&"):
        name, equals, value = term.partition("=")
        if not equals or not name:
            raise UsageError(f"ignore rule {rule!r}: a filter is [?key=value&key=value]")
        pairs.append((name, value))
    return tuple(pairs)


def parse_rule(text: str) -> Rule:
    """One ignore path as a rule; a UsageError names the path and the problem."""
    head = re.match(r"[a-z]+", text)
    component = head.group(0) if head else ""
    if component not in COMPONENTS:
        raise UsageError(f"ignore rule {text!r}: a path starts with {', '.join(COMPONENTS)}")
    steps: list[Step] = []
    at = len(component)
    while at < len(text):
        found = _STEP.match(text, at)
        if found is None:
            raise UsageError(f"ignore rule {text!r}: cannot read it from {text[at:]!r}")
        kind = found.lastgroup or ""
        value = found.group(kind)
        if kind == "where":
            steps.append((kind, _where(value, text)))
        elif kind == "quoted":
            steps.append(("key", json.loads(value)))
        else:
            steps.append((kind, int(value) if kind == "index" else value if kind == "key" else None))
        at = found.end()
    return Rule(text, component, tuple(steps))


def parse_ignore(paths: Iterable[object], where: str) -> tuple[Rule, ...]:
    """Ignore rules from a list of paths (a fixture's, a marker's, a policy's, or vcr_config's
    `match_on` mapped onto them); `where` names the list in an error: `fixture x.attest.json`."""
    rules = []
    for path in paths:
        if not isinstance(path, str):
            raise UsageError(f"{where}: an ignore rule is a path string, not {type(path).__name__}")
        try:
            rules.append(parse_rule(path))
        except UsageError as exc:
            raise UsageError(f"{where}: {exc}") from None
    return tuple(rules)


def _selected(step: Step, index: int, item: Any) -> bool:
    kind, value = step
    if kind == "index":
        return index == value
    if kind == "items":
        return True
    return isinstance(item, dict) and all(item.get(k) == v for k, v in value)


def _drop(value: Any, steps: tuple[Step, ...]) -> Any:
    """`value` without what `steps` name (_GONE when they name `value` itself)."""
    if not steps:
        return _GONE
    step, rest = steps[0], steps[1:]
    if isinstance(value, dict) and step[0] in ("key", "keys"):
        out = dict(value)
        for key in [step[1]] if step[0] == "key" else list(value):
            if key in out:
                kept = _drop(out[key], rest)
                if kept is _GONE:
                    del out[key]
                else:
                    out[key] = kept
        return out
    if isinstance(value, list) and step[0] in ("index", "items", "where"):
        out_items = []
        for index, item in enumerate(value):
            kept = _drop(item, rest) if _selected(step, index, item) else item
            if kept is not _GONE:
                out_items.append(kept)
        return out_items
    return value


def masked(components: dict[str, Any], rules: Iterable[Rule]) -> dict[str, Any]:
    """The components with what the rules name removed (a rule naming a whole component empties it)."""
    out = dict(components)
    for rule in rules:
        kept = _drop(out[rule.component], rule.steps)
        out[rule.component] = None if kept is _GONE else kept
    return out


def masked_hashes(components: dict[str, Any], rules: Iterable[Rule]) -> dict[str, str]:
    return {name: canonical_hash(value) for name, value in masked(components, rules).items()}
