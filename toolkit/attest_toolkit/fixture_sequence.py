"""The agent's path through a fixture: its model and tool calls in order, and how two recordings differ.

A reviewer reads what the agent did, not the bytes it sent: which model it asked, which tools the model
asked for (with a short hash of the arguments, never the arguments), which tool servers it called. The
same steps render as a Mermaid sequence diagram (`attest fixture show --format mermaid`, the comment)
and as a list (the HTML report). Every label comes from a file a pull request controls, so labels keep
a small alphabet: nothing in them can end a Mermaid statement, a code fence or an HTML element.
"""

from __future__ import annotations

import contextlib
import difflib
import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any

from .fixture import Fixture, Interaction
from .fixture_view import sse_payloads

MODEL = "model"
# GitHub renders a diagram of at most about 50,000 characters; far fewer steps already stop being
# readable, so a longer path is cut with a note saying how many steps were left out.
MAX_STEPS = 60
LABEL_WIDTH = 48
_UNSAFE = re.compile(r"[^A-Za-z0-9 _.,()=+*@/\-→×]")
_VERSION_PREFIX = re.compile(r"^/v\d\w*/")


def label(text: str, width: int = LABEL_WIDTH) -> str:
    """`text` in the labels' alphabet: anything else becomes `_`, and a long one ends in `...`."""
    text = _UNSAFE.sub("_", " ".join(str(text).split()))
    return text if len(text) <= width else text[: width - 3] + "..."


def short_hash(value: Any) -> str:
    """Seven hex digits of the canonical JSON of `value`; a string of JSON counts as what it holds, so
    the arguments a model asks for and those the tool call sends hash alike."""
    if isinstance(value, str):
        with contextlib.suppress(ValueError):
            value = json.loads(value)
    raw = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()[:7]


@dataclass(frozen=True)
class Call:
    """A tool call a model reply asks for: the tool's name and a hash of its arguments."""

    name: str
    args: str


@dataclass(frozen=True)
class Step:
    """One call of the agent: to the model (`actor == "model"`) or to a tool server."""

    actor: str
    call: str
    args: str = ""
    asks: tuple[Call, ...] = ()
    is_call: bool = False  # a tool step that answers a model's request (not a handshake or a listing)

    @property
    def signature(self) -> tuple[str, str]:
        """What makes two steps "the same call" when two recordings are aligned."""
        return self.actor, self.call

    def text(self) -> str:
        args = f" (args {self.args})" if self.args else ""
        return f"{self.call}{args}"

    def reply(self) -> str:
        if not self.asks:
            return ""
        return "asks " + ", ".join(f"{c.name} (args {c.args})" for c in self.asks)


def sequence(doc: Fixture) -> list[Step]:
    """The fixture's calls in order: each model call, then the tool calls its reply asked for.

    The two channels are recorded separately, so a model reply that asks for N tool calls is followed
    by the tool channel's messages up to its N-th call; whatever the tool channel has left comes last.
    """
    tools = [_tool_step(item) for item in doc["channels"].get("tool") or []]
    steps: list[Step] = []
    for item in doc["channels"].get("model") or []:
        step = _model_step(item)
        steps.append(step)
        wanted = len(step.asks)
        while wanted and tools:
            taken = tools.pop(0)
            steps.append(taken)
            wanted -= taken.is_call
    return steps + tools


def _model_step(item: Interaction) -> Step:
    request = item["request"].get("json")
    model = request.get("model") if isinstance(request, dict) else None
    endpoint = _VERSION_PREFIX.sub("", item["path"])
    call = f"{endpoint} {model}" if isinstance(model, str) else f"{item['method']} {item['path']}"
    return Step(MODEL, label(call), asks=tuple(_asked(item["response"]["body"])))


