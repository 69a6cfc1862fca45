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


def test_report_miss_components_are_the_kinds_a_miss_can_have() -> None:
    # A kind the toolkit produces that the schema does not allow would make the report unwritable.
    from attest_toolkit.normalize import COMPONENTS
    from attest_toolkit.replay.diagnose import MissKind

    schema = json.loads((SCHEMAS[0].parent / "report-v2.schema.json").read_text(encoding="utf-8"))
    miss = schema["$defs"]["replay"]["properties"]["miss"]["properties"]["component"]
    assert miss["enum"] == [kind.value for kind in MissKind]
    assert [kind.value for kind in MissKind][: len(COMPONENTS)] == list(COMPONENTS)
