"""The action's inputs, checked before anything is installed.

The runner's `python3` runs this file by its path (`python3 -I .../github/inputs.py`) before the toolkit
is installed, so it imports nothing from the package and nothing but the standard library. It reads
the inputs from the step's environment; the first bad one is one `::error title=attest::` line and
exit 3 (a usage error), its text escaped as GitHub's toolkit escapes workflow-command data, so an
input cannot start a command of its own. When they pass, it writes the output `project-dir`: the
working-directory input as the runner takes it (from the workspace unless absolute), which the steps
that hold a token or a key are given instead of working there.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Mapping
from pathlib import Path

USAGE_EXIT = 3
# The switches arrive as one variable, split on blanks as the shell splits a word (an empty one is
# absent, so it takes the input's default).
BLANKS = re.compile(r"[ \t\n]+")


class BadInput(Exception):
    """An input the action cannot run with; its message is the error line's text."""


def one_of(name: str, value: str, allowed: tuple[str, ...], wording: str) -> None:
    if value not in allowed:
        raise BadInput(f"{name} must be {wording}, not '{value}'")


def check_isolation(env: Mapping[str, str]) -> None:
    isolation = env.get("ISOLATION", "")
    one_of("isolation", isolation, ("host", "container", "image"), "host, container or image")
    if isolation != "image":
        return
    # An image replays strictly with the network off (attest replay --image refuses the rest).
    if not env.get("IMAGE") or not env.get("FIXTURE"):
        raise BadInput("isolation image needs the inputs image and fixture")
    if env.get("MODE") != "strict" or env.get("NETWORK") != "none":
        raise BadInput("isolation image replays with mode strict and network none")


# The replay modes, from the file the toolkit's enum and the Vitest package read (replay/modes.json).
_MODES_FILE = Path(__file__).resolve().parent.parent / "replay" / "modes.json"
MODES: list[str] = json.loads(_MODES_FILE.read_text(encoding="utf-8"))["modes"]


def check_switches(env: Mapping[str, str]) -> None:
    for value in [env.get("SELECT", ""), *(w for w in BLANKS.split(env.get("SWITCHES", "")) if w)]:
        if value not in ("true", "false"):
            raise BadInput(
                f"select, summary, annotations, check-run and html-report take true or false, not '{value}'"
            )


def check(env: Mapping[str, str]) -> None:
    """Raise BadInput for the first input the action cannot run with, in the order they are listed."""
    one_of("mode", env.get("MODE", ""), tuple(MODES), f"{', '.join(MODES[:-1])} or {MODES[-1]}")
    one_of("network", env.get("NETWORK", ""), ("none", "guard"), "none or guard")
    check_isolation(env)
    one_of("fixtures-store", env.get("STORE", ""), ("", "s3"), "s3 or empty")
    check_switches(env)
    one_of("comment", env.get("COMMENT", ""), ("true", "false", "on-change"), "true, false or on-change")
    if env.get("SHARD") and env.get("SELECT") != "true":
        raise BadInput("shard needs select: true")
    # In the step's env, the keys would be in every step's: the pull request's setup and tests, and
    # the steps after them, which run a toolkit the setup could have changed.
    if env.get("OBJECT_STORE_ACCESS_KEY") or env.get("OBJECT_STORE_SECRET_KEY"):
        raise BadInput(
            "give the object store's keys as the inputs object-store-access-key and "
            "object-store-secret-key, not in env: there every step of the action would hold them"
        )


def project_dir(env: Mapping[str, str]) -> str:
    """The directory the setup and the tests run in, absolute."""
    directory = Path(env.get("GITHUB_WORKSPACE") or os.getcwd()) / env.get("WORKING_DIRECTORY", ".")
    if "\n" in str(directory) or "\r" in str(directory):
        raise BadInput("working-directory must be one line")
    return str(directory)


def escape(data: str) -> str:
    """Workflow-command data escaped as GitHub's toolkit does (% CR LF)."""
    return data.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def main() -> int:
    try:
        check(os.environ)
        directory = project_dir(os.environ)
    except BadInput as exc:
        # The bytes as the step was given them, whatever their encoding.
        sys.stdout.buffer.write(os.fsencode(f"::error title=attest::{escape(str(exc))}\n"))
        return USAGE_EXIT
    if os.environ.get("GITHUB_OUTPUT"):
        with open(os.environ["GITHUB_OUTPUT"], "a", encoding="utf-8", errors="surrogateescape") as out:
            out.write(f"project-dir={directory}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