def _tool_step(item: Interaction) -> Step:
    rpc = item.get("rpc")
    if rpc:
        params = (item["request"].get("json") or {}).get("params") or {}
        arguments = params.get("arguments") if isinstance(params, dict) else None
        call = f"{rpc['method']} {rpc.get('name', '')}".rstrip()
        args = short_hash(arguments) if arguments is not None else ""
        return Step(label(item["server"]), label(call), args, is_call=rpc["method"] == "tools/call")
    body = item["request"]
    call = label(f"{item.get('method', '')} {item.get('path', '')}")
    return Step(label(item["server"]), call, short_hash(body) if body else "", is_call=True)


def _asked(body: dict) -> list[Call]:
    """The tool calls a reply asks for, from chat completions, Responses and Anthropic shapes."""
    objects = [body["json"]] if "json" in body else list(sse_payloads(body["sse"])) if "sse" in body else []
    calls: list[Call] = []
    streamed: dict[Any, list[str]] = {}
    for obj in objects:
        if isinstance(obj, dict):
            calls.extend(_calls_in(obj, streamed))
    calls.extend(Call(label(name), short_hash("".join(parts))) for (_, name), parts in streamed.items())
    return calls


def _calls_in(obj: dict, streamed: dict[Any, list[str]]) -> list[Call]:
    if obj.get("type") == "response.completed" and isinstance(obj.get("response"), dict):
        obj = obj["response"]  # a Responses stream ends with the whole response, its calls included
    _anthropic_stream(obj, streamed)
    found: list[Call] = []
    for choice in obj.get("choices") or []:
        message = (choice.get("message") or choice.get("delta") or {}) if isinstance(choice, dict) else {}
        for call in message.get("tool_calls") or []:
            function = call.get("function") or {}
            if "delta" in choice:  # a streamed call: its name comes once, its arguments in pieces
                key = (choice.get("index"), call.get("index"))
                name = function.get("name")
                if name:
                    streamed[(key, label(name))] = [function.get("arguments") or ""]
                else:
                    for (k, _), parts in streamed.items():
                        if k == key:
                            parts.append(function.get("arguments") or "")
            elif function.get("name"):
                found.append(Call(label(function["name"]), short_hash(function.get("arguments") or "")))
    for item in obj.get("output") or [] if obj.get("object") == "response" else []:
        if isinstance(item, dict) and item.get("type") == "function_call" and item.get("name"):
            found.append(Call(label(item["name"]), short_hash(item.get("arguments") or "")))
    blocks = obj.get("content") if obj.get("type") == "message" else None
    for block in blocks or []:
        if isinstance(block, dict) and block.get("type") == "tool_use" and block.get("name"):
            found.append(Call(label(block["name"]), short_hash(block.get("input"))))
    return found


def _anthropic_stream(obj: dict, streamed: dict[Any, list[str]]) -> None:
    """A streamed `tool_use` block: its name at the block's start, its input in JSON pieces."""
    key = ("block", obj.get("index"))
    block = obj.get("content_block") or {}
    if obj.get("type") == "content_block_start" and block.get("type") == "tool_use" and block.get("name"):
        streamed[(key, label(block["name"]))] = []
    delta = obj.get("delta") or {}
    if obj.get("type") == "content_block_delta" and delta.get("type") == "input_json_delta":
        for (k, _), parts in streamed.items():
            if k == key:
                parts.append(delta.get("partial_json") or "")


@dataclass(frozen=True)
class Marked:
    """A step of the head recording (or a dropped one of the base) and what happened to it."""

    step: Step
    change: str  # same | added | dropped | changed
    note: str = ""

    def as_json(self) -> dict[str, Any]:
        step = self.step
        asks = [{"name": c.name, "args": c.args} for c in step.asks]
        return {"actor": step.actor, "call": step.call, "args": step.args, "asks": asks,
                "change": self.change, "note": self.note}  # fmt: skip

    @classmethod
    def of_json(cls, row: dict[str, Any]) -> Marked:
        """A row of `as_json`, labels cleaned again: a report is input too."""
        asks = tuple(Call(label(a["name"]), label(a["args"])) for a in row.get("asks") or [])
        step = Step(label(row["actor"]), label(row["call"]), label(row.get("args") or ""), asks)
        return cls(step, label(row["change"]), label(row.get("note") or "", 2 * LABEL_WIDTH))


