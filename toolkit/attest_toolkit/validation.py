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

from .secrets import Secrets

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


# What each schema keyword's violation means, from the schema's side only: the document's value may be
# a secret (a key pasted in the wrong field), so an error names where and what rule, never the value.
_PROBLEMS = {
    "type": "must be of type {listed}",
    "enum": "must be one of {listed}",
    "const": "must be {listed}",
    "pattern": "does not match the pattern {value}",
    "format": "is not a valid {value}",
    "minLength": "is shorter than {value} characters",
    "maxLength": "is longer than {value} characters",
    "minimum": "is less than the minimum of {value}",
    "maximum": "is more than the maximum of {value}",
    "exclusiveMinimum": "must be more than {value}",
    "exclusiveMaximum": "must be less than {value}",
    "minItems": "has fewer than {value} items",
    "maxItems": "has more than {value} items",
    "uniqueItems": "has duplicate items",
    "minProperties": "has fewer than {value} properties",
    "anyOf": "matches none of the allowed forms",
    "oneOf": "does not match exactly one of the allowed forms",
    "not": "is a form that is not allowed here",
    "additionalProperties": "is a property the schema does not allow",
    "unevaluatedProperties": "is a property the schema does not allow",
    "propertyNames": "has a property name the schema does not allow",
}


def _listed(value: Any) -> str:
    values = value if isinstance(value, list) else [value]
    return ", ".join(json.dumps(v) for v in values)


def _describe(error: Any) -> tuple[list[Any], str]:
    """(path, problem) of a jsonschema error, in words that hold nothing from the document."""
    path = list(error.absolute_path)
    keyword = error.validator
    if keyword == "required":
        present = error.instance if isinstance(error.instance, dict) else {}
        missing = [name for name in error.validator_value if name not in present]
        return path, f"the required property {_listed(missing[:1])} is missing"
    if keyword in ("additionalProperties", "unevaluatedProperties") and isinstance(error.instance, dict):
        allowed = set(error.schema.get("properties", {}))
        extra = sorted(str(name) for name in error.instance if name not in allowed)
        if extra:  # point at it; a secret used as a key is redacted like any other text
            return [*path, _no_secret(extra[0])], _PROBLEMS[keyword]
    problem = _PROBLEMS.get(keyword, f"breaks the schema's {keyword!r} rule")
    return path, problem.format(value=error.validator_value, listed=_listed(error.validator_value))


def _no_secret(text: str) -> str:
    return Secrets().redact(text)


def first_error(schema: str, doc: Any) -> str | None:
    """`invalid at /tests/3/outcome: ...` for the first violation in document order, or None.

    The message names the JSON pointer and the rule broken, never the offending value."""
    if _fast(schema).is_valid(doc):
        return None
    errors = sorted(_explainer(schema).iter_errors(doc), key=lambda e: [str(p) for p in e.absolute_path])
    if not errors:  # the two validators disagree; trust the one that explains itself
        return None
    path, problem = _describe(errors[0])
    where = json_pointer(path) if path else "the top level"
    return f"invalid at {where}: {_one_line(problem)}"
