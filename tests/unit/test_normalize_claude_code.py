"""Claude Code runs: the lines it writes about the machine and the day do not break a replay elsewhere."""

from __future__ import annotations

import json
from typing import Any

import pytest
from attest_toolkit.credentials.scan import Secrets
from attest_toolkit.normalize import COMPONENTS, Exchange, Templater, neutralize, request_key
from attest_toolkit.normalize.claude_code import TOKEN

NO_SECRETS = Secrets.of([])

LAPTOP = {
    "cwd": "/Users/ana/src/refunds",
    "platform": "darwin",
    "shell": "zsh",
    "os_version": "Darwin 24.6.0",
    "model_line": "You are powered by the model named Sonnet 4.5. The exact model ID is claude-sonnet-4-5-20250929.",
    "date": "2025-10-17",
    "branch": "fix/double-refund",
    "status": "M src/refunds.py\n?? notes.md",
    "commits": "a1b2c3d fix rounding\n9f8e7d6 add refund audit",
    "user_id": "user_5e0c0f2d_account_8d1e3c0a-6a36-4d2c-9a55-0f1e2d3c4b5a"
    "_session_1b2c3d4e-aaaa-4bbb-8ccc-0123456789ab",
    "total_tokens": "962655",
    "git_repo": "true",
    "claude_md": "Use uv for Python. Never push to main.",
}
CI = {
    **LAPTOP,
    "cwd": "/home/runner/work/refunds/refunds",
    "platform": "linux",
    "shell": "bash",
    "os_version": "Linux 6.8.0-1017-azure",
    "model_line": "You are powered by the model named Sonnet 4.5.",
    "date": "2026-02-03",
    "branch": "main",
    "status": "(clean)",
    "commits": "0c9d8e7 Merge pull request #12 from acme/fix/double-refund",
    "user_id": "user_77aa_account__session_5f6e7d8c-1111-4222-8333-444455556666",
    "total_tokens": "958112",
}


def claude_code_request(
    run: dict[str, str], tool_output: str = "refunded O-1042\nrefunded O-1042 again"
) -> dict:
    """A /v1/messages body shaped like Claude Code's: environment and git status in the system prompt,
    CLAUDE.md and the date in a reminder on the first user message, a token reminder after a tool."""
    environment = (
        "You are an interactive CLI tool that helps users with software engineering tasks.\n\n"
        "# Environment\n"
        "You have been invoked in the following environment: \n"
        f" - Primary working directory: {run['cwd']}\n"
        f" - Is a git repository: {run['git_repo']}\n"
        f" - Platform: {run['platform']}\n"
        f" - Shell: {run['shell']}\n"
        f" - OS Version: {run['os_version']}\n"
        f" - {run['model_line']}\n"
        " - Assistant knowledge cutoff is January 2025.\n\n"
        "gitStatus: This is the git status at the start of the conversation. Note that this status is a "
        "snapshot in time, and will not update during the conversation.\n"
        f"Current branch: {run['branch']}\n\n"
        "Main branch (you will usually use this for PRs): main\n\n"
        "Git user: Ana Lopez\n\n"
        f"Status:\n{run['status']}\n\n"
        f"Recent commits:\n{run['commits']}\n\n"
        "# Code style\n"
        "- Keep changes minimal and run the tests before you finish."
    )
    reminder = (
        "<system-reminder>\n"
        "As you answer the user's questions, you can use the following context:\n"
        "# claudeMd\n"
        "Codebase and user instructions are shown below. Be sure to adhere to these instructions.\n\n"
        f"Contents of {run['cwd']}/CLAUDE.md (project instructions, checked into the codebase):\n\n"
        f"{run['claude_md']}\n"
        "# currentDate\n"
        f"Today's date is {run['date']}.\n\n"
        "      IMPORTANT: this context may or may not be relevant to your tasks.\n"
        "</system-reminder>\n"
    )
    tool_use_id = "toolu_01LtHJmixrs9NcWQkK8hu8hj"
    return {
        "model": "claude-sonnet-4-5-20250929",
        "max_tokens": 32000,
        "stream": True,
        "metadata": {"user_id": run["user_id"]},
        "system": [
            {"type": "text", "text": "You are Claude Code, Anthropic's official CLI for Claude."},
            {"type": "text", "text": environment, "cache_control": {"type": "ephemeral"}},
        ],
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": reminder},
                    {"type": "text", "text": "Refund order O-1042 twice and tell me what happens."},
                ],
            },
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "I'll run the refund twice."},
                    {
                        "type": "tool_use",
                        "id": tool_use_id,
                        "name": "Bash",
                        "input": {"command": "make refund"},
                    },
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": tool_use_id,
                        "content": tool_output,
                        "is_error": False,
                    },
                    {
                        "type": "text",
                        "text": "<system-reminder>\n"
                        f"<total_tokens>{run['total_tokens']} tokens left</total_tokens>\n"
                        "</system-reminder>",
                    },
                ],
            },
        ],
        "tools": [{"name": "Bash", "description": "Run a command.", "input_schema": {"type": "object"}}],
    }


