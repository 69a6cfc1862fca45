"""The contract vectors in tests/contract/: loading them, and the fixtures their miss cases replay.

Both runners read the same files: tests/unit/test_contract.py here, and the Vitest helper's
sdks/vitest/test/contract.test.ts (tests/system/test_vitest.py writes the miss cases' fixtures for it with
`write_miss_fixtures`, as `attest capture` would have recorded them).

They live under tests/ because the toolkit is what they specify and the Vitest helper mirrors it: the
Vitest suite already reads the repository around its package (examples/fixtures), while the npm
package ships only dist/, so the vectors never travel with it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conftest import REPO, chat_response, exchange, write_fixture

VECTORS = REPO / "tests" / "contract"
# Each file, and the keys a case in it may have (its input, the answer expected, and `what` it shows):
# a file or a key the runners do not know fails tests/unit/test_contract.py, as a case nobody checks would.
CASE_KEYS = {
    "hosts.json": {"host", "what", "blocked", "provider"},
    "miss_kinds.json": {"name", "what", "recorded", "sent", "kind", "line"},
    "replay_facts.json": {"name", "what", "sessions", "facts"},
    "modes.json": {"what", "given", "env", "mode", "refused"},
}


def cases(file: str) -> list[dict[str, Any]]:
    return json.loads((VECTORS / file).read_text(encoding="utf-8"))["cases"]


def miss_fixture_name(case: dict[str, Any]) -> str:
    """The fixture a miss case replays: its name is in the case's line, so both runners use it."""
    return f"contract-{case['name']}"


def write_miss_fixture(directory: Path, case: dict[str, Any]) -> Path:
    """The case's recorded call, as a fixture recorded from a command (so its miss names `attest
    capture --refresh`), answered with a plain chat completion."""
    recorded = case["recorded"]
    call = exchange(recorded["body"], chat_response("recorded"), path=recorded["path"])
    return write_fixture(directory, miss_fixture_name(case), [call])


def write_miss_fixtures(directory: Path) -> None:
    for case in cases("miss_kinds.json"):
        write_miss_fixture(directory, case)
