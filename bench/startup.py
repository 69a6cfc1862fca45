"""Engine start: `attest-engine serve` from spawn to its ready line, and the seed's `--serve`
handshake (`attest-engine replay --serve --name N` from spawn to its {"env"} line).

Floors, in the same run: a bare `python -c pass`, and `python -c "import aiohttp"` (the library the
engine's start used to wait for; it now imports it when a request first needs it).

What every user pays, replay or not: the CPU time (user and system, steadier than wall time on a loaded
machine) of a one-test pytest run in a project as `attest init` leaves it (a
fixtures directory, no test replaying) with attest's plugin against the same run without it, both with
plugin autoloading off and one plugin named in PYTEST_PLUGINS (attest's, or one with no hooks), so the
plugin is the only difference, and again with this environment's plugins
against `-p no:attest`; and `attest --help` / `attest --version` to their exit against `python -c pass`
and `python -c "import typer"` (what the command line is built on).

Both sides start from compiled bytecode, as an installed package does (pip compiles it at install):
aiohttp's is in site-packages, and the package's own is compiled first here (common.compile_package).
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from common import (
    Row,
    chat_request,
    chat_response,
    clean_env,
    compile_package,
    console_script,
    exchange,
    median,
    ms,
    ratio,
    write_fixture,
)

TARGET = 0.300
TARGET_RATIO = 0.5  # of the aiohttp import: the engine no longer waits for it
PLUGIN_RATIO = 1.1  # a pytest run with the plugin, no test replaying, against the same run without it
CLI_TARGET = 0.300  # `attest --help` and `attest --version`, to their exit


@dataclass(frozen=True)
class Size:
    runs: int


FULL, QUICK = Size(runs=7), Size(runs=3)


def until_line(argv: list[str], key: str, stop: str | None) -> float:
    """Seconds from spawn to the first stdout line holding `key`; then ends the process politely."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        argv,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=clean_env(),
        text=True,
    )
    line = proc.stdout.readline() if proc.stdout else ""
    elapsed = time.perf_counter() - start
    try:
        if key not in json.loads(line):
            raise ValueError(line)
    except ValueError:
        proc.kill()
        err = proc.communicate()[1]
        raise AssertionError(f"{argv[1:3]}: expected a {key!r} line, got {line!r}\n{err[-2000:]}") from None
    proc.communicate(input=(stop + "\n") if stop else "", timeout=30)
    return elapsed


def until_exit(argv: list[str], cwd: Path | None = None, **env: str) -> float:
    start = time.perf_counter()
    subprocess.run(argv, env=clean_env(**env), cwd=cwd, check=True, capture_output=True)
    return time.perf_counter() - start


def cpu_until_exit(argv: list[str], cwd: Path | None = None, **env: str) -> float:
    """The CPU seconds (user and system) the process spent: what it costs, whatever else loads the machine."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    until_exit(argv, cwd, **env)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def newcomer_project(workdir: Path) -> Path:
    """A project as `attest init` leaves it, with one test that does not replay."""
    project = workdir / "project"
    (project / "tests" / "attest" / "fixtures").mkdir(parents=True, exist_ok=True)
    (project / "tests" / "test_plain.py").write_text("def test_plain():\n    assert 1 + 1 == 2\n")
    (project / "no_plugin.py").write_text('"""A plugin with no hooks, the baseline\'s."""\n')
    return project


