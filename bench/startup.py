"""Engine start: `attest-engine serve` from spawn to its ready line, and the seed's `--serve`
handshake (`attest-engine replay --serve --name N` from spawn to its {"env"} line).

Floors, in the same run: a bare `python -c pass`, and `python -c "import aiohttp"` (the library the
engine's start used to wait for; it now imports it when a request first needs it).

Both sides start from compiled bytecode, as an installed package does (pip compiles it at install):
aiohttp's is in site-packages, and the package's own is compiled first here (common.compile_package).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from dataclasses import dataclass
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
TARGET_RATIO = 0.6  # of the aiohttp import: the engine no longer waits for it


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


def until_exit(argv: list[str]) -> float:
    return _timed_run(argv)


def _timed_run(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, env=clean_env(), check=True, capture_output=True)
    return time.perf_counter() - start


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
    }
    samples: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(size.runs):  # interleaved, so machine noise hits every case alike
        for name, case in cases.items():
            samples[name].append(case())
    t = {name: median(values) for name, values in samples.items()}
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
