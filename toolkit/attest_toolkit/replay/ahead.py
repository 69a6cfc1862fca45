"""Sessions a runner opens without a control line: a test pays one line (its close), not two.

A runner whose tests open the same fixtures, mode and guard over and over asks, with the first such
open, for the right to open more of them itself. The engine answers with a prefix and a key (both
drawn here, both sent only over the runner's private pipe): the runner then makes each session's id
as `prefix + nonce + tag`, the tag the first 16 hex digits of HMAC-SHA256(key, nonce), and tells the
test its variables at once. The engine opens that session, with the first open's arguments, on the
first call that names the id (or at its close, if the test made no call). A process that saw a
session's URL (the agent, anything it started) can use that session while it is open, as with any
session, but cannot make another id: it has no key. An id is opened once: after its close it is
refused, like any unknown session.

A session opened this way loads its fixtures when it opens, as any session does; if a fixture was
rewritten since the first open and now hands out other variables than the test was told, its close
says so (`rewritten`) and the runner opens the next one with a control line again.
"""

from __future__ import annotations

import hashlib
import hmac
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from .loaded import without_id

PREFIX_HEX = 16
NONCE_HEX = 16
TAG_HEX = 16
ID_HEX = PREFIX_HEX + NONCE_HEX + TAG_HEX


def tag(key: bytes, nonce: str) -> str:
    return hmac.new(key, nonce.encode("ascii"), hashlib.sha256).hexdigest()[:TAG_HEX]


@dataclass
class Template:
    """What the first open was asked, and the variables its sessions hand out (the id left out)."""

    arguments: dict[str, Any]
    key: bytes
    env: dict[str, str]
    opened: set[str] = field(default_factory=set)  # every id opened so far: none is opened twice
    # The runner answers these sessions' hits from the first open's hit table (replay.hits): what
    # tells it of each recording taken here, by session.
    teller: Callable[[str], Callable[[int], None]] | None = None


class Aheads:
    """The templates of one engine, by prefix (touched only from the engine's loop thread)."""

    def __init__(self) -> None:
        self.templates: dict[str, Template] = {}

    def offer(
        self,
        arguments: dict[str, Any],
        sid: str,
        env: dict[str, str],
        teller: Callable[[str], Callable[[int], None]] | None = None,
    ) -> dict[str, str] | None:
        """A template for the sessions like `sid`: its prefix and key for the runner; None when the
        variables cannot be templated (the id shows outside a URL). `teller`: see Template."""
        kept = without_id(env, sid)
        if kept is None:
            return None
        prefix, key = os.urandom(PREFIX_HEX // 2).hex(), os.urandom(32)
        self.templates[prefix] = Template(arguments, key, kept, teller=teller)
        return {"prefix": prefix, "key": key.hex()}

    def claim(self, sid: str) -> Template | None:
        """The template of an id the runner made and nobody opened yet; else None."""
        template = self.templates.get(sid[:PREFIX_HEX]) if len(sid) == ID_HEX else None
        if template is None or sid in template.opened:
            return None
        nonce, given = sid[PREFIX_HEX : PREFIX_HEX + NONCE_HEX], sid[PREFIX_HEX + NONCE_HEX :]
        return template if hmac.compare_digest(tag(template.key, nonce), given) else None

    def open(
        self, sid: str, opener: Callable[..., tuple[str, dict[str, str]]]
    ) -> Template | Literal[False] | None:
        """Open session `sid` from its template with `opener` (ReplayApp.open): None when `sid` is
        not a template's; else its template when it hands out the variables the runner was told
        (False: its fixture was rewritten, and the template is dropped)."""
        template = self.claim(sid)
        if template is None:
            return None
        _, env = opener(**template.arguments, sid=sid)  # an open that fails is tried again at the close
        template.opened.add(sid)
        if without_id(env, sid) == template.env:
            return template
        self.templates.pop(sid[:PREFIX_HEX], None)
        return False
