"""Runs an agent script under vcrpy, as a project's own suite records its cassettes.

    python vcr_recorder.py CASSETTE AGENT [ARGS...]

The agent runs in this process with `vcr.use_cassette(CASSETTE)` around it (vcrpy's YAML, record mode
`once`), so the cassette holds exactly what the agent's SDK sent and got, in the form vcrpy writes.
"""

from __future__ import annotations

import runpy
import sys

import vcr


def main() -> int:
    cassette, agent, *args = sys.argv[1:]
    sys.argv = [agent, *args]
    code: int | str | None = 0
    with vcr.use_cassette(cassette):
        try:
            runpy.run_path(agent, run_name="__main__")
        except SystemExit as exc:
            code = exc.code
    return code if isinstance(code, int) else 1


if __name__ == "__main__":
    sys.exit(main())
