"""The step that runs inside the namespace: loopback up, probe, egress record, privileges, exec.

Invoked as `python -m attest_toolkit.sandbox --strategy S [--probe-out F] [...] -- CMD ...`. It never
returns: it execs CMD, or prints one line and exits 3. The outer process reads F (JSON) to learn the
egress record, or why the command could not be started.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import sys
from pathlib import Path
from typing import NoReturn

from .egress import ENV_GUARD, GUARD_BLOCK, Egress, egress_record, to_environ
from .netif import bring_up
from .probe import LOOPBACK, Probe, run_probe
from .strategy import ALREADY_ISOLATED, GUARD, NAMESPACE_STRATEGIES, SUDO_UNSHARE

EXIT_CANNOT_RUN = 3
# sudo adds these; the command should see the environment it was given, not sudo's.
_SUDO_VARIABLES = ("SUDO_COMMAND", "SUDO_USER", "SUDO_UID", "SUDO_GID", "SUDO_HOME", "SUDO_PS1")


class InnerError(Exception):
    pass


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="attest-sandbox-inner")
    parser.add_argument("--strategy", required=True, choices=[*NAMESPACE_STRATEGIES, GUARD])
    parser.add_argument("--probe-out", type=Path)
    parser.add_argument("--user", type=int)
    parser.add_argument("--group", type=int)
    parser.add_argument("--groups", default="")
    parser.add_argument("--setenv", action="append", default=[])
    parser.add_argument("--unsetenv", action="append", default=[])
    return parser


def _loopback_up(strategy: str) -> None:
    try:
        bring_up(LOOPBACK)
    except OSError as exc:
        # An isolated container has loopback up already and may lack CAP_NET_ADMIN; the probe decides.
        if strategy != ALREADY_ISOLATED:
            raise InnerError(f"cannot bring {LOOPBACK} up: {exc.strerror or exc}") from exc


def _egress(strategy: str, probe: Probe) -> Egress:
    if probe.isolated and probe.loopback:
        named = ALREADY_ISOLATED if strategy == GUARD else strategy
        return egress_record("none", True, probe.describe(), named)
    if strategy == GUARD:
        return egress_record("guard", False, probe.describe(), None)
    raise InnerError(f"isolation could not be verified ({probe.why_not()}): {probe.describe()}")


def _environment(args: argparse.Namespace, egress: Egress) -> dict[str, str]:
    env = dict(os.environ)
    if args.strategy == SUDO_UNSHARE:
        for name in _SUDO_VARIABLES:
            env.pop(name, None)
    for name in args.unsetenv:
        env.pop(name, None)
    for item in args.setenv:
        name, _, value = item.partition("=")
        env[name] = value
    env.update(to_environ(egress))
    if args.strategy == GUARD:
        env[ENV_GUARD] = GUARD_BLOCK
    return env


def _drop_privileges(args: argparse.Namespace) -> None:
    """Become the invoking user again (sudo path), so files written inside stay theirs."""
    if args.user is None:
        return
    groups = [int(g) for g in args.groups.split(",") if g]
    gid = args.group if args.group is not None else args.user
    try:
        os.setgroups(groups)
        os.setgid(gid)
        os.setuid(args.user)
    except OSError as exc:
        raise InnerError(f"cannot drop back to uid {args.user}: {exc.strerror or exc}") from exc


def _write_probe_out(path: Path | None, doc: dict) -> None:
    if path is None:
        return
    # The outer process created the file, so it stays the invoker's even when written as root.
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(doc, fh)


def _start(args: argparse.Namespace, command: list[str]) -> NoReturn:
    if not command:
        raise InnerError("no command to run")
    if args.strategy != GUARD:
        _loopback_up(args.strategy)
    egress = _egress(args.strategy, run_probe())
    env = _environment(args, egress)
    program = shutil.which(command[0], path=env.get("PATH"))
    if program is None:
        raise InnerError(f"command not found: {command[0]}")
    try:
        _write_probe_out(args.probe_out, {"egress": egress})
    except OSError as exc:
        raise InnerError(f"cannot write the probe result to {args.probe_out}: {exc.strerror or exc}") from exc
    _drop_privileges(args)
    try:
        os.execve(program, command, env)
    except OSError as exc:
        raise InnerError(f"cannot run {command[0]}: {exc.strerror or exc}") from exc


def main(argv: list[str] | None = None) -> NoReturn:
    argv = sys.argv[1:] if argv is None else argv
    # Split at the first "--" here: everything after it is the command, whatever options it carries.
    cut = argv.index("--") if "--" in argv else len(argv)
    args = _parser().parse_args(argv[:cut])
    try:
        _start(args, argv[cut + 1 :])
    except InnerError as exc:
        if args.probe_out is None:
            print(f"attest: sandbox: {exc}", file=sys.stderr)
        else:  # the outer process reports it, once
            with contextlib.suppress(OSError):
                _write_probe_out(args.probe_out, {"error": str(exc)})
        sys.exit(EXIT_CANNOT_RUN)
