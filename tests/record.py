"""Re-record the project's own fixtures in `tests/recordings/`, from the repository root:

    .venv/bin/python tests/record.py

Each recording is made by `attest capture` running the capture agent (`tests/agents/capture_agent.py`)
against the scripted provider (`tests/upstream.py` serving `tests/scripted.py`), the way a user records
one; an existing recording is re-recorded with `attest capture --refresh`, which re-runs its recorded
command. `tests/integration/test_recordings.py` checks that doing so changes nothing.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import scripted
from capture_helpers import capture_env, run_attest
from upstream import FakeUpstream, Reply

REPO = Path(__file__).resolve().parent.parent
RECORDINGS = REPO / "tests" / "recordings"
AGENT = "tests/agents/capture_agent.py"

# name: (the agent's mode, the provider's scripted answers)
RECORDED: dict[str, tuple[str, Callable[[], list[Reply]]]] = {
    "flow": ("flow", scripted.flow_replies),
    "stream": ("stream", lambda: [scripted.chat_text_stream("Hello! How can I help you today?")]),
}


def record(name: str, recordings: Path = RECORDINGS) -> subprocess.CompletedProcess[str]:
    """Capture (or refresh) recording `name` into `recordings`, run from the repository root."""
    mode, replies = RECORDED[name]
    # The recorded command says `python`: this interpreter comes first on PATH, on any machine.
    path_var = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    exists = (recordings / f"{name}.attest.json").exists()
    how = ["--refresh", name, "--yes"] if exists else ["--name", name, "--", "python", AGENT, mode]
    with FakeUpstream(replies()) as upstream:
        env = capture_env(upstream.url, PATH=path_var)
        return run_attest("capture", "--fixtures-dir", str(recordings), *how, env=env, cwd=REPO)


def main() -> int:
    for name in RECORDED:
        done = record(name)
        sys.stderr.write(done.stderr)
        if done.returncode != 0:
            return done.returncode
    return 0


if __name__ == "__main__":
    sys.exit(main())
