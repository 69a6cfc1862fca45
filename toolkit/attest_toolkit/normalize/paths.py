"""Where two values of a request component differ, named by path and never by value.

A path starts with the component's name and reads like the request: `params.max_tokens`,
`params.reasoning.summary`, `messages[2].content[0]`, `tools[1].function.parameters`. Indexes count
within the component (chat's system messages are the `system` component, so `messages[0]` is the
first message after them). A path may end with what happened to it: `added`, `removed`, or, for a
span of a list holding the same items in another order, `messages[2].content[0..1] reordered`; a path
with no ending changed in place.
"""

from __future__ import annotations

import json
import re
from typing import Any

# One canonical text per value: two values are equal when their texts are (so 1 differs from 1.0 and true).
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*\Z")
LIMIT = 8  # paths named per component; more are counted, so a miss line stays readable


def _text(value: Any) -> str:
    return _CANONICAL.encode(value)


def key_path(path: str, key: Any) -> str:
    """`path.key`, or `path["odd key"]` for a key that is not a plain name (escaped, one line)."""
    key = str(key)
    if _NAME.match(key):
        return f"{path}.{key}" if path else key
    quoted = json.dumps(key, ensure_ascii=True)
    return f"{path}[{quoted}]"


def _span(path: str, start: int, stop: int, what: str) -> str:
    """`path[3] added` for one item, `path[3..5] added` for a run of them (`stop` exclusive)."""
    index = f"{start}" if stop - start == 1 else f"{start}..{stop - 1}"
    return f"{path}[{index}] {what}"


def _reordered(before: list[str], after: list[str]) -> tuple[int, int] | None:
    """The span that holds the same items in another order, when that is the whole difference."""
    if len(before) != len(after) or sorted(before) != sorted(after):
        return None
    moved = [i for i, (b, a) in enumerate(zip(before, after, strict=True)) if b != a]
    return (moved[0], moved[-1] + 1) if moved else None


def _lists(path: str, before: list[Any], after: list[Any], out: list[str]) -> None:
    texts_b, texts_a = [_text(v) for v in before], [_text(v) for v in after]
    span = _reordered(texts_b, texts_a)
    if span:
        out.append(_span(path, *span, "reordered"))
        return
    from difflib import SequenceMatcher  # a miss's paths only: the engine starts without it

    opcodes = SequenceMatcher(None, texts_b, texts_a, autojunk=False).get_opcodes()
    for tag, i1, i2, j1, j2 in opcodes:
        if tag == "equal":
            continue
        span = _reordered(texts_b[i1:i2], texts_a[j1:j2])
        if span:
            out.append(_span(path, j1 + span[0], j1 + span[1], "reordered"))
            continue
        paired = min(i2 - i1, j2 - j1)
        for k in range(paired):  # changed in place: say where inside
            _walk(f"{path}[{j1 + k}]", before[i1 + k], after[j1 + k], out)
        if j2 - j1 > paired:
            out.append(_span(path, j1 + paired, j2, "added"))
        if i2 - i1 > paired:
            out.append(_span(path, i1 + paired, i2, "removed"))


def _dicts(path: str, before: dict[str, Any], after: dict[str, Any], out: list[str]) -> None:
    for key in before:
        if key not in after:
            out.append(f"{key_path(path, key)} removed")
        else:
            _walk(key_path(path, key), before[key], after[key], out)
    out.extend(f"{key_path(path, key)} added" for key in after if key not in before)


def _walk(path: str, before: Any, after: Any, out: list[str]) -> None:
    if _text(before) == _text(after):
        return
    if isinstance(before, dict) and isinstance(after, dict):
        _dicts(path, before, after, out)
    elif isinstance(before, list) and isinstance(after, list):
        _lists(path, before, after, out)
    else:
        out.append(path)


def changed_paths(component: str, before: Any, after: Any) -> list[str]:
    """Every path where the component's recorded value (`before`) and sent value (`after`) differ."""
    if before is None or after is None:  # the whole component is new, or gone
        return [] if before is after else [f"{component} {'added' if before is None else 'removed'}"]
    out: list[str] = []
    _walk(component, before, after, out)
    return [] if out == [component] else out  # the component as a whole: its name says it already


def shown(component: str, paths: list[str]) -> str:
    """The paths as a miss line names them: params' keys without the `params.` every one would carry,
    at most LIMIT of them (`; and 3 more`)."""
    names = [p.removeprefix(f"{component}.") if component == "params" else p for p in paths]
    rest = len(names) - LIMIT
    return "; ".join(names[:LIMIT]) + (f"; and {rest} more" if rest > 0 else "")
