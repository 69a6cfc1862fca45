"""The pytest plugin's settings: read once from the options and the environment, an option over its
variable, a bad value one usage error before any test runs."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from attest_toolkit.pytest_plugin.settings import PluginSettings
from attest_toolkit.replay.modes import Egress, Match, Mode

OPTIONS = ("replay", "strict", "egress", "allowed_hosts", "match", "diff", "report", "record", "fault")


class Config:
    """What the settings read of a pytest config: its options (None or False when not given)."""

    def __init__(self, **given: Any) -> None:
        self.given = {f"attest_{name}": given.get(name) for name in OPTIONS}

    def getoption(self, name: str) -> Any:
        return self.given[name]


def settings(env: dict[str, str], **given: Any) -> PluginSettings:
    return PluginSettings.from_config(Config(**given), env)  # type: ignore[arg-type]


def test_the_variables_fill_in_what_no_option_gives() -> None:
    env = {
        "ATTEST_REPLAY": "off",
        "ATTEST_MATCH": "lenient",
        "ATTEST_EGRESS": " Block-All ",
        "ATTEST_ALLOWED_HOSTS": "a.example",
        "ATTEST_STRICT": "yes",
    }
    got = settings(env, report="report.json")
    assert (got.mode, got.match, got.egress, got.strict) == (Mode.OFF, Match.LENIENT, Egress.BLOCK_ALL, True)
    assert (got.guard, got.block_all, got.no_live) == (True, True, True)
    assert (got.allowed_hosts, got.report_path, got.record_mode) == ("a.example", "report.json", None)


def test_an_option_wins_over_its_variable_and_the_record_is_frozen() -> None:
    got = settings(
        {"ATTEST_REPLAY": "off", "ATTEST_EGRESS": "block", "CI": "true"}, replay="auto", egress="off"
    )
    assert (got.mode, got.egress, got.guard) == (Mode.AUTO, Egress.OFF, False)
    with pytest.raises(dataclasses.FrozenInstanceError):
        got.mode = Mode.STRICT  # type: ignore[misc]


def test_the_default_mode_is_strict_in_ci_and_auto_locally() -> None:
    assert (settings({"CI": "true"}).mode, settings({}).mode) == (Mode.STRICT, Mode.AUTO)
    assert settings({"CI": "true"}, diff=True).show_diff is False  # --attest-diff is for local runs


@pytest.mark.parametrize(
    ("env", "given", "error"),
    [
        ({"ATTEST_REPLAY": "loose"}, {}, "ATTEST_REPLAY must be strict, auto or off, not 'loose'"),
        ({"ATTEST_MATCH": "fuzzy"}, {}, "ATTEST_MATCH must be strict or lenient, not 'fuzzy'"),
        ({"ATTEST_EGRESS": "block"}, {"record": "all"}, "--attest-egress=block forbids live calls"),
    ],
)
def test_a_bad_setting_is_one_usage_error(env: dict[str, str], given: dict[str, Any], error: str) -> None:
    with pytest.raises(pytest.UsageError, match=error):
        settings(env, **given)
