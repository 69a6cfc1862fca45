"""Miss messages, in the seed's exact wording.

Each function turns one kind of divergence into the line the agent, the test and CI log show:
`replay miss: system prompt changed (hash a1b2c3d→e4f5a6b); re-record with `attest capture --refresh N``.
"""

from __future__ import annotations

import json
import os
import shlex
from dataclasses import dataclass, replace
from enum import Enum
from pathlib import Path
from typing import Any

from ..errors import escape
from ..fixtures.document import DEFAULT_DIR
from ..normalize import COMPONENTS, canonical_hash
from ..normalize.paths import changed_paths, shown
from ..providers import error_body


class MissKind(str, Enum):
    """What a miss (or drift) found: the request component that differed, or what else went wrong.

    String-valued, so a report, a summary and a JUnit property carry the same words as before and a
    runner in another language compares plain strings (report-v2's `miss.component`)."""

    # Shown as its value in f-strings and str() on every Python (3.12 changed a mixed-in Enum's format).
    __str__ = str.__str__

    # The request's components, in the seed's order (normalize's COMPONENTS).
    SYSTEM = "system"
    MESSAGES = "messages"
    TOOLS = "tools"
    PARAMS = "params"
    MODEL = "model"
    ENDPOINT = "endpoint"  # another method, path or provider
    OVERFLOW = "overflow"  # more model calls than recorded
    DUPLICATE = "duplicate"  # an extra identical model call
    TOOL = "tool"  # a tool call that was not recorded
    BYPASS = "bypass"  # a provider call that went around the replay
    PLAIN_HTTP = "plain_http"  # a plain HTTP call the fixture has no recording of


# How each component is named in a message ("system prompt changed", "messages changed", ...).
LABELS = {
    MissKind.SYSTEM: "system prompt",
    MissKind.MESSAGES: "messages",
    MissKind.TOOLS: "tools",
    MissKind.PARAMS: "params",
    MissKind.MODEL: "model",
}
SHORT = 7
# What a request to a session id the engine does not have gets (with 403: the id is the run's secret).
NO_SESSION = "attest replay: no such replay session (it has ended, or the URL is not this run's)"


@dataclass(frozen=True)
class Miss:
    message: str
    component: MissKind
    fixture: str  # the fixture's name, for the re-record command
    # Where the request changed, each path starting with its component (`params.max_tokens`,
    # `messages[3] added`); empty when the miss is not about a request's content.
    paths: tuple[str, ...] = ()


def quoted(value: str | None) -> str:
    return escape(json.dumps(value, ensure_ascii=False)) if value is not None else "none"


def refresh_command(fixture: str, fixtures_dir: str | None = None) -> str:
    flag = f" --fixtures-dir {shlex.quote(fixtures_dir)}" if fixtures_dir else ""
    return f"`attest capture --refresh {escape(fixture)}{escape(flag)}`"


def _line(what: str, fixture: str) -> str:
    return f"replay miss: {what}; re-record with {refresh_command(fixture)}"


def fixtures_dir_flag(fixture_path: Path, cwd: Path | None = None) -> str | None:
    """The --fixtures-dir a re-record needs for this fixture: None in the default place, else its
    directory (relative to the working directory when inside it)."""
    directory = fixture_path.parent.resolve()
    here = (cwd or Path.cwd()).resolve()
    shown = os.path.relpath(directory, here) if directory.is_relative_to(here) else str(directory)
    return None if Path(shown) == DEFAULT_DIR else shown


def naming_fixtures_dir(miss: Miss, fixtures_dir: str | None) -> Miss:
    """The same miss, its re-record command naming `--fixtures-dir` when the fixture needs one."""
    if not fixtures_dir:
        return miss
    hint = refresh_command(miss.fixture)
    return replace(miss, message=miss.message.replace(hint, refresh_command(miss.fixture, fixtures_dir)))


def _changed_words(component: str, recorded: dict[str, str], live: dict[str, str], paths: list[str]) -> str:
    """`params changed: max_tokens (hash a1b2c3d→e4f5a6b)`; without paths, the seed's wording."""
    before, after = recorded[component][:SHORT], live[component][:SHORT]
    where = f": {escape(shown(component, paths))}" if paths else ""
    return f"{LABELS[MissKind(component)]} changed{where} (hash {before}→{after})"


# What a miss names about an upload's part, in the order it looks: the part's identity, then its content.
_PART_FIELDS = (("name", "field name"), ("filename", "file name"), ("content_type", "content type"))
_PART_CONTENT = ("value", "sha256", "size")


def _content_hash(part: dict) -> str:
    return canonical_hash({k: part[k] for k in _PART_CONTENT if k in part})[:SHORT]


