"""A real project's vcr-marked suite, run as it ships (pytest-recording) and then on attest, unedited.

    python bench/vcr_suites.py CHECKOUT --python CHECKOUT_VENV/bin/python --cassettes tests/models \\
        tests/models/test_openai.py tests/models/test_anthropic.py

CHECKOUT is the project's own clone and CHECKOUT_VENV a virtualenv with its test dependencies,
pytest-recording and attest-toolkit installed. The script follows the README's migration ("4. Migrate
from vcrpy") and nothing else: it runs the tests under pytest-recording (replay, `--record-mode=none`),
imports the cassettes with `attest fixture import --tree`, and runs the same tests with `--attest-vcr`
and `CI=1` (strict replay, no key). With `--rebase` it then takes the README's last step: one
`--attest-record=rebase` run (no key, no provider called) rewrites the requests that drifted since
the cassettes were recorded, and the strict replay runs again. It prints one markdown row per run:
pass counts and wall times, measured in this one invocation. The checkout gains a
`tests/attest/fixtures` directory.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path

KEY_VARS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL", "CI")
COUNTS = re.compile(r"(\d+) (passed|failed|skipped|errors?|xfailed|xpassed)")


def clean_env(**extra: str) -> dict[str, str]:
    """This machine's environment without provider keys or base URLs: both runs replay, offline."""
    env = {k: v for k, v in os.environ.items() if k not in KEY_VARS and not k.startswith("ATTEST_")}
    return {**env, **extra}


def run_pytest(python: str, checkout: Path, tests: list[str], env: dict[str, str], *args: str) -> dict:
    argv = [python, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider", *args, *tests]
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=checkout, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    last = next((line for line in reversed(done.stdout.splitlines()) if COUNTS.search(line)), "")
    counts = {
        kind.rstrip("s") if kind.startswith("error") else kind: int(n) for n, kind in COUNTS.findall(last)
    }
    return {"counts": counts, "wall": wall, "summary": last.strip("= ")}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkout", type=Path)
    parser.add_argument("tests", nargs="+", help="test files or node ids, relative to the checkout")
    parser.add_argument("--python", required=True, help="the checkout's virtualenv python")
    parser.add_argument(
        "--cassettes", required=True, help="the directory `attest fixture import --tree` reads"
    )
    parser.add_argument("--label", default=None, help="the project's name in the table")
    parser.add_argument(
        "--rebase", action="store_true", help="then rebase the fixtures once and replay strictly again"
    )
    args = parser.parse_args()
    checkout, label = args.checkout.resolve(), args.label or args.checkout.name

    shipped = run_pytest(args.python, checkout, args.tests, clean_env(), "--record-mode=none")
    imported = subprocess.run(
        [args.python, "-m", "attest_toolkit.cli", "fixture", "import", "--tree", args.cassettes, "--force"],
        cwd=checkout,
        env=clean_env(CI="1"),
        capture_output=True,
        text=True,
        check=False,
    )
    print(imported.stderr.strip().splitlines()[-1] if imported.stderr.strip() else "import: no output")
    attest = run_pytest(args.python, checkout, args.tests, clean_env(CI="1"), "--attest-vcr")
    runs = [("pytest-recording, as shipped", shipped), ("attest (--attest-vcr, CI=1)", attest)]
    if args.rebase:
        rebased = run_pytest(
            args.python, checkout, args.tests, clean_env(), "--attest-vcr", "--attest-record=rebase"
        )
        print(f"rebase: {rebased['summary']}")
        again = run_pytest(args.python, checkout, args.tests, clean_env(CI="1"), "--attest-vcr")
        runs.append(("attest after one --attest-record=rebase (CI=1)", again))

    print("| project | run | passed | failed | other | wall |")
    print("|---|---|---|---|---|---|")
    for name, result in runs:
        counts = result["counts"]
        other = sum(v for k, v in counts.items() if k not in ("passed", "failed"))
        row = (
            label,
            name,
            counts.get("passed", 0),
            counts.get("failed", 0),
            other,
            f"{result['wall']:.1f} s",
        )
        print("| " + " | ".join(str(c) for c in row) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
