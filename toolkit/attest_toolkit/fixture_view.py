"""A readable summary of a fixture: where it came from and, per interaction, what was asked and answered.

`attest fixture show` prints it. The gist of a reply is read from the provider's own shapes (chat
completions, responses, Anthropic messages, their streams, embeddings, errors); anything else is
described by its body kind only.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from . import fixture as fx
from .engine.diagnose import escape
from .normalize import eventstream
from .providers import PROVIDERS, model_of

GIST_WIDTH = 72


def clip(text: str, width: int = GIST_WIDTH) -> str:
    text = escape(text)
    return text if len(text) <= width else text[: width - 1] + "…"


def sse_payloads(events: list[str]) -> Iterator[Any]:
    """The JSON `data:` payload of each event (non-JSON data such as `[DONE]` is skipped)."""
    for event in events:
        data = "\n".join(
            line[5:].removeprefix(" ") for line in event.splitlines() if line.startswith("data:")
        )
        try:
            yield json.loads(data)
        except ValueError:
            continue


class Gist:
    """Text and tool calls collected from the objects of one reply."""

    def __init__(self) -> None:
        self.text: list[str] = []
        self.tools: list[str] = []
        self.other: str | None = None

    def add(self, obj: Any) -> None:
        if not isinstance(obj, dict):
            return
        if isinstance(obj.get("error"), dict):
            error = obj["error"]
            self.other = (
                f"error {error.get('type') or error.get('code') or ''}: {error.get('message', '')}".strip()
            )
            return
        for handler in (self._chat, self._responses, self._anthropic, self._misc, self._registered):
            if handler(obj):
                return

    def _registered(self, obj: dict) -> bool:
        """A reply in the shape of a provider whose module reads it (`Provider.reply_parts`)."""
        for provider in PROVIDERS.values():
            found = provider.reply_parts(obj) if provider.reply_parts else None
            if found is not None:
                self.text.extend(found[0])
                self.tools.extend(found[1])
                return True
        return False

    def _chat(self, obj: dict) -> bool:
        if not isinstance(obj.get("choices"), list):
            return False
        for choice in obj["choices"]:
            message = (choice.get("message") or choice.get("delta") or {}) if isinstance(choice, dict) else {}
            if isinstance(message.get("content"), str):
                self.text.append(message["content"])
            for call in message.get("tool_calls") or []:
                name = (call.get("function") or {}).get("name")
                if name:
                    self.tools.append(name)
        return True

    def _responses(self, obj: dict) -> bool:
        kind = obj.get("type", "")
        if kind == "response.output_text.delta":
            self.text.append(str(obj.get("delta", "")))
        elif kind == "response.output_item.added":
            self._output_item(obj.get("item") or {}, text=False)
        elif obj.get("object") == "response" and isinstance(obj.get("output"), list):
            for item in obj["output"]:
                self._output_item(item, text=True)
        else:
            return isinstance(kind, str) and kind.startswith("response.")
        return True

    def _output_item(self, item: dict, text: bool) -> None:
        if item.get("type") == "function_call" and item.get("name"):
            self.tools.append(item["name"])
        elif text and item.get("type") == "message":
            self.text.extend(
                part.get("text", "") for part in item.get("content") or [] if isinstance(part, dict)
            )

    def _anthropic(self, obj: dict) -> bool:
        kind = obj.get("type")
        if kind == "message" and isinstance(obj.get("content"), list):
            for block in obj["content"]:
                self._block(block)
        elif kind == "content_block_start":
            self._block(obj.get("content_block") or {})
        elif kind == "content_block_delta":
            delta = obj.get("delta") or {}
            if delta.get("type") == "text_delta":
                self.text.append(delta.get("text", ""))
        else:
            return kind in ("message_start", "message_delta", "message_stop", "content_block_stop", "ping")
        return True

    def _block(self, block: dict) -> None:
        if block.get("type") == "text":
            self.text.append(block.get("text", ""))
        elif block.get("type") in ("tool_use", "server_tool_use") and block.get("name"):
            self.tools.append(block["name"])

    def _misc(self, obj: dict) -> bool:
        if obj.get("object") == "list" and isinstance(obj.get("data"), list):
            first = obj["data"][0] if obj["data"] and isinstance(obj["data"][0], dict) else {}
            self.other = f"{len(obj['data'])} {first.get('object') or 'item'}(s)"
        elif isinstance(obj.get("input_tokens"), int) and len(obj) == 1:
            self.other = f"input_tokens {obj['input_tokens']}"
        else:
            return False
        return True

    def line(self) -> str:
        parts = []
        if self.tools:
            counts = Counter(self.tools)
            parts.append("tool calls: " + ", ".join(n if c == 1 else f"{n} ×{c}" for n, c in counts.items()))
        text = "".join(self.text)
        if text:
            parts.append(json.dumps(text, ensure_ascii=False))
        if self.other:
            parts.append(self.other)
        return clip(" · ".join(parts)) if parts else ""


def body_kind(body: dict) -> str:
    for stream in ("sse", "eventstream"):
        if stream in body:
            return f"{stream} ({len(body[stream])} events)"
    return next(iter(body), "empty")


def reply_gist(body: dict) -> str:
    gist = Gist()
    if "json" in body:
        gist.add(body["json"])
    elif "sse" in body:
        for payload in sse_payloads(body["sse"]):
            gist.add(payload)
    elif "eventstream" in body:
        for payload in eventstream.payload_objects(body["eventstream"]):
            gist.add(payload)
    elif "text" in body:
        return clip(body["text"])
    return gist.line()


def interaction_line(number: int, item: fx.Interaction) -> str:
    model = model_of(item["path"], item["request"].get("json"))
    endpoint = item["path"] + (f"?{item['query']}" if item.get("query") else "")
    response = item["response"]
    head = f"{number:>3}. {item['provider']:<9} {item['method']} {endpoint}"
    if isinstance(model, str):
        head += f"  model {escape(model)}"
    gist = reply_gist(response["body"])
    tail = f"      → {response['status']} {body_kind(response['body'])}" + (f"  {gist}" if gist else "")
    return f"{head}\n{tail}"


def tool_line(number: int, item: fx.Interaction, servers: dict) -> str:
    """`1. weather (WEATHER_MCP_URL)  tools/call get_forecast → 200 json`."""
    decl = servers.get(item["server"]) or {}
    via = (
        f" ({decl['env']})" if decl.get("env") else f" ({decl['transport']})" if decl.get("transport") else ""
    )
    rpc = item.get("rpc")
    call = (
        f"{rpc['method']} {rpc.get('name', '')}".rstrip()
        if rpc
        else f"{item.get('method')} {item.get('path')}"
    )
    response = item["response"]
    reply = f"{response['status']} {body_kind(response['body'])}"
    return f"{number:>3}. {escape(item['server'])}{via}  {escape(call)}  → {reply}"


def describe(doc: fx.Fixture, path: str | Path) -> str:
    """The text `attest fixture show` prints."""
    source = doc.get("source", {})
    lines = [f"fixture {doc['name']}  ({path})", f"digest  {doc['digest']}"]
    if source.get("imported_from"):
        lines.append(f"source  imported from {escape(source['imported_from'])}")
    elif source.get("command") is not None:
        flags = " (--expect-fail)" if (source.get("flags") or {}).get("expect_fail") else ""
        lines.append(f"source  {escape(' '.join(source['command']))}{flags}")
    stamp = [source.get("recorded_at"), source.get("toolkit_version")]
    if any(stamp):
        lines.append(f"        recorded {stamp[0] or '?'} with attest-toolkit {stamp[1] or '?'}")
    for channel, items in doc["channels"].items():
        lines.append(f"{channel}: {len(items)} interaction(s)")
        if channel == "model":
            lines.extend(interaction_line(n, item) for n, item in enumerate(items, start=1))
        elif channel == "tool":
            lines.extend(tool_line(n, item, doc.get("tools", {})) for n, item in enumerate(items, start=1))
    return "\n".join(lines)
