"""The last miss of each fixture, kept on the developer's machine to be read side by side.

On a miss outside CI the engine keeps the recording it compared the request with and the request as
sent (redacted and templated as capture would, so no secret is written) in
`<fixtures dir>/.last-miss/<name>.json`, a directory that tells git to ignore it. `pytest
--attest-diff` and `attest fixture diff NAME --last-miss` print the two side by side. With CI set
nothing is kept and nothing is shown: a CI log is read by more people than the developer.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..credentials.scan import Secrets
from ..errors import AttestError, UsageError, read_text
from ..fixtures.document import atomic_write, scan
from ..normalize import Exchange, Templater
from .modes import in_ci

DIRNAME = ".last-miss"
MARKS = {"equal": " ", "replace": "|", "delete": "<", "insert": ">"}


def path_for(fixture_path: Path) -> Path:
    return fixture_path.parent / DIRNAME / (fixture_path.name.removesuffix(".attest.json") + ".json")


def sent_request(provider: str, method: str, path: str, query: str, body: bytes, secrets: Secrets) -> dict:
    """The sent request as a fixture would hold it: secrets redacted, volatile values templated."""
    exchange = Exchange(method, path, query, body, 200, [], b"")
    recorded = Templater(secrets).record(exchange, provider)
    return {k: recorded[k] for k in ("method", "path", "query", "request") if k in recorded}


def keep(fixture_path: Path, call: int, recorded: dict, sent: dict, message: str, secrets: Secrets) -> None:
    """Write the miss for a later look; a failure to write is no reason to fail the replay."""
    doc = {"fixture": fixture_path.name, "call": call, "message": message, "recorded": recorded, "sent": sent}
    target = path_for(fixture_path)
    try:
        scan(doc, target, secrets, "keep")  # the same scan a fixture write runs: a hit keeps nothing
        target.parent.mkdir(exist_ok=True)
        ignore = target.parent / ".gitignore"
        if not ignore.exists():
            atomic_write(ignore, "# attest's last replay misses, for `attest fixture diff --last-miss`\n*\n")
        atomic_write(target, json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
    except (OSError, AttestError):
        return


def load(fixture_path: Path) -> dict[str, Any]:
    """The kept miss of a fixture, or a one-line error naming the file."""
    target = path_for(fixture_path)
    missing = "no miss kept for this fixture (a replay miss outside CI keeps one)"
    text = read_text(target, UsageError, "kept miss", missing)
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"not a kept miss: {exc.msg} at line {exc.lineno}", target) from None
    if not isinstance(doc, dict) or not all(isinstance(doc.get(k), dict) for k in ("recorded", "sent")):
        raise UsageError("not a kept miss (its recorded or sent request is missing)", target)
    return doc


def _lines(request: dict) -> list[str]:
    """The request as a reader compares it: its endpoint, then its body pretty-printed."""
    body = request.get("request") or {}
    shown = body.get("json", body)
    head = f"{request.get('method', '?')} {request.get('path', '?')}"
    if request.get("query"):
        head += f"?{request['query']}"
    return [head, *json.dumps(shown, indent=2, ensure_ascii=False).splitlines()]


def _cell(text: str, width: int) -> str:
    text = "".join(ch if ch.isprintable() else "?" for ch in text)
    return text if len(text) <= width else text[: width - 1] + "…"


def side_by_side(left: list[str], right: list[str], width: int) -> list[str]:
    """Two columns (recorded | sent) with sdiff's marks between them: `|` changed, `<` only recorded,
    `>` only sent."""
    import difflib  # here: the engine imports this module for `in_ci` and needs no diff to start

    column = max(20, (width - 3) // 2)
    rows = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, left, right, autojunk=False).get_opcodes():
        for k in range(max(i2 - i1, j2 - j1)):
            a = left[i1 + k] if i1 + k < i2 else ""
            b = right[j1 + k] if j1 + k < j2 else ""
            mark = MARKS[tag] if tag != "replace" else ("|" if a and b else "<" if a else ">")
            rows.append(f"{_cell(a, column):<{column}} {mark} {_cell(b, column)}".rstrip())
    return rows


def render(doc: dict[str, Any], width: int | None = None) -> str:
    width = width or shutil.get_terminal_size((160, 24)).columns
    column = max(20, (width - 3) // 2)
    head = f"{_cell('recorded', column):<{column}}   sent"
    title = f"{doc.get('fixture', '?')}, model call {doc.get('call', '?')}: {doc.get('message', '')}"
    body = side_by_side(_lines(doc["recorded"]), _lines(doc["sent"]), width)
    return "\n".join([_cell(title, width), head, *body])


def shown(fixture_path: Path, env: Mapping[str, str] = os.environ) -> str:
    """The fixture's last miss side by side, for the developer's terminal only."""
    if in_ci(env):
        raise UsageError("attest fixture diff: not shown with CI set (a CI log is shared); run it locally")
    return render(load(fixture_path))
