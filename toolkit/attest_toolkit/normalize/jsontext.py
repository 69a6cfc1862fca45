"""JSON text in and out at C speed per node: orjson wherever its answer is exactly the `json` module's.

Request keys hash each component's canonical JSON text, and parsing a body and encoding its
components is most of a replayed call's key. orjson does both several times faster than `json`, but
not always alike, and a hash must never change: where orjson's answer could differ, `json` answers.

Parsing: orjson reads an integer beyond 64 bits as a float (json: an int), and refuses NaN,
Infinity, out-of-range floats and lone surrogates (json accepts them). Encoding: orjson writes floats
below 1e-4 in another form (`1e-7`, `0.00001`; json `1e-07`, `1e-05`), NaN and Infinity as `null`,
and refuses integers beyond 64 bits, lone surrogates and non-string keys.
"""

from __future__ import annotations

import json
from types import ModuleType
from typing import Any

# Nineteen digits in a row may be an integer orjson would read as a float (2**63 has 19 digits), found
# as nineteen zeros once every digit is a zero and nothing else is (a table lookup per byte: a regular
# expression costs twenty times more). Digits in strings count too: json then parses alike, only slower.
_DIGITS_AS_ZEROS = bytes(ord("0") if byte in b"0123456789" else ord(" ") for byte in range(256))
_LONG_NUMBER = b"0" * 19


def _may_differ(text: bytes) -> bool:
    """Whether orjson's encoding holds what may differ from json's: a float below 1e-4 (`1e-7`,
    `0.00001`) or `null` (also NaN and Infinity). Found in strings too, where json then encodes alike."""
    return b"null" in text or b"e-" in text or b"0.0000" in text


def _orjson() -> ModuleType:
    """orjson, imported at the first use: it imports uuid, platform and more, which an engine serving
    its hits from the test's process never needs, and its start would wait for."""
    import orjson  # after the first, a lookup in sys.modules

    return orjson


_JSON_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def loads(raw: bytes) -> Any:
    """`json.loads(raw.decode("utf-8"))`: the same value, the same errors (ValueError)."""
    if _LONG_NUMBER not in raw.translate(_DIGITS_AS_ZEROS):
        orjson = _orjson()
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:
            pass  # json may accept it (NaN, a lone surrogate), or raises its own error
    return json.loads(raw.decode("utf-8"))


def canonical(value: Any) -> bytes:
    """The canonical JSON text of `value` (keys sorted, no spaces, non-ASCII as is) in UTF-8, lone
    surrogates passed through: exactly what every request key hashes."""
    if value is None:  # an absent component: common, and `null` would send it to json below
        return b"null"
    orjson = _orjson()
    try:
        text = orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    except TypeError:  # orjson.JSONEncodeError: a big integer, a lone surrogate, a non-string key
        pass
    else:
        if not _may_differ(text):
            return text
    return _JSON_CANONICAL.encode(value).encode("utf-8", "surrogatepass")
