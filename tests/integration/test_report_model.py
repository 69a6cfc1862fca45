"""The report's TypedDicts (`report/model.py`) are generated from report-v2's schema and kept current."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import get_args, get_type_hints

import pytest
from attest_toolkit.report import model, modelgen
from attest_toolkit.report.build import OUTCOMES
from conftest import REPO

MODEL = REPO / "toolkit" / "attest_toolkit" / "report" / "model.py"


def test_the_model_is_what_the_schema_generates_today() -> None:
    # Fails when a schema change was not followed by `python -m attest_toolkit.report.modelgen`.
    assert MODEL.read_text(encoding="utf-8") == modelgen.generate()


def test_a_schema_change_changes_the_generated_model(monkeypatch: pytest.MonkeyPatch) -> None:
    """The check above can fail: a new report field shows up in what the schema generates."""
    schema = json.loads(modelgen.schema_text("report-v2.schema.json"))
    schema["$defs"]["test"]["properties"]["retries"] = {"type": "integer"}
    monkeypatch.setattr(modelgen, "schema_text", lambda file: json.dumps(schema))
    generated = modelgen.generate()
    assert generated != MODEL.read_text(encoding="utf-8")
    assert "    retries: int\n" in generated


def test_the_command_in_the_header_regenerates_the_module(tmp_path: Path) -> None:
    target = tmp_path / "model.py"
    done = subprocess.run(
        [sys.executable, "-m", "attest_toolkit.report.modelgen", str(target)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert target.read_text(encoding="utf-8") == MODEL.read_text(encoding="utf-8")
    assert "python -m attest_toolkit.report.modelgen" in MODEL.read_text(encoding="utf-8").splitlines()[2]


def test_the_types_follow_the_schema_required_and_optional_keys() -> None:
    schema = json.loads(modelgen.schema_text("report-v2.schema.json"))
    test = schema["$defs"]["test"]
    assert model.Test.__required_keys__ == frozenset(test["required"])
    assert model.Test.__optional_keys__ == frozenset(test["properties"]) - set(test["required"])
    assert set(get_type_hints(model.Report)) == set(schema["properties"])
    # The outcomes the code counts are the schema's, read from the model rather than copied.
    assert OUTCOMES == tuple(test["properties"]["outcome"]["enum"]) == get_args(model.TestOutcome)
