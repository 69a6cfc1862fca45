"""The shipped JSON schemas: what users validate their files against, and what the docs quote."""

import json
from collections import Counter
from pathlib import Path

import pytest

SCHEMAS = sorted((Path(__file__).resolve().parents[2] / "schemas").glob("*.schema.json"))


def _refuse_repeated_keys(pairs: list[tuple[str, object]]) -> dict[str, object]:
    # json.load keeps the last of two equal keys silently: an edit made to the first copy of a
    # definition would be ignored by every validator.
    repeated = [key for key, count in Counter(key for key, _ in pairs).items() if count > 1]
    assert not repeated, f"repeated keys: {repeated}"
    return dict(pairs)


def test_the_schemas_are_found() -> None:
    assert {p.name for p in SCHEMAS} >= {"fixture.schema.json", "report-v2.schema.json"}


@pytest.mark.parametrize("path", SCHEMAS, ids=lambda p: p.name)
def test_every_schema_names_each_key_once(path: Path) -> None:
    json.loads(path.read_text(encoding="utf-8"), object_pairs_hook=_refuse_repeated_keys)
