"""`attest-engine report`: report-v2 from another test runner's rows (what the Vitest reporter sends)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import clean_env

KEY = "sk-test-" + "f" * 40
ROW = {
    "id": "t.test.ts::refunds",
    "file": "t.test.ts",
    "line": 3,
    "outcome": "passed",
    "duration": 0.25,
    "message": None,
}


def engine_report(stdin: str, output: Path, **env: str) -> subprocess.CompletedProcess[str]:
    code = "import sys; from attest_toolkit.cli.engine import main; sys.argv[0] = 'attest-engine'; main()"
    return subprocess.run(
        [sys.executable, "-c", code, "report", "--output", str(output)],
        input=stdin,
        env=clean_env(**env),
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_rows_become_a_validated_redacted_report(tmp_path: Path) -> None:
    failed = {**ROW, "id": "t.test.ts::leaks", "outcome": "failed", "message": f"401 for key {KEY}"}
    rows = {"runner": "vitest", "guard": True, "tests": [ROW, failed]}
    out = tmp_path / "attest-report.json"
    done = engine_report(json.dumps(rows), out, OPENAI_API_KEY=KEY)
    assert done.returncode == 0, done.stderr
    report = json.loads(out.read_text(encoding="utf-8"))
    assert report["summary"]["outcomes"]["failed"] == 1
    assert report["summary"]["environment"]["runner"] == "vitest"
    assert report["summary"]["egress"]["mode"] in ("guard", "none")
    assert KEY not in out.read_text(encoding="utf-8")


def test_a_row_s_facts_are_computed_from_its_sessions_as_pytest_computes_them(tmp_path: Path) -> None:
    miss = {
        "message": "replay miss: model changed",
        "component": "model",
        "fixture": "f",
        "not_evaluated": True,
    }
    drift = {
        "message": "replay drift: model call 1: params changed: temperature",
        "paths": ["params.temperature"],
    }
    session = {
        "mode": "auto",
        "fixtures": ["tests/attest/fixtures/f.attest.json"],
        "fixture": "tests/attest/fixtures/f.attest.json",
        "replayed": 1,
        "live": 0,
        "live_cost_usd": 0.0,
        "unpriced": 0,
        "unused": 2,
        "misses": 1,
        "miss_list": [miss],
        "drift": 1,
        "drift_list": [drift],
        "tool_replayed": 3,
        "tool_live": 0,
        "keys": ["k1"],
    }
    location = {"file": "src/agent.ts", "line": 12}
    row = {
        **ROW,
        "outcome": "not_evaluated",
        "reason": "replay_miss",
        "sessions": [session],
        "miss_location": location,
    }
    out = tmp_path / "attest-report.json"
    done = engine_report(json.dumps({"runner": "vitest", "tests": [row]}), out)
    assert done.returncode == 0, done.stderr
    report = json.loads(out.read_text(encoding="utf-8"))
    replay = report["tests"][0]["replay"]
    assert (replay["unused"], replay["tool_replayed"], replay["drift"]) == (2, 3, 1)
    assert replay["drift_message"] == drift["message"] and replay["drift_paths"] == ["params.temperature"]
    assert replay["miss"] == {
        "message": miss["message"],
        "component": "model",
        "fixture": "f",
        "location": location,
    }
    assert "sessions" not in report["tests"][0] and "miss_location" not in report["tests"][0]
    assert report["summary"]["replay"]["unused"] == 2 and report["summary"]["replay"]["tool_replayed"] == 3


def test_bad_input_is_one_line_and_exit_3(tmp_path: Path) -> None:
    out = tmp_path / "attest-report.json"
    for stdin, words in (
        ("not json", "standard input: not JSON"),
        ("[]", "standard input: expected"),
        (json.dumps({"tests": [{**ROW, "outcome": "maybe"}]}), "invalid at /tests/0/outcome: must be one of"),
        (
            json.dumps({"tests": [{**ROW, "sessions": [{"mode": "strict"}]}]}),
            "standard input: test 't.test.ts::refunds': sessions are not the engine's summaries",
        ),
    ):
        done = engine_report(stdin, out)
        assert done.returncode == 3, done.stderr
        assert words in done.stderr
        assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
    assert not out.exists()
