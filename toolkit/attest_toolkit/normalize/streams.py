"""Streamed text as a reader sees it: SSE deltas joined per content stream, then scanned for secrets.

A model can stream a key back in pieces ("sk-p", "roj-…" across events, in text or in tool-call
arguments), and no single event holds it. Each event's JSON strings are grouped into streams by where
they sit (the same field of the same choice, content block or output item: list positions and the
`index`-like fields identify it), joined in order, and scanned. A secret found across pieces is redacted
in every piece it touches: the first gets `{{redacted}}`, the others lose their part, so the joined
text reads `{{redacted}}` and each changed event is written back as valid SSE.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..credentials.scan import REDACTED, Secrets

# Fields that name a stream rather than carry its text (`choices[].index`, Anthropic's block `index`,
# the Responses API's `output_index`/`content_index`/`item_id`).
_STREAM_IDS = ("index", "output_index", "content_index", "item_id")
# Fields repeated unchanged in every event: joining them finds nothing and costs time.
_NOT_TEXT = frozenset({"id", "object", "model", "type", "created", "role", "finish_reason", "stop_reason"})
_DATA = re.compile(r"^data:[ ]?(.*?)(\r\n|\r|\n|$)", re.MULTILINE)


@dataclass
class _Piece:
    event: int
    path: tuple[Any, ...]  # where the string sits in the event's JSON
    text: str


@dataclass
class _Event:
    text: str
    data: re.Match[str]
    value: Any


def _parse(text: str) -> _Event | None:
    matches = list(_DATA.finditer(text))
    if len(matches) != 1:  # no data, or a multi-line data field: no provider streams JSON like that
        return None
    try:
        value = json.loads(matches[0][1])
    except ValueError:
        return None
    return _Event(text, matches[0], value) if isinstance(value, (dict, list)) else None


def _leaves(node: Any, path: tuple[Any, ...], stream: tuple[Any, ...]) -> Iterator[tuple[tuple, tuple, str]]:
    """(path in the event, stream identity, text) of every string in `node`."""
    if isinstance(node, dict):
        ids = tuple((k, node[k]) for k in _STREAM_IDS if isinstance(node.get(k), (int, str)))
        for key, value in node.items():
            if isinstance(value, str):
                if key not in _NOT_TEXT and key not in _STREAM_IDS:
                    yield (*path, key), (*stream, *ids, key), value
            else:
                yield from _leaves(value, (*path, key), (*stream, *ids, key))
    elif isinstance(node, list):
        for i, item in enumerate(node):
            own = isinstance(item, dict) and any(k in item for k in _STREAM_IDS)
            yield from _leaves(item, (*path, i), stream if own else (*stream, i))


def _streams(events: list[_Event | None]) -> dict[tuple, list[_Piece]]:
    streams: dict[tuple, list[_Piece]] = {}
    for number, event in enumerate(events):
        if event is not None:
            for path, stream, text in _leaves(event.value, (), ()):
                streams.setdefault(stream, []).append(_Piece(number, path, text))
    return streams


def _split_spans(pieces: list[_Piece], secrets: Secrets) -> Iterator[tuple[_Piece, int, int, int, str]]:
    """(piece, offset of the piece, span start, span end, label) for each piece a secret touches."""
    joined = "".join(piece.text for piece in pieces)
    spans = secrets.spans(joined)
    if not spans:
        return
    offset = 0
    for piece in pieces:
        end_of_piece = offset + len(piece.text)
        for start, end, label in spans:
            if start < end_of_piece and end > offset:
                yield piece, offset, start, end, label
        offset = end_of_piece


def find_streamed_secret(sse: list[str], secrets: Secrets) -> tuple[int, str] | None:
    """(index of the event where it starts, kind) of a secret in the joined streams, or None."""
    events = [_parse(text) for text in sse]
    for pieces in _streams(events).values():
        for piece, _offset, _start, _end, label in _split_spans(pieces, secrets):
            return piece.event, f"{label} in the streamed text"  # the first piece is where it starts
    return None


def redact_streamed_secrets(sse: list[str], secrets: Secrets) -> list[str]:
    """The events with every secret in the joined streams redacted in each event it touches."""
    events = [_parse(text) for text in sse]
    changed: dict[int, _Event] = {}
    for pieces in _streams(events).values():
        cuts: dict[int, list[tuple[int, int, bool]]] = {}
        for piece, offset, start, end, _ in _split_spans(pieces, secrets):
            local = (
                max(start, offset) - offset,
                min(end, offset + len(piece.text)) - offset,
                start >= offset,  # the piece where the secret starts gets the placeholder
            )
            cuts.setdefault(id(piece), []).append(local)
        for piece in pieces:
            event = events[piece.event]
            if id(piece) not in cuts or event is None:
                continue
            for cut_start, cut_end, first in sorted(cuts[id(piece)], reverse=True):
                piece.text = piece.text[:cut_start] + (REDACTED if first else "") + piece.text[cut_end:]
            _set(event.value, piece.path, piece.text)
            changed[piece.event] = event
    return [_rewrite(changed[i]) if i in changed else text for i, text in enumerate(sse)]


def _set(node: Any, path: tuple[Any, ...], text: str) -> None:
    for step in path[:-1]:
        node = node[step]
    node[path[-1]] = text


def _rewrite(event: _Event) -> str:
    data = json.dumps(event.value, ensure_ascii=False, separators=(",", ":"))
    m = event.data
    return event.text[: m.start(1)] + data + event.text[m.end(1) :]