def hashes(body: dict[str, Any]) -> dict[str, str]:
    return request_key("anthropic", "POST", "/v1/messages", "beta=true", {"json": body}, NO_SECRETS).hashes


def changed(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    old, new = hashes(before), hashes(after)
    return [name for name in COMPONENTS if old[name] != new[name]]


def test_a_capture_on_a_laptop_replays_in_ci() -> None:
    assert changed(claude_code_request(LAPTOP), claude_code_request(CI)) == []


def test_the_recorded_request_keeps_the_environment_as_sent() -> None:
    body = claude_code_request(LAPTOP)
    exchange = Exchange("POST", "/v1/messages", "beta=true", json.dumps(body).encode(), 200, [], b"{}")
    stored = Templater(NO_SECRETS).record(exchange, "anthropic")
    text = json.dumps(stored["request"])
    assert "Primary working directory: /Users/ana/src/refunds" in text
    assert "Today's date is 2025-10-17." in text
    assert "a1b2c3d fix rounding" in text
    assert TOKEN not in text
    assert stored["hashes"] == hashes(claude_code_request(CI))


@pytest.mark.parametrize(
    ("edit", "component"),
    [
        ({"git_repo": "false"}, "system"),  # a line of the Environment section that is not volatile
        ({"claude_md": "Use pip for Python. Never push to main."}, "messages"),  # CLAUDE.md itself
    ],
)
def test_any_other_line_still_counts(edit: dict[str, str], component: str) -> None:
    assert changed(claude_code_request(LAPTOP), claude_code_request({**LAPTOP, **edit})) == [component]


def test_the_text_after_the_git_status_still_counts() -> None:
    before = claude_code_request(LAPTOP)
    after = claude_code_request(LAPTOP)
    after["system"][1]["text"] = after["system"][1]["text"].replace("Keep changes minimal", "Rewrite freely")
    assert changed(before, after) == ["system"]


def test_a_token_reminder_inside_a_tool_result_must_match_literally() -> None:
    before = claude_code_request(LAPTOP, tool_output="ok\n<total_tokens>962655 tokens left</total_tokens>")
    after = claude_code_request(LAPTOP, tool_output="ok\n<total_tokens>958112 tokens left</total_tokens>")
    assert changed(before, after) == ["messages"]


# --- the line rules themselves ---------------------------------------------------------------------

OLD_SYSTEM_PROMPT = """You are Claude Code, Anthropic's official CLI for Claude.

Here is useful information about the environment you are running in:
<env>
Working directory: /Users/ana/src/refunds
Is directory a git repo: Yes
Additional working directories: /tmp/scratch
Platform: darwin
OS Version: Darwin 24.6.0
Today's date: 2025-10-17
</env>
You are powered by the model named Sonnet 4.5. The exact model ID is claude-sonnet-4-5-20250929.

Assistant knowledge cutoff is January 2025.

gitStatus: This is the git status at the start of the conversation.
Current branch: fix/double-refund

Status:
M src/refunds.py

Recent commits:
a1b2c3d fix rounding

Platform: keep this line, it is outside every block."""


def test_env_blocks_and_git_status_are_neutralized_line_by_line() -> None:
    assert neutralize(OLD_SYSTEM_PROMPT) == (
        "You are Claude Code, Anthropic's official CLI for Claude.\n\n"
        "Here is useful information about the environment you are running in:\n"
        "<env>\n"
        f"Working directory: {TOKEN}\n"
        "Is directory a git repo: Yes\n"
        f"Additional working directories: {TOKEN}\n"
        f"Platform: {TOKEN}\n"
        f"OS Version: {TOKEN}\n"
        f"Today's date: {TOKEN}\n"
        "</env>\n"
        f"You are powered by the model {TOKEN}\n\n"
        "Assistant knowledge cutoff is January 2025.\n\n"
        "gitStatus: This is the git status at the start of the conversation.\n"
        f"{TOKEN}\n\n"
        "Platform: keep this line, it is outside every block."
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "<system-reminder>The date has changed. Today's date is now 2026-01-21. Do not mention it.",
            f"<system-reminder>The date has changed. Today's date is now {TOKEN}. Do not mention it.",
        ),
        (
            "<system-reminder>\n<total_tokens>14962655 tokens left</total_tokens>\n</system-reminder>",
            f"<system-reminder>\n<total_tokens>{TOKEN}</total_tokens>\n</system-reminder>",
        ),
        ("Platform: linux\nShell: bash", "Platform: linux\nShell: bash"),  # not inside a Claude Code block
        ("Today's date is 2025-10-17.", "Today's date is 2025-10-17."),
    ],
)
def test_reminders_are_neutralized_and_plain_text_is_not(text: str, expected: str) -> None:
    assert neutralize(text) == expected


def test_neutralizing_twice_changes_nothing_more() -> None:
    once = neutralize(OLD_SYSTEM_PROMPT)
    assert neutralize(once) == once
