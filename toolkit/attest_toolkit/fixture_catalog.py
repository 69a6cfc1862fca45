"""`attest fixture list`: every fixture of a directory with its age, calls, models, tools, size and source.

Recordings age while providers move: the age says when a fixture was last recorded, and the models say
which model answered, with the concrete model behind an alias (`gpt-4o → gpt-4o-2024-08-06`), so a
reviewer sees what a replay is standing in for.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from . import fixture as fx
from .errors import AttestError
from .fixture_sequence import label, sequence
from .fixture_view import clip, sse_payloads


@dataclass(frozen=True)
class Entry:
    name: str
    path: str
    recorded_at: str | None
    age_days: int | None
    model_calls: int
    tool_calls: int
    models: list[str]
    tools: list[str]
    size: int
    source: str

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


def catalog(directory: Path, now: datetime | None = None) -> tuple[list[Entry], list[str]]:
    """The fixtures under `directory`, sorted by name, and one error line per file that could not be read."""
    entries: list[Entry] = []
    errors: list[str] = []
    for path in sorted(directory.glob(f"*{fx.SUFFIX}")):
        try:
            entries.append(entry(fx.read_fixture(path), path, now))
        except AttestError as exc:
            errors.append(str(exc))
    return entries, errors


def entry(doc: fx.Fixture, path: Path, now: datetime | None = None) -> Entry:
    source = doc.get("source") or {}
    steps = sequence(doc)
    return Entry(
        name=doc["name"],
        path=str(path),
        recorded_at=source.get("recorded_at"),
        age_days=age_days(source.get("recorded_at"), now),
        model_calls=len(doc["channels"].get("model") or []),
        tool_calls=len(doc["channels"].get("tool") or []),
        models=models(doc),
        tools=sorted({c.name for s in steps for c in s.asks}),
        size=path.stat().st_size,
        source=source_words(source),
    )


def age_days(recorded_at: str | None, now: datetime | None = None) -> int | None:
    """Whole days since `recorded_at` (an ISO time), or None when it is missing or unreadable."""
    if not recorded_at or not isinstance(recorded_at, str):
        return None
    try:
        stamp = datetime.fromisoformat(recorded_at.replace("Z", "+00:00"))
    except ValueError:
        return None
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=timezone.utc)
    return max(0, ((now or datetime.now(timezone.utc)) - stamp).days)


def models(doc: fx.Fixture) -> list[str]:
    """Each model asked for, with the one that answered when it differs: `gpt-4o → gpt-4o-2024-08-06`."""
    seen: dict[str, None] = {}
    for item in doc["channels"].get("model") or []:
        request = item["request"].get("json")
        asked = request.get("model") if isinstance(request, dict) else None
        answered = answered_model(item["response"]["body"])
        if not isinstance(asked, str) and not answered:
            continue
        shown = label(str(asked or answered), 80)
        if answered and asked and answered != asked:
            shown = f"{shown} → {label(answered, 80)}"
        seen[shown] = None
    return list(seen)


def answered_model(body: dict) -> str | None:
    """The model a reply names: chat completions and Anthropic at the top, Responses under
    `response`, and Anthropic's stream under `message`."""
    objects = [body["json"]] if "json" in body else list(sse_payloads(body["sse"])) if "sse" in body else []
    for obj in objects:
        if not isinstance(obj, dict):
            continue
        for holder in (obj, obj.get("response"), obj.get("message")):
            if isinstance(holder, dict) and isinstance(holder.get("model"), str):
                return holder["model"]
    return None


def source_words(source: dict) -> str:
    """Where the fixture came from, control characters escaped (a fixture is a file anyone can edit)."""
    if source.get("imported_from"):
        return clip(f"imported from {source['imported_from']}", 120)
    if source.get("test"):
        return clip(f"test {source['test']}", 120)
    return clip(" ".join(source.get("command") or []), 120)


def table(entries: list[Entry]) -> str:
    """Aligned columns for a terminal; a fixture's models and tools are joined with commas."""
    header = ("NAME", "AGE", "CALLS", "MODELS", "TOOLS", "SIZE", "SOURCE")
    rows = [header] + [
        (
            e.name,
            "?" if e.age_days is None else f"{e.age_days}d",
            f"{e.model_calls}+{e.tool_calls}" if e.tool_calls else str(e.model_calls),
            ", ".join(e.models) or "-",
            ", ".join(e.tools) or "-",
            _size(e.size),
            e.source,
        )
        for e in entries
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header) - 1)]
    lines = [
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=False)) + "  " + row[-1] for row in rows
    ]
    return "\n".join(line.rstrip() for line in lines) if entries else "no fixtures"


def _size(size: int) -> str:
    return (
        f"{size} B"
        if size < 1024
        else f"{size / 1024:.1f} KiB"
        if size < 1024**2
        else f"{size / 1024**2:.1f} MiB"
    )


def as_json(entries: list[Entry]) -> str:
    return json.dumps([e.as_json() for e in entries], indent=2, ensure_ascii=False)
