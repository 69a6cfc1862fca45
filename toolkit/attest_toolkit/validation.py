"""Schema validation for every document the toolkit reads: fixtures, reports, policies, artifacts.

Valid documents take the fast path (jsonschema-rs, compiled once per schema): a 20,000-test report or
a 10,000-interaction fixture validates in milliseconds. Only an invalid document goes through
jsonschema, whose errors name the first problem in document order.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema_rs

SCHEMA_DIR = Path(__file__).parent / "schemas"


@cache
def load_schema(name: str) -> dict[str, Any]:
    return json.loads((SCHEMA_DIR / name).read_text(encoding="utf-8"))


@cache
def _fast(name: str) -> Any:
    return jsonschema_rs.validator_for(load_schema(name))


@cache
def _explainer(name: str) -> Any:
    import jsonschema  # only an invalid document needs it; its import is slow

    return jsonschema.Draft202012Validator(load_schema(name))


def json_pointer(parts: Iterable[str | int]) -> str:
    return "/" + "/".join(str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def _one_line(text: str, limit: int = 200) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def first_error(schema: str, doc: Any) -> str | None:
    """`invalid at /tests/3/outcome: ...` for the first violation in document order, or None."""
    if _fast(schema).is_valid(doc):
        return None
    errors = sorted(_explainer(schema).iter_errors(doc), key=lambda e: [str(p) for p in e.absolute_path])
    if not errors:  # the two validators disagree; trust the one that explains itself
        return None
    error = errors[0]
    where = json_pointer(error.absolute_path) if error.absolute_path else "the top level"
    return f"invalid at {where}: {_one_line(error.message)}"
