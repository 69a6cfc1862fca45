"""Process 1 of the sandbox's PID namespace: run the command as a child, pass signals on, reap.

The sandbox gives the command its own PID namespace, so no process outside it can be named (traced,
signalled, or entered through /proc/PID/root, cwd or ns). The first process of a PID namespace
ignores signals it has no handler for and inherits every orphan; a test runner is not written for
that, so this small init runs it instead and exits with its status.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Mapping
from typing import NoReturn

# Signals sent to one process (kill, timeout) are passed on. Those a terminal sends to the whole process
# group reach the command by themselves: this process ignores them, after the command has started so
# it does not inherit that.
FORWARDED = (signal.SIGTERM, signal.SIGUSR1, signal.SIGUSR2)
GROUP_SIGNALS = (signal.SIGINT, signal.SIGQUIT, signal.SIGHUP)


def run_as_init(program: str, argv: list[str], env: Mapping[str, str]) -> NoReturn:
    """Start argv, pass FORWARDED signals on to it, reap every child, exit as it exited."""
    sys.exit(supervise(program, argv, env))


def supervise(program: str, argv: list[str], env: Mapping[str, str], pass_fds: tuple[int, ...] = ()) -> int:
    """Start argv, pass FORWARDED signals on to it, reap every child; its exit code (128+N for
    signal N, as a shell says)."""
    child = subprocess.Popen(argv, executable=program, env=dict(env), pass_fds=pass_fds)

    def forward(received: int, _frame: object) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(child.pid, received)

    for signum in FORWARDED:
        signal.signal(signum, forward)
    for signum in GROUP_SIGNALS:
        signal.signal(signum, signal.SIG_IGN)
    while True:
        pid, status = os.wait()  # orphans of the namespace are reaped here too
        if pid == child.pid:
            break
    code = os.waitstatus_to_exitcode(status)
    return 128 - code if code < 0 else code
