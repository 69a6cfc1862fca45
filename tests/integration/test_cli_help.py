"""The command line reads well: groups with no subcommand print their help, help text keeps what is in
brackets, flags show no `<bool>`, and choices are listed."""

from __future__ import annotations

import pytest
from conftest import clean_env, run_cli

GROUPS = [[], ["fixture"], ["policy"], ["report"], ["github"]]


@pytest.mark.parametrize("group", GROUPS, ids=lambda g: " ".join(["attest", *g]))
def test_a_group_with_no_subcommand_prints_its_help_and_exits_0(group: list[str]) -> None:
    done = run_cli(group)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"Usage: {' '.join(['attest', *group])} [OPTIONS] COMMAND [ARGS]...")
    assert done.stderr == ""


def test_the_engine_command_with_no_subcommand_prints_its_help_too() -> None:
    done = run_cli([], program="attest-engine")
    assert done.returncode == 0 and done.stdout.startswith("Usage: attest-engine [OPTIONS] COMMAND")


def help_text(*command: str) -> str:
    done = run_cli([*command, "--help"], env=clean_env(COLUMNS="100"))
    assert done.returncode == 0, done.stderr
    return " ".join(done.stdout.split())


def test_help_keeps_text_in_brackets_and_lists_choices() -> None:
    assert "[default: .attest/policy.yml if present, else built-in defaults]" in help_text(
        "policy", "evaluate"
    )
    assert "--mode [strict|auto|off]" in help_text("replay")


@pytest.mark.parametrize(
    "command",
    [[], ["capture"], ["replay"], ["sandbox"], ["select"], ["fixture", "import"], ["policy", "evaluate"]],
)
def test_no_flag_shows_a_bool_metavar(command: list[str]) -> None:
    text = help_text(*command)
    assert "--help Show this message and exit." in text and "<bool>" not in text


def test_the_fixture_group_names_what_it_does_not_a_store_of_ours() -> None:
    text = help_text("fixture")
    assert "agent-engine-knowledge" not in text and "OBJECT_STORE" not in text
    assert "keep them in an object store pinned by digest" in text
    assert "OBJECT_STORE_BUCKET" in help_text("fixture", "push")  # the command that needs it says it
