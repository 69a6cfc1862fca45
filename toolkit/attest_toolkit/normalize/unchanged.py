"""Whether normalizing a JSON value would leave it as it is, told from its canonical text alone.

Keying a request normalizes each component (secrets redacted, volatile values renumbered, Claude
Code's run-specific lines neutralized, secret-named keys' values replaced) and hashes its canonical
JSON text. The walk that rebuilds the value costs per JSON node, and most components change in no
node; this module answers "nothing would change" from the text the hash is taken over anyway, with a
few scans of that text, so keying costs per byte, not per node, whatever the provider's nesting.

Every check answers "maybe" whenever it cannot be sure; the caller then walks the value as before.
"""

from __future__ import annotations

import json
import re
from collections.abc import Container, Mapping
from itertools import chain, compress, repeat
from operator import not_

from ..credentials.names import is_secret_key
from ..credentials.scan import Secrets
from .claude_code import might_change
from .volatile import has_volatile

_MAY_HOLD_TEXT = ('"', "[", "{")  # how a JSON text with a string in it starts: not null, a number

# A JSON string literal, and whether it is a key (a `:` follows it: canonical text has no spaces). Each
# match consumes a whole literal, so the scan never starts inside one.
_LITERAL = re.compile(r'"((?:[^"\\]|\\.)*)"(:?)')


def strings(text: str) -> tuple[str, list[str], set[str]]:
    """The strings of the canonical JSON `text`, each on its own line (each key once); those of them
    that may hold JSON text; the keys.

    Without a backslash in the text no string has an escape, so the strings are what lies between
    pairs of quotes: every other piece of the text split at its quotes. No such string holds JSON text
    with a string in it (that needs a quote, escaped).
    """
    if "\\" not in text:
        pieces = text.split('"')
        found, after = pieces[1::2], pieces[2::2]
        is_key = list(map(str.startswith, after, repeat(":")))  # a key is followed by its colon
        keys = set(compress(found, is_key))
        return "\n".join(chain(compress(found, map(not_, is_key)), keys)), [], keys
    literals = _LITERAL.findall(text)
    decoded = json.loads("[" + ",".join(f'"{literal}"' for literal, _ in literals) + "]")
    keys = {value for value, (_, colon) in zip(decoded, literals, strict=True) if colon}
    return "\n".join(decoded), decoded, keys


def _may_change(lines: str, keys: set[str], neutralized: bool) -> bool:
    """Whether the strings (`lines`) or keys of a value hold something normalizing changes, secrets
    apart: a secret-named key's value, a volatile value, one of Claude Code's lines (`neutralized`)."""
    if ("name" in keys and "value" in keys) or any(is_secret_key(key) for key in keys):
        return True  # a secret-named key, or maybe a {"name": "api_key", "value": ...} pair
    return (neutralized and might_change(lines)) or has_volatile(lines)


def changing(texts: Mapping[str, str], secrets: Secrets, neutralized: Container[str]) -> dict[str, bool]:
    """The components (by name, with their canonical JSON `texts`) whose value normalizing may change,
    each with whether it may hold a secret; `neutralized`: the components where Claude Code's lines
    are neutralized. One secret scan covers the whole request: most requests hold no secret at all."""
    read = {name: strings(text) for name, text in texts.items() if text[:1] in _MAY_HOLD_TEXT}
    found = [texts for _, texts, _ in read.values()]
    if secrets.none_in_joined("\n".join(lines for lines, _, _ in read.values()), chain.from_iterable(found)):
        secret: set[str] = set()
    else:
        secret = {
            name for name, (lines, texts, _) in read.items() if not secrets.none_in_joined(lines, texts)
        }
    return {
        name: name in secret
        for name, (lines, _, keys) in read.items()
        if name in secret or _may_change(lines, keys, name in neutralized)
    }
