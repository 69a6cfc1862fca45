"""Prices live calls from the built-in table (`data/prices.json`, with its date and sources)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from ..normalize import eventstream
from ..normalize.sse import split_sse
from ..providers import PRICED_AS, USAGE_FIELDS
from .table import table, table_date

# Dated snapshots price as their family: gpt-4o-2024-08-06, claude-sonnet-4-5-20250929, *-latest.
_SUFFIX = re.compile(r"(-\d{4}-\d{2}-\d{2}|-\d{8}|-latest)$")
# The output tokens a call is priced up to when it sets no cap and its model's entry has no
# `max_output`: the most any model in the table answers with (gpt-5, claude-3-7-sonnet with its
# beta header), so an estimate with it is never below what the call can cost.
DEFAULT_MAX_OUTPUT = 128_000


@dataclass(frozen=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0


def price_of(model: str | None) -> dict[str, float] | None:
    if not model:
        return None
    models = table()["models"]
    name = model.lower().split("/")[-1]
    name = next((n for shape in PRICED_AS if (n := shape(name)) is not None), name)
    return models.get(name) or models.get(_SUFFIX.sub("", name))


def cost_usd(model: str | None, usage: Usage | None) -> float | None:
    """The cost of one call, or None when the model is not in the table or usage is unknown."""
    price = price_of(model)
    if price is None or usage is None:
        return None
    return (usage.input_tokens * price["input"] + usage.output_tokens * price["output"]) / 1_000_000


def estimate_usd(model: str | None, request_bytes: int, output_cap: int | None) -> float | None:
    """The most a call can cost before its answer says: every byte of its request body a prompt token
    (a text token is at least one byte; an image or file the request only links to is not counted),
    and as many output tokens as its cap allows, or its model's `max_output`. None when unpriced."""
    price = price_of(model)
    if price is None:
        return None
    output = output_cap if output_cap is not None else int(price.get("max_output", DEFAULT_MAX_OUTPUT))
    return cost_usd(model, Usage(request_bytes, output))


def _first(counts: dict, keys: tuple[str, ...]) -> int:
    return int(next((counts[k] or 0 for k in keys if k in counts), 0))


def _usage_from(obj: dict) -> Usage | None:
    """The usage an object reports, in any provider's fields (see `providers.USAGE_FIELDS`)."""
    for container, fields in USAGE_FIELDS.items():
        usage = obj.get(container)
        if isinstance(usage, dict):
            cached = sum(int(usage.get(k, 0) or 0) for k in fields.cached)
            also = sum(int(usage.get(k, 0) or 0) for k in fields.also_output)
            return Usage(_first(usage, fields.input) + cached, _first(usage, fields.output) + also)
    return None


def usage_of_json(body: Any) -> Usage | None:
    return _usage_from(body) if isinstance(body, dict) else None


def usage_of_sse(events: list[dict]) -> Usage | None:
    """Usage from a stream: OpenAI's final usage chunk, Responses' response.completed, Anthropic's
    message_start (input) plus message_delta (output), ConverseStream's metadata event."""
    found: Usage | None = None
    for event in events:
        for candidate in (event, event.get("response"), event.get("message")):
            if not isinstance(candidate, dict):
                continue
            usage = _usage_from(candidate)
            if usage is None:
                continue
            found = Usage(
                max(usage.input_tokens, found.input_tokens if found else 0),
                max(usage.output_tokens, found.output_tokens if found else 0),
            )
    return found


def usage_of(body: bytes, content_type: str) -> Usage | None:
    """The token usage an answer reports, from its JSON body or its stream's events."""
    try:
        if eventstream.MEDIA_TYPE in content_type:
            return usage_of_sse(eventstream.payload_objects(eventstream.split_frames(body) or []))
        if "event-stream" in content_type:
            events = []
            for event in split_sse(body.decode("utf-8", "replace")):
                for line in event.splitlines():
                    if line.startswith("data:") and line[5:].strip() not in ("", "[DONE]"):
                        events.append(json.loads(line[5:]))
            return usage_of_sse(events)
        return usage_of_json(json.loads(body))
    except (ValueError, UnicodeDecodeError):
        return None


def price_note() -> str:
    """Which price table priced the live calls, said whenever there were some: its date, which says how
    old the prices are (the pages they were read from are listed in the table and the docs)."""
    return f"attest replay: live calls priced from the built-in table of {table_date()}"
