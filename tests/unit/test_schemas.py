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


def test_the_verdict_file_follows_its_schema_judged_or_not() -> None:
    import jsonschema
    from attest_toolkit.errors import UsageError
    from attest_toolkit.forge.verdict_file import judge, not_judged
    from attest_toolkit.report.policy import parse_policy
    from report_factory import make_report

    schema = json.loads((SCHEMAS[0].parent / "verdict.schema.json").read_text(encoding="utf-8"))
    judged = judge(make_report(), parse_policy({"failures": "allow"}), "attest-report.json").to_json()
    failed = not_judged(UsageError("malformed report JSON", "attest-report.json")).to_json()

    for doc in (judged, failed):
        jsonschema.Draft202012Validator(schema).validate(doc)
    assert (judged["verdict"], judged["exit_code"], failed["exit_code"]) == ("blocked", 1, 3)
    assert [r["status"] for r in judged["rules"]].count("blocked") >= 1
    assert set(judged["counts"]) == {"replayed", "live", "cost_usd", "misses"}
    assert judged["summary_line"].startswith(f"{judged['counts']['replayed']} replayed · ")