def pytest_cases(project: Path) -> dict[str, Callable[[], float]]:
    pytest_argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"]
    # Autoloading off, and one plugin named in PYTEST_PLUGINS: attest's, or one with no hooks (pytest
    # looks a named plugin up among the installed entry points first, the same lookup for both).
    alone = {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    runs: dict[str, tuple[list[str], dict[str, str]]] = {
        "pytest+attest": (pytest_argv, {**alone, "PYTEST_PLUGINS": "attest_toolkit.pytest_plugin"}),
        "pytest": (pytest_argv, {**alone, "PYTEST_PLUGINS": "no_plugin"}),
        "pytest+all": (pytest_argv, {}),
        "pytest+all-attest": ([*pytest_argv, "-p", "no:attest"], {}),
    }
    # A first run writes pytest's assertion-rewritten bytecode of the plugins' modules, as a user's first
    # run does; without it (PYTHONDONTWRITEBYTECODE) every run would rewrite and compile them again.
    for argv, env in runs.values():
        until_exit(argv, project, **env, PYTHONDONTWRITEBYTECODE="")
    return {name: partial(cpu_until_exit, argv, project, **env) for name, (argv, env) in runs.items()}


def cli_cases() -> dict[str, Callable[[], float]]:
    attest = console_script("attest")
    return {
        "attest --help": lambda: until_exit([attest, "--help"]),
        "attest --version": lambda: until_exit([attest, "--version"]),
        "typer": lambda: until_exit([sys.executable, "-c", "import typer"]),
    }


def run(workdir: Path, quick: bool = False) -> list[Row]:
    size = QUICK if quick else FULL
    compile_package()
    fixtures = workdir / "fixtures"
    write_fixture(fixtures, "hello", [exchange(chat_request("Say hello"), chat_response("Hello!"))])
    engine = console_script("attest-engine")
    cases = {
        # what the pytest plugin starts: the engine entry without the CLI layer
        "serve": lambda: until_line([sys.executable, "-m", "attest_toolkit.replay", "serve"], "ready", None),
        "cli": lambda: until_line([engine, "serve"], "ready", None),
        "handshake": lambda: until_line(
            [
                engine,
                "replay",
                "--serve",
                "--name",
                "hello",
                "--fixtures-dir",
                str(fixtures),
                "--mode",
                "strict",
            ],
            "env",
            "stop",
        ),
        "aiohttp": lambda: until_exit([sys.executable, "-c", "import aiohttp"]),
        "pass": lambda: until_exit([sys.executable, "-c", "pass"]),
        **pytest_cases(newcomer_project(workdir)),
        **cli_cases(),
    }
    samples: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(size.runs):  # interleaved, so machine noise hits every case alike
        for name, case in cases.items():
            samples[name].append(case())
    t = {name: median(values) for name, values in samples.items()}
    return engine_rows(t) + plugin_rows(t) + cli_rows(t)


def engine_rows(t: dict[str, float]) -> list[Row]:
    return [
        Row(
            "startup",
            'the plugin\'s engine (`python -m attest_toolkit.replay serve`) to ready vs `python -c "import aiohttp"`',
            ms(t["serve"]),
            ms(t["aiohttp"]),
            ratio(t["serve"], t["aiohttp"]),
            f"< {TARGET * 1000:.0f} ms, <= {TARGET_RATIO}x",
            t["serve"] < TARGET and t["serve"] <= TARGET_RATIO * t["aiohttp"],
        ),
        Row(
            "startup",
            "the plugin's engine to ready vs `python -c pass`",
            ms(t["serve"]),
            ms(t["pass"]),
            ratio(t["serve"], t["pass"]),
        ),
        Row(
            "startup",
            '`attest-engine serve` (through the CLI) to ready vs `python -c "import aiohttp"`',
            ms(t["cli"]),
            ms(t["aiohttp"]),
            ratio(t["cli"], t["aiohttp"]),
        ),
        Row(
            "startup",
            '`attest-engine replay --serve` to {"env"} vs `python -c "import aiohttp"`',
            ms(t["handshake"]),
            ms(t["aiohttp"]),
            ratio(t["handshake"], t["aiohttp"]),
        ),
    ]


def plugin_rows(t: dict[str, float]) -> list[Row]:
    alone, everything = t["pytest+attest"] / t["pytest"], t["pytest+all"] / t["pytest+all-attest"]
    return [
        Row(
            "startup",
            "CPU time of a one-test pytest run, no test replaying (a fixtures directory as `attest init` "
            "leaves it), with the plugin vs a plugin with no hooks (plugin autoloading off for both)",
            ms(t["pytest+attest"]),
            ms(t["pytest"]),
            ratio(t["pytest+attest"], t["pytest"]),
            f"<= {PLUGIN_RATIO}x",
            alone <= PLUGIN_RATIO,
        ),
        Row(
            "startup",
            "CPU time of the same run with this environment's pytest plugins vs `-p no:attest`",
            ms(t["pytest+all"]),
            ms(t["pytest+all-attest"]),
            ratio(t["pytest+all"], t["pytest+all-attest"]),
            f"<= {PLUGIN_RATIO}x",
            everything <= PLUGIN_RATIO,
        ),
    ]


def cli_rows(t: dict[str, float]) -> list[Row]:
    rows = [
        Row(
            "startup",
            f"`{name}` to its exit vs `python -c pass`",
            ms(t[name]),
            ms(t["pass"]),
            ratio(t[name], t["pass"]),
            f"< {CLI_TARGET * 1000:.0f} ms",
            t[name] < CLI_TARGET,
        )
        for name in ("attest --help", "attest --version")
    ]
    rows.append(
        Row(
            "startup",
            '`python -c "import typer"` (the command line\'s own floor) vs `python -c pass`',
            ms(t["typer"]),
            ms(t["pass"]),
            ratio(t["typer"], t["pass"]),
        )
    )
    return rows
