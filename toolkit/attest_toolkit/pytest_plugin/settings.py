"""The pytest plugin's settings: one frozen record, read once from the command line and the environment.

A command-line option wins over its variable (`--attest-replay` over ATTEST_REPLAY), as
publish-unit-test-result-action's `Settings` are read once and handed to what needs them. A bad value is
one line (pytest's usage error) before any test runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import pytest

from ..errors import AttestError
from ..replay.modes import Egress, Match, Mode, default_mode, in_ci, spelled, word_of
from . import record


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() in ("1", "true", "yes", "on")


def _faults(specs: list[str]) -> tuple[str, ...]:
    """`--attest-fault`: a bad SPEC stops the run with one line, before any test (exit 4, pytest's
    usage error)."""
    if not specs:
        return ()
    from ..replay.faults import parse_faults

    try:
        parse_faults(specs)
    except AttestError as exc:
        raise pytest.UsageError(str(exc)) from None
    return tuple(specs)


@dataclass(frozen=True)
class PluginSettings:
    mode: Mode  # --attest-replay, ATTEST_REPLAY, else strict in CI and auto locally
    strict: bool  # --attest-strict, ATTEST_STRICT: an auto-mode miss that could not go live fails
    egress: Egress  # --attest-egress, ATTEST_EGRESS
    allowed_hosts: str | None  # --attest-allowed-hosts, ATTEST_ALLOWED_HOSTS (with block-all)
    match: Match  # --attest-match, ATTEST_MATCH
    report_path: str | None  # --attest-report
    show_diff: bool  # --attest-diff, outside CI only
    record_mode: str | None  # --attest-record, ATTEST_RECORD (see `record.resolve`)
    record_refusal: str | None  # why CI did not let the run record, when it did not
    faults: tuple[str, ...] = ()  # --attest-fault: the SPECs every replayed test's requests meet

    @property
    def guard(self) -> bool:
        return self.egress in (Egress.BLOCK, Egress.BLOCK_ALL)

    @property
    def block_all(self) -> bool:
        return self.egress is Egress.BLOCK_ALL

    @property
    def no_live(self) -> bool:
        """With the guard on, the engine never goes live either."""
        return self.guard

    @classmethod
    def from_config(cls, config: pytest.Config, env: Mapping[str, str]) -> PluginSettings:
        def given(option: str, var: str) -> str | None:
            return config.getoption(option) or env.get(var) or None

        mode_given = given("attest_replay", "ATTEST_REPLAY") or default_mode(env)
        mode = word_of(Mode, mode_given)
        if mode is None:
            raise pytest.UsageError(f"ATTEST_REPLAY must be {spelled(Mode)}, not {mode_given!r}")
        match_given = given("attest_match", "ATTEST_MATCH") or Match.STRICT
        match = word_of(Match, match_given)
        if match is None:
            raise pytest.UsageError(f"ATTEST_MATCH must be {spelled(Match)}, not {match_given!r}")
        # An egress value that is none of the words leaves the guard off.
        egress = word_of(Egress, (given("attest_egress", "ATTEST_EGRESS") or "off").strip().lower())
        record_mode, record_refusal = record.resolve(config, env)
        settings = cls(
            mode=mode,
            strict=bool(config.getoption("attest_strict")) or _truthy(env.get("ATTEST_STRICT")),
            egress=egress or Egress.OFF,
            allowed_hosts=given("attest_allowed_hosts", "ATTEST_ALLOWED_HOSTS"),
            match=match,
            report_path=config.getoption("attest_report"),
            show_diff=bool(config.getoption("attest_diff")) and not in_ci(env),
            record_mode=record_mode,
            record_refusal=record_refusal,
            faults=_faults(config.getoption("attest_fault") or []),
        )
        if settings.guard and record_mode not in (None, *record.OFFLINE_MODES):
            raise pytest.UsageError("--attest-egress=block forbids live calls, so it cannot record; drop one")
        return settings
