"""The steps that run inside the namespaces, in two stages, before the command.

Stage one runs with the privileges the strategy gave it (root, or root of a user namespace): it
brings loopback up, makes the private /tmp and hides the outside's sockets (`mounts`), then execs
util-linux `setpriv` to set no_new_privs, clear the capability sets (the bounding set too, where it
may) and, on the sudo path, become the invoking user again. When the run names files directly under
/tmp, stage one runs setpriv as its child instead, stays the namespace's process 1, and copies those
files back out when the command has ended (`tmpfiles`). Stage two (`--confined`) runs with what
the command will have: it probes the network and tries the escapes (`probe`, `confine`), writes the
egress record, and runs the command (as the namespace's process 1 when there is a PID namespace and
stage one did not stay, see `init`).

Invoked as `python -c BOOT --strategy S [--probe-out F] [...] -- CMD ...`. It never returns: the
command runs, or it prints one line and exits 3. The outer process reads F (JSON) to learn the egress
record, or why the command could not be started.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from pathlib import Path
from typing import NoReturn

from . import mounts
from .confine import read_status
from .egress import ENV_GUARD, GUARD_BLOCK, Egress, egress_record, to_environ
from .init import run_as_init, supervise
from .netif import bring_up
from .probe import LOOPBACK, Probe, run_probe
from .strategy import (
    ALREADY_ISOLATED,
    GUARD,
    MOUNT_STRATEGIES,
    NAMESPACE_STRATEGIES,
    SUDO_UNSHARE,
    boot_argv,
    import_root,
)
from .tmpfiles import TmpFiles, direct_names

EXIT_CANNOT_RUN = 3
CAP_SETPCAP = 8
# sudo adds these; the command should see the environment it was given, not sudo's.
_SUDO_VARIABLES = ("SUDO_COMMAND", "SUDO_USER", "SUDO_UID", "SUDO_GID", "SUDO_HOME", "SUDO_PS1")


class InnerError(Exception):
    pass


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="attest-sandbox-inner")
    parser.add_argument("--strategy", required=True, choices=[*NAMESPACE_STRATEGIES, GUARD])
    parser.add_argument("--probe-out", type=Path)
    parser.add_argument("--probe-fd", type=int)
    parser.add_argument("--outer-net-fd", type=int)
    parser.add_argument("--confined", action="store_true")
    parser.add_argument("--tmp", default="shared (no mount namespace)")
    parser.add_argument("--user", type=int)
    parser.add_argument("--group", type=int)
    parser.add_argument("--groups", default="")
    parser.add_argument("--setenv", action="append", default=[])
    parser.add_argument("--unsetenv", action="append", default=[])
    return parser


def _write(fd: int | None, doc: dict) -> None:
    """Replace the probe result the outer process will read (the descriptor was opened before any
    mount, so it reaches the outer process's file even when /tmp is private)."""
    if fd is None:
        return
    os.ftruncate(fd, 0)
    os.pwrite(fd, json.dumps(doc).encode(), 0)


def _is_net_namespace(fd: int | None) -> bool:
    try:
        return fd is not None and os.readlink(f"/proc/self/fd/{fd}").startswith("net:[")
    except OSError:  # sudo closes inherited descriptors
        return False


# --- stage one: privileged set-up ------------------------------------------------------------------


def _loopback_up(strategy: str) -> None:
    try:
        bring_up(LOOPBACK)
    except OSError as exc:
        # An isolated container has loopback up already and may lack CAP_NET_ADMIN; the probe decides.
        if strategy != ALREADY_ISOLATED:
            raise InnerError(f"cannot bring {LOOPBACK} up: {exc.strerror or exc}") from exc


def _private_filesystem(
    args: argparse.Namespace, command: list[str], outside: list[str]
) -> tuple[str, TmpFiles | None]:
    """A private /tmp (what the run names stays, the session's sockets do not), no per-user runtime
    or screen dirs, and no socket of the outside world: engine sockets and `outside` covered. The
    files named directly under /tmp come back with what is returned (see `tmpfiles`)."""
    session = set(mounts.SESSION_SOCKET_VARIABLES)
    environ = [v for k, v in os.environ.items() if k not in session]
    setenv = [item for item in args.setenv if item.partition("=")[0] not in session]
    named = mounts.named_tmp_paths([*command, *environ, *setenv, sys.executable, sys.prefix, import_root()])
    files = TmpFiles(
        os.open(mounts.TMP, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC), names=direct_names(named)
    )
    try:
        tmp = mounts.private_tmp(named)
        mounts.private_session_dirs()
        hidden = mounts.hide_engine_sockets()
        others = mounts.hide_sockets(outside)
    except (mounts.MountError, OSError) as exc:
        files.close()
        raise InnerError(f"cannot give the command a private /tmp: {exc}") from exc
    described = (
        tmp
        + (f"; hidden sockets: {', '.join(hidden)}" if hidden else "")
        + (f"; {len(others)} other outside socket(s) hidden" if others else "")
    )
    if not tmp.startswith("private") or not files.names:  # shared /tmp: the files are there already
        files.close()
        return described, None
    _say(files.copy_in())
    return described, files


def _say(problems: list[str]) -> None:
    for line in problems:
        print(f"attest: sandbox: {line}", file=sys.stderr)


def _outside_sockets(fd: int | None) -> list[str]:
    """The outer network namespace's socket paths, which the outer process wrote in the probe file
    before it started the sandbox (this step replaces them with its outcome)."""
    if fd is None:
        return []
    try:
        doc = json.loads(os.pread(fd, 64 * 1024 * 1024, 0) or b"{}")
    except (OSError, ValueError):
        return []
    sockets = doc.get("outside_sockets") if isinstance(doc, dict) else None
    return [p for p in sockets if isinstance(p, str)] if isinstance(sockets, list) else []


def _setpriv_options(args: argparse.Namespace) -> list[str]:
    options = ["--no-new-privs", "--inh-caps=-all"]
    _, caps = read_status(Path("/proc/self/status").read_text(encoding="ascii"))
    if caps.get("CapEff", 0) >> CAP_SETPCAP & 1:  # without it the bounding set cannot shrink
        options.append("--bounding-set=-all")
    if args.user is not None:
        groups = [g for g in args.groups.split(",") if g]
        gid = args.group if args.group is not None else args.user
        options += ["--reuid", str(args.user), "--regid", str(gid)]
        options += ["--groups", ",".join(groups)] if groups else ["--clear-groups"]
    return options


def _confined_argv(args: argparse.Namespace, command: list[str], out: int | None, tmp: str) -> list[str]:
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        raise InnerError("setpriv not found: install util-linux, which drops the command's privileges")
    stage_two = ["--confined", "--strategy", args.strategy, "--tmp", tmp]
    if out is not None:
        stage_two += ["--probe-fd", str(out)]
    if args.outer_net_fd is not None:
        stage_two += ["--outer-net-fd", str(args.outer_net_fd)]
    for item in args.setenv:
        stage_two += ["--setenv", item]
    for name in args.unsetenv:
        stage_two += ["--unsetenv", name]
    return [setpriv, *_setpriv_options(args), "--", *boot_argv(), *stage_two, "--", *command]


def _stage_one(args: argparse.Namespace, command: list[str], out: int | None) -> NoReturn:
    if args.strategy == GUARD:  # no namespace, nothing to drop: the guard is reported unverified
        _stage_two(args, command, out)
    _loopback_up(args.strategy)
    files = None
    if args.strategy in MOUNT_STRATEGIES:
        tmp, files = _private_filesystem(args, command, _outside_sockets(out))
    else:
        tmp = args.tmp
    argv = _confined_argv(args, command, out, tmp)
    inherited = tuple(fd for fd in (out, args.outer_net_fd) if fd is not None)
    for fd in inherited:
        os.set_inheritable(fd, True)
    if files is not None:
        _run_and_return(argv, inherited, files, args)
    try:
        os.execv(argv[0], argv)
    except OSError as exc:
        raise InnerError(f"cannot run setpriv: {exc.strerror or exc}") from exc


def _run_and_return(
    argv: list[str], inherited: tuple[int, ...], files: TmpFiles, args: argparse.Namespace
) -> NoReturn:
    """Run the confined stage as a child (this process stays the namespace's init, holding the real
    /tmp, which the command cannot reach: it has no capabilities left to trace or enter this process),
    then copy the named files back with the invoker's identity, and exit as the command did."""
    try:
        code = supervise(argv[0], argv, os.environ, pass_fds=inherited)
    except OSError as exc:
        raise InnerError(f"cannot run setpriv: {exc.strerror or exc}") from exc
    for fd in inherited:
        os.close(fd)
    try:
        _become_invoker(args)
    except OSError as exc:
        _say([f"the files named under /tmp not returned: cannot drop privileges: {exc.strerror or exc}"])
        sys.exit(code)
    _say(files.copy_back())
    files.close()
    sys.exit(code)


def _become_invoker(args: argparse.Namespace) -> None:
    """On the sudo path, take the invoker's identity: what is written outside is theirs, and only
    where the kernel lets them write (another user's file in the sticky /tmp stays as it is)."""
    if args.user is None:
        return
    gid = args.group if args.group is not None else args.user
    os.setgroups([int(g) for g in args.groups.split(",") if g])
    os.setresgid(gid, gid, gid)
    os.setresuid(args.user, args.user, args.user)


# --- stage two: confined, the command's own privileges ---------------------------------------------


def _egress(strategy: str, probe: Probe, tmp: str) -> Egress:
    if probe.isolated and probe.loopback:
        named = ALREADY_ISOLATED if strategy == GUARD else strategy
        return egress_record("none", True, f"{probe.describe()}; /tmp: {tmp}", named)
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


def _lookup(name: str, path: str | None) -> str | None:
    """The program execvp would run: a name with a slash as it is (exec decides), else PATH's."""
    if "/" in name:
        return name if os.path.lexists(name) else None
    return shutil.which(name, path=path)


def _stage_two(args: argparse.Namespace, command: list[str], out: int | None) -> NoReturn:
    outer = args.outer_net_fd if _is_net_namespace(args.outer_net_fd) else None
    probe = run_probe(outer_net_fd=outer)
    if outer is not None:
        os.close(outer)  # the command must never hold a way back to the outer network
    egress = _egress(args.strategy, probe, args.tmp)
    env = _environment(args, egress)
    program = _lookup(command[0], env.get("PATH"))
    if program is None:
        raise InnerError(f"command not found: {command[0]}")
    _write(out, {"egress": egress})
    if out is not None:
        os.close(out)
    if os.getpid() == 1:
        run_as_init(program, command, env)
    try:
        os.execve(program, command, env)
    except OSError as exc:
        raise InnerError(f"cannot run {command[0]}: {exc.strerror or exc}") from exc


def _open_out(args: argparse.Namespace) -> int | None:
    if args.probe_fd is not None:
        return args.probe_fd
    if args.probe_out is None:
        return None
    # The outer process created the file, so it stays the invoker's even when written as root.
    return os.open(args.probe_out, os.O_RDWR | os.O_CLOEXEC)


def main(argv: list[str] | None = None) -> NoReturn:
    argv = sys.argv[1:] if argv is None else argv
    # Split at the first "--" here: everything after it is the command, whatever options it carries.
    cut = argv.index("--") if "--" in argv else len(argv)
    args = _parser().parse_args(argv[:cut])
    command = argv[cut + 1 :]
    if not _is_net_namespace(args.outer_net_fd):
        args.outer_net_fd = None  # checked before anything else is opened and could take its number
    out = None
    try:
        out = _open_out(args)
        if not command:
            raise InnerError("no command to run")
        (_stage_two if args.confined else _stage_one)(args, command, out)
    except (InnerError, OSError) as exc:
        message = str(exc) if isinstance(exc, InnerError) else f"cannot start the sandbox: {exc}"
        if out is None:
            print(f"attest: sandbox: {message}", file=sys.stderr)
        else:  # the outer process reports it, once
            try:
                _write(out, {"error": message})
            except OSError:
                print(f"attest: sandbox: {message}", file=sys.stderr)
        sys.exit(EXIT_CANNOT_RUN)