def compare(base: list[Step], head: list[Step]) -> list[Marked]:
    """The head's path with each step marked against the base: added, dropped, or changed arguments."""
    matcher = difflib.SequenceMatcher(
        a=[s.signature for s in base], b=[s.signature for s in head], autojunk=False
    )
    marked: list[Marked] = []
    for tag, a0, a1, b0, b1 in matcher.get_opcodes():
        if tag == "equal":
            marked.extend(
                _paired(base[a], head[b]) for a, b in zip(range(a0, a1), range(b0, b1), strict=True)
            )
            continue
        marked.extend(Marked(base[a], "dropped") for a in range(a0, a1))
        marked.extend(Marked(head[b], "added") for b in range(b0, b1))
    return marked


def _paired(old: Step, new: Step) -> Marked:
    notes = []
    if old.args != new.args:
        notes.append(f"args {old.args or 'none'}→{new.args or 'none'}")
    if old.asks != new.asks:
        notes.append(f"reply asks {_names(old.asks)}→{_names(new.asks)}")
    return Marked(new, "changed", "; ".join(notes)) if notes else Marked(new, "same")


def _names(calls: tuple[Call, ...]) -> str:
    return "+".join(c.name for c in calls) or "nothing"


def mermaid(marked: list[Marked], max_steps: int = MAX_STEPS) -> str:
    """A `sequenceDiagram` of the path; changed, added and dropped steps carry a note. Every label
    is cleaned here too, whoever built the steps."""
    actors = list(dict.fromkeys(m.step.actor for m in marked if m.step.actor != MODEL))
    ids = {MODEL: "M", **{actor: f"T{n}" for n, actor in enumerate(actors, start=1)}}
    lines = ["sequenceDiagram", "  participant A as agent", "  participant M as model"]
    lines += [f"  participant {ids[a]} as {label(a)}" for a in actors]
    for item in marked[:max_steps]:
        lines.extend(_arrows(item, ids[item.step.actor]))
    if len(marked) > max_steps:
        lines.append(f"  Note over A: {len(marked) - max_steps} more steps not drawn")
    return "\n".join(lines)


def _arrows(item: Marked, target: str) -> list[str]:
    step = item.step
    arrow = "-x" if item.change == "dropped" else "->>"
    lines = [f"  A{arrow}{target}: {label(step.text(), 2 * LABEL_WIDTH)}"]
    if step.reply() and item.change != "dropped":
        lines.append(f"  {target}-->>A: {label(step.reply(), 2 * LABEL_WIDTH)}")
    if item.change != "same":
        note = item.change + (f" ({item.note})" if item.note else "")
        lines.append(f"  Note over A,{target}: {label(note, 2 * LABEL_WIDTH)}")
    return lines


def diagram(doc: Fixture) -> str:
    """One fixture's path as a Mermaid diagram (`attest fixture show --format mermaid`)."""
    return mermaid([Marked(step, "same") for step in sequence(doc)])


def recorded_path(doc: Fixture) -> list[dict[str, Any]]:
    """The fixture's calls as rows of `Marked.as_json`, none marked."""
    return [Marked(step, "same").as_json() for step in sequence(doc)]


def missed_at(rows: list[dict[str, Any]], replayed: int, component: str) -> list[Marked]:
    """The recorded path with the model call after the `replayed` ones marked as the one that missed."""
    marked, model_calls = [], 0
    for row in rows:
        item = Marked.of_json(row)
        if item.step.actor == MODEL:
            model_calls += 1
            if model_calls == replayed + 1:
                item = Marked(item.step, "missed", label(f"{component} changed" if component else ""))
        marked.append(item)
    return marked


def changed_path(base_doc: Fixture | None, head_doc: Fixture | None) -> list[dict[str, Any]]:
    """The head's path marked against the base's (an added fixture: every step added), as rows of
    `Marked.as_json` for reports; `mermaid` and the HTML page draw them."""
    base = sequence(base_doc) if base_doc else []
    head = sequence(head_doc) if head_doc else []
    return [m.as_json() for m in compare(base, head)]
