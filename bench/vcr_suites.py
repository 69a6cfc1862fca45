"""A real project's vcr-marked suite, run as it ships (pytest-recording) and then on attest, unedited.

    python bench/vcr_suites.py CHECKOUT --python CHECKOUT_VENV/bin/python --cassettes tests/models \\
        tests/models/test_openai.py tests/models/test_google.py

CHECKOUT is the project's own clone and CHECKOUT_VENV a virtualenv with its test dependencies,
pytest-recording and attest-toolkit installed. The script follows the migration guide
(docs/guides/migrate-vcrpy.md) and nothing else: it runs the tests under pytest-recording (replay,
`--record-mode=none`),
imports the cassettes with `attest fixture import --tree`, and runs the same tests with `--attest-vcr`
and `CI=1` (strict replay, no key). With `--rebase` it then takes the guide's last step: one
`--attest-record=rebase` run (no key, no provider called) rewrites the requests that drifted since
the cassettes were recorded, and the strict replay runs again. It prints one markdown row per run:
pass counts and wall times, measured in this one invocation. The checkout gains a
`tests/attest/fixtures` directory.

A failing test costs pytest far more than a passing one (it renders the traceback, reading and
compiling the test module's source for each entry), so the two whole-suite walls differ by their
failure counts as much as by replaying. The speed rows compare like with like: the tests that pass in
both runs, run again under each (taking turns, `--speed-runs` times each, the best wall kept), first as
a fresh CI machine runs them (none of pytest's rewritten bytecode: it rewrites every plugin module it
imports) and then again.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path

from attest_toolkit.providers import PROVIDERS

# Every provider's key and base-URL variables (the registry's), and CI: both runs replay, offline.
KEY_VARS = frozenset(
    var
    for p in PROVIDERS.values()
    for var in (*p.base_url_vars, *p.placeholder_vars, *([p.key_var] if p.key_var else []))
) | {"CI"}
COUNTS = re.compile(r"(\d+) (passed|failed|skipped|errors?|xfailed|xpassed)")


def clean_env(**extra: str) -> dict[str, str]:
    """This machine's environment without provider keys or base URLs: both runs replay, offline."""
    env = {k: v for k, v in os.environ.items() if k not in KEY_VARS and not k.startswith("ATTEST_")}
    return {**env, **extra}


def run_pytest(python: str, checkout: Path, tests: list[str], env: dict[str, str], *args: str) -> dict:
    argv = [python, "-m", "pytest", "-q", "-rp", "-p", "no:randomly", "-p", "no:cacheprovider", *args, *tests]
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=checkout, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    lines = done.stdout.splitlines()
    last = next((line for line in reversed(lines) if COUNTS.search(line)), "")
    counts = {
        kind.rstrip("s") if kind.startswith("error") else kind: int(n) for n, kind in COUNTS.findall(last)
    }
    passed = [line.removeprefix("PASSED ") for line in lines if line.startswith("PASSED ")]
    return {"counts": counts, "wall": wall, "summary": last.strip("= "), "passed": passed}


# What a fresh CI machine lacks and a developer's has: pytest's rewritten bytecode of every plugin's
# distribution and of the tests (pip wrote the ordinary bytecode when it installed them).
FORGET_REWRITES = r"""
import importlib.metadata, importlib.util, pathlib, site
roots = {pathlib.Path.cwd(), *map(pathlib.Path, site.getsitepackages())}
for dist in importlib.metadata.distributions():
    for ep in dist.entry_points.select(group="pytest11"):
        spec = importlib.util.find_spec(ep.value.partition(":")[0].split(".")[0])
        if spec and spec.origin:
            roots.add(pathlib.Path(spec.origin).parent)
for root in roots:
    for pyc in root.rglob("__pycache__/*-pytest-*.pyc"):
        pyc.unlink()
"""


def first_run(python: str, checkout: Path, tests: list[str], env: dict[str, str], flag: str) -> dict:
    """A run as a fresh CI machine's is: pytest rewrites and compiles every plugin module it imports."""
    subprocess.run([python, "-c", FORGET_REWRITES], cwd=checkout, check=True)
    return run_pytest(python, checkout, tests, {**env, "PYTHONDONTWRITEBYTECODE": ""}, flag)


def speed(python: str, checkout: Path, tests: list[str], runs: int) -> dict[str, dict[str, dict]]:
    """The fastest run of `tests` under pytest-recording and under attest, the two taking turns, on a
    fresh CI machine (`first`) and once pytest keeps its rewritten bytecode (`again`).

    Each first run writes the bytecode, as a user's does: under PYTHONDONTWRITEBYTECODE every later run
    would be a first run too, a cost of that setting, not of replaying."""
    variants = {
        "recording": (clean_env(), "--record-mode=none"),
        "attest": (clean_env(CI="1"), "--attest-vcr"),
    }
    done: dict[str, dict[str, list[dict]]] = {"first": {}, "again": {}}
    for _ in range(runs):
        for name, (env, flag) in variants.items():
            done["first"].setdefault(name, []).append(first_run(python, checkout, tests, env, flag))
            done["again"].setdefault(name, []).append(run_pytest(python, checkout, tests, env, flag))
    return {
        kind: {name: min(results, key=lambda r: r["wall"]) for name, results in by_name.items()}
        for kind, by_name in done.items()
    }


def row(label: str, name: str, result: dict, note: str = "") -> str:
    counts = result["counts"]
    other = sum(v for k, v in counts.items() if k not in ("passed", "failed"))
    cells = (
        label,
        name,
        counts.get("passed", 0),
        counts.get("failed", 0),
        other,
        f"{result['wall']:.1f} s{note}",
    )
    return "| " + " | ".join(str(c) for c in cells) + " |"


def arguments(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line, its paths made independent of the checkout pytest runs in."""
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
    parser.add_argument("--speed-runs", type=int, default=2, help="runs of the speed rows, each side")
    args = parser.parse_args(argv)
    args.checkout = args.checkout.resolve()
    args.label = args.label or args.checkout.name
    # pytest runs in the checkout, so a relative --python is taken from where it was typed. Not
    # resolved: a virtualenv's python is a link whose target is outside the virtualenv.
    args.python = os.path.abspath(args.python)
    return args


def main() -> int:
    args = arguments()
    checkout, label = args.checkout, args.label

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
        print(row(label, name, result))
    both = sorted(set(shipped["passed"]) & set(runs[-1][1]["passed"]))  # after the rebase, if any
    if both and args.speed_runs > 0:
        same = f"the {len(both)} tests passing in both"
        for kind, best in speed(args.python, checkout, both, args.speed_runs).items():
            when = "a fresh machine's first run" if kind == "first" else "run again"
            recording, ours = best["recording"], best["attest"]
            print(row(label, f"pytest-recording, {same}, {when}", recording))
            print(row(label, f"attest, {same}, {when}", ours, f" ({ours['wall'] / recording['wall']:.2f}x)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
