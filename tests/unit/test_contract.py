"""The contract vectors (tests/contract/): what the toolkit answers, case by case, which the Vitest
helper's sdks/vitest/test/contract.test.ts checks it answers the same.

- hosts: whether the egress guard blocks a host, and the provider a blocked call is named for;
- miss kinds: a recorded call and the calls sent after it -> the miss's kind and the one line the user
  sees (through the engine's own lookup, as the engine serves a call);
- replay facts: the engine's raw summaries of a test's sessions -> the row's `replay` facts;
- modes: the mode given and the environment -> the replay mode, or the one line refusing it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, get_args

import pytest
from attest_toolkit.credentials.scan import Secrets
from attest_toolkit.errors import UsageError
from attest_toolkit.guard.hosts import is_blocked_host
from attest_toolkit.normalize.served import Sent, key_as_sent
from attest_toolkit.providers import provider_for
from attest_toolkit.replay import index
from attest_toolkit.replay.diagnose import Miss, MissKind
from attest_toolkit.replay.modes import Egress, Match, Mode, in_ci
from attest_toolkit.replay.runner import resolve_mode
from attest_toolkit.replay.session import Session
from attest_toolkit.report.build import replay_facts
from attest_toolkit.report.model import ReplayMode
from conftest import REPO
from contract_vectors import CASE_KEYS, VECTORS, cases, write_miss_fixture

VITEST_TEST = REPO / "sdks" / "vitest" / "test" / "contract.test.ts"


def _ids(key: str) -> Any:
    return lambda case: case[key]


# --- every case is read ----------------------------------------------------------------------------


def test_every_vector_file_is_one_both_runners_read() -> None:
    assert {p.name for p in VECTORS.iterdir()} == set(CASE_KEYS)
    vitest = VITEST_TEST.read_text(encoding="utf-8")
    assert [f for f in CASE_KEYS if f'"{f}"' not in vitest] == []


@pytest.mark.parametrize("file", sorted(CASE_KEYS))
def test_every_case_has_only_keys_a_runner_reads(file: str) -> None:
    doc = json.loads((VECTORS / file).read_text(encoding="utf-8"))
    assert set(doc) == {"about", "cases"} and doc["cases"]
    unread = [
        (i, sorted(set(c) - CASE_KEYS[file])) for i, c in enumerate(doc["cases"]) if set(c) - CASE_KEYS[file]
    ]
    assert unread == []


# --- hosts -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", cases("hosts.json"), ids=_ids("host"))
def test_host(case: dict[str, Any]) -> None:
    assert is_blocked_host(case["host"]) is case["blocked"]
    # The provider a blocked call's error is shaped for and its line names the client of.
    if case["blocked"]:
        assert provider_for("", case["host"]) == case["provider"]
    else:
        assert "provider" not in case


# --- miss kinds ------------------------------------------------------------------------------------


def first_miss(fixture: Path, sent: list[dict[str, Any]]) -> Miss:
    """The first miss of a strict session of `fixture` that is sent `sent`, found as the engine finds it."""
    secrets = Secrets.of([])
    session = Session([index.load(fixture, secrets)], "strict", secrets=secrets)
    for call in sent:
        raw = json.dumps(call["body"]).encode()
        as_sent = Sent("openai", "POST", call["path"], "", raw, None, "application/json")
        rk, path = key_as_sent(as_sent, session.served, secrets)
        found = session.lookup(rk.key, rk.hashes, rk.model, f"POST {path}", rk.parts, rk.components)
        if isinstance(found, Miss):
            return found
    raise AssertionError("every call was served")


@pytest.mark.parametrize("case", cases("miss_kinds.json"), ids=_ids("name"))
def test_miss_kind(case: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # In the default fixtures directory, so the line's re-record hint names none.
    monkeypatch.chdir(tmp_path)
    fixture = write_miss_fixture(tmp_path / "tests" / "attest" / "fixtures", case)
    miss = first_miss(fixture, case["sent"])
    assert (miss.component, miss.message) == (MissKind(case["kind"]), case["line"])


# --- replay facts ----------------------------------------------------------------------------------


@pytest.mark.parametrize("case", cases("replay_facts.json"), ids=_ids("name"))
def test_replay_facts(case: dict[str, Any]) -> None:
    sessions = case["sessions"]
    assert replay_facts(sessions, (s["fixture"] for s in sessions)) == case["facts"]


# --- modes ---------------------------------------------------------------------------------------------

MODES_FILE = REPO / "toolkit" / "attest_toolkit" / "replay" / "modes.json"


def test_the_enums_are_the_vocabularies_the_vitest_package_copies() -> None:
    words = json.loads(MODES_FILE.read_text(encoding="utf-8"))
    assert [m.value for m in Mode] == words["modes"]
    assert [m.value for m in Match] == words["matches"]
    assert [m.value for m in Egress] == words["egress"]
    assert list(get_args(ReplayMode)) == words["modes"]  # report-v2's, from its schema
    assert [w for w in words["ci_false"] if in_ci({"CI": w})] == []


@pytest.mark.parametrize("case", cases("modes.json"), ids=_ids("what"))
def test_mode(case: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("CI", "ATTEST_REPLAY"):
        monkeypatch.delenv(var, raising=False)
    for var, value in case["env"].items():
        monkeypatch.setenv(var, value)
    if "refused" in case:
        with pytest.raises(UsageError, match=case["refused"]):
            resolve_mode(case["given"])
    else:
        assert resolve_mode(case["given"]) is Mode(case["mode"])