def _part_change(index: int, before: dict, after: dict) -> str | None:
    label = f"upload part {quoted(before.get('name'))}" if before.get("name") else f"upload part {index}"
    for key, name in _PART_FIELDS:
        if before.get(key) != after.get(key):
            return f"{label} {name} changed ({quoted(before.get(key))}→{quoted(after.get(key))})"
    if _content_hash(before) != _content_hash(after):
        return f"{label} content changed (hash {_content_hash(before)}→{_content_hash(after)})"
    return None


def upload_changed(recorded: tuple[dict, ...], live: tuple[dict, ...], fixture: str) -> Miss | None:
    """`params changed: upload part "file" file name changed ("a.txt"→"b.txt")`: the first part that
    differs, by field name, file name, content type or content hash; None when the parts are equal."""
    for index, (before, after) in enumerate(zip(recorded, live, strict=False), start=1):
        what = _part_change(index, before, after)
        if what:
            return Miss(_line(f"params changed: {what}", fixture), MissKind.PARAMS, fixture)
    if len(recorded) == len(live):
        return None
    extra = live[len(recorded)] if len(live) > len(recorded) else recorded[len(live)]
    verb = "added" if len(live) > len(recorded) else "removed"
    what = f"params changed: upload part {quoted(extra.get('name'))} {verb}"
    return Miss(_line(what, fixture), MissKind.PARAMS, fixture)


def endpoint_changed(recorded: str, live: str, fixture: str) -> Miss:
    what = f"endpoint changed ({quoted(recorded)}→{quoted(live)})"
    return Miss(_line(what, fixture), MissKind.ENDPOINT, fixture)


def overflow(recorded_calls: int, fixture: str) -> Miss:
    what = f"the agent made more model calls than the {recorded_calls} recorded"
    return Miss(_line(what, fixture), MissKind.OVERFLOW, fixture)


def duplicate(fixture: str) -> Miss:
    return Miss(_line("the agent made an extra identical call", fixture), MissKind.DUPLICATE, fixture)


Components = dict[str, Any]


def first_difference(
    recorded: dict[str, str],
    live: dict[str, str],
    recorded_model: str | None,
    live_model: str | None,
    fixture: str,
    values: tuple[Components, Components] | None = None,
) -> Miss:
    """Name every component that differs, in the seed's order (system, messages, tools, params,
    model), each with the paths that changed in it when `values` (the recorded and the sent
    components, normalized) are at hand. The miss's component is the first that differs."""
    words: list[str] = []
    paths: list[str] = []
    for component in COMPONENTS:
        if recorded.get(component) == live.get(component):
            continue
        if component == MissKind.MODEL:
            words.append(f"model changed ({quoted(recorded_model)}→{quoted(live_model)})")
            paths.append("model")
            continue
        inside = changed_paths(component, values[0][component], values[1][component]) if values else []
        words.append(_changed_words(component, recorded, live, inside))
        paths += inside
    if not words:  # same components, different key: only the endpoint (method or path) can differ
        return Miss(_line("request changed", fixture), MissKind.ENDPOINT, fixture)
    first = next(c for c in COMPONENTS if recorded.get(c) != live.get(c))
    return Miss(_line("; ".join(words), fixture), MissKind(first), fixture, tuple(paths))


def drift(call: int, difference: Miss) -> Miss:
    """A changed request served anyway (lenient matching): `replay drift: model call 2: messages
    changed (hash a1b2c3d→e4f5a6b); served the recording`. A warning, never a miss."""
    return replace(
        difference, message=f"replay drift: model call {call}: {what_of(difference)}; served the recording"
    )


def what_of(miss: Miss) -> str:
    """What a miss found, without its `replay miss:` lead and its re-record hint."""
    return miss.message.removeprefix("replay miss: ").split("; re-record with", 1)[0]


# --- the tool channel ------------------------------------------------------------------------------


def tool_unrecorded(call: str, recorded_hash: str | None, live_hash: str, fixture: str) -> Miss:
    """`tool call unrecorded: weather.get_forecast (arguments hash a1b2c3d→e4f5a6b)`; `none` when no
    call of that tool is left to compare with."""
    before = recorded_hash[:SHORT] if recorded_hash else "none"
    what = f"tool call unrecorded: {escape(call)} (arguments hash {before}→{live_hash[:SHORT]})"
    return Miss(_line(what, fixture), MissKind.TOOL, fixture)


def tool_overflow(recorded_calls: int, fixture: str) -> Miss:
    return Miss(
        _line(f"the agent made more tool calls than the {recorded_calls} recorded", fixture),
        MissKind.TOOL,
        fixture,
    )


def tool_duplicate(fixture: str) -> Miss:
    return Miss(_line("the agent made an extra identical tool call", fixture), MissKind.TOOL, fixture)


# A miss's answer is a 400 with this header: the official SDKs retry neither.
MISS_HEADERS = (("x-should-retry", "false"),)


def miss_body(provider: str, message: str) -> dict[str, Any]:
    """The provider-shaped error body that carries a miss message to the agent."""
    return error_body(provider, 400, message)
