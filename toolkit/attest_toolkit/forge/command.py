"""The run step: the test command with the network off, and the rule that a run without a report fails.

Three ways to run it: on the host in `attest sandbox`'s namespace, in a container engine's image with
`--network none`, or as an agent image under `attest replay --image`. What the set-up gave the tests
(variables, PATH entries) is applied inside the sandbox, to the command alone, never to this process.
Everything this step does after the command is imported before it starts: the command shares the
step's files and could rewrite a module loaded later.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from ..errors import AttestError, UsageError
from ..replay.modes import Mode
from ..sandbox import run_isolated
from ..sandbox.strategy import boot_argv
from .step import Step, StepFailed

# The object store's keys are for the step that pulls the fixtures: never the tests'.
STORE_KEYS = ("OBJECT_STORE_ACCESS_KEY", "OBJECT_STORE_SECRET_KEY")
Isolation = Literal["host", "container", "image"]
Network = Literal["none", "guard"]
NO_REPORT = (
    "no report was written to {report} (exit {status}): the command must run pytest with attest-toolkit"
    " installed, or Vitest with @attest-ai/vitest/reporter"
)


@dataclass(frozen=True)
class RunInputs:
    command: str
    report: str = "attest-report.json"
    mode: Mode = Mode.STRICT
    network: Network = "none"
    isolation: Isolation = "host"
    tests: tuple[str, ...] = ()  # the selected ids, appended to the command's arguments
    engine: str | None = None  # container: docker or podman
    image: str | None = None  # container: the image to run
    container_options: str = ""
    agent_image: str | None = None  # image: the agent's image replayed
    fixture: str | None = None  # image: its fixture
    fixtures_dir: str = "tests/attest/fixtures"
    workspace: Path | None = None  # container: the directory mounted into it
    setup_env: Mapping[str, str] = field(default_factory=dict)  # for the command only
    setup_path: Sequence[str] = ()  # directories put first on the command's PATH, first one first
    withheld: tuple[str, ...] = ()  # variables the command never gets (the forge's tokens)


def command_env(inputs: RunInputs, report: Path, environ: Mapping[str, str]) -> dict[str, str]:
    """The environment the command starts in (before the set-up's own)."""
    env = {k: v for k, v in environ.items() if k not in STORE_KEYS and k not in inputs.withheld}
    # ATTEST_REPORT: where the Vitest reporter (@attest-ai/vitest/reporter) writes the same report.
    env.update(CI="true", ATTEST_REPLAY=inputs.mode, ATTEST_REPORT=str(report))
    # pytest reads PYTEST_ADDOPTS wherever the command starts it (make, tox, uv run ...).
    added = f"--attest-report={report}"
    env["PYTEST_ADDOPTS"] = f"{env['PYTEST_ADDOPTS']} {added}" if env.get("PYTEST_ADDOPTS") else added
    return env


def setup_assignments(inputs: RunInputs, environ: Mapping[str, str]) -> list[str]:
    """`NAME=value` words for `env`, inside the sandbox: PATH with the set-up's entries, then its variables."""
    words = []
    if inputs.setup_path:
        words.append("PATH=" + ":".join([*inputs.setup_path, environ.get("PATH", "")]))
    return words + [f"{name}={value}" for name, value in inputs.setup_env.items()]


def shell_argv(shell: str, inputs: RunInputs) -> list[str]:
    """The command as a shell line, the selected ids its arguments (never spliced into the line)."""
    return [shell, "-c", f'{inputs.command} "$@"', "attest-command", *inputs.tests]


def host_run(inputs: RunInputs, env: dict[str, str]) -> int:
    argv = ["env", *setup_assignments(inputs, env), *shell_argv("bash", inputs)]
    return run_isolated(argv, network=inputs.network, env=env).returncode


def container_run(inputs: RunInputs, env: dict[str, str]) -> int:
    cwd = Path.cwd()
    workspace = inputs.workspace or cwd
    if not cwd.is_relative_to(workspace):
        raise StepFailed("the working directory is outside the workspace mounted into the container")
    argv = [str(inputs.engine), "run", "--rm", "--network", "none", "--user", f"{os.getuid()}:{os.getgid()}"]
    argv += [
        "-e",
        "HOME=/tmp",
        "-e",
        "CI",
        "-e",
        "ATTEST_REPLAY",
        "-e",
        "ATTEST_REPORT",
        "-e",
        "PYTEST_ADDOPTS",
    ]
    argv += ["-v", f"{workspace}:{workspace}", "-w", str(cwd), *inputs.container_options.split()]
    argv += [str(inputs.image), "sandbox", "--network", inputs.network, "--", *shell_argv("sh", inputs)]
    return subprocess.run(argv, env=env, check=False).returncode


def image_run(inputs: RunInputs, report: Path, env: dict[str, str]) -> int:
    # The command's words are the image's arguments, split as a shell would without running one.
    args = shlex.split(inputs.command)
    argv = [*boot_argv("attest_toolkit.cli"), "replay", "--image", str(inputs.agent_image)]
    argv += ["--name", str(inputs.fixture), "--fixtures-dir", inputs.fixtures_dir, "--report", str(report)]
    return subprocess.run([*argv, *(["--", *args] if args else [])], env=env, check=False).returncode


def run_command(inputs: RunInputs, report: Path, environ: Mapping[str, str]) -> int:
    env = command_env(inputs, report, environ)
    try:
        if inputs.isolation == "image":
            return image_run(inputs, report, env)
        if inputs.engine:
            return container_run(inputs, env)
        return host_run(inputs, env)
    except StepFailed:
        raise
    except AttestError as exc:  # the sandbox could not start: as `attest sandbox` exits, 3
        print(f"attest: {exc}", file=sys.stderr, flush=True)
        return exc.exit_code


def run_step(inputs: RunInputs, step: Step, environ: Mapping[str, str]) -> int:
    """Run the tests and tell the later steps the report's path and the command's exit code; StepFailed
    (exit 3, or the command's own code) when it wrote no report. The step's exit code."""
    report = Path(os.path.realpath(inputs.report))
    try:
        report.unlink(missing_ok=True)  # a stale report must not pass for this run's
    except OSError as exc:
        raise UsageError(
            f"cannot remove the last run's report: {exc.strerror or exc}", inputs.report
        ) from None
    status = run_command(inputs, report, environ)
    step.forget_writes()
    print(f"attest: the test command exited {status}", flush=True)
    if not _written(report):
        raise StepFailed(NO_REPORT.format(report=inputs.report, status=status), status or 3)
    step.outputs({"report": str(report), "exit-code": str(status)})
    return 0


def _written(report: Path) -> bool:
    try:
        return report.stat().st_size > 0
    except OSError:
        return False
