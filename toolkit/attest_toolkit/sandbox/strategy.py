"""How to get a fresh network namespace here, and the argv that runs a command inside it.

Tried in order: the process is already isolated (a container run with `--network none`); root runs
`unshare --net`; a user with passwordless sudo runs `sudo -n unshare --net` and drops back to itself;
an unprivileged user namespace (`unshare --user --map-root-user --net`, the command runs as mapped
root). Each candidate is tried for real (`... true`) because a capability can be missing (a container
without CAP_SYS_ADMIN, user namespaces disabled) whatever the uid says. Each makes a network, a mount
and a PID namespace (`UNSHARE`): the mount namespace carries the private /tmp, the PID namespace
hides every process outside, so none can be traced, signalled or entered through /proc. Inside, the
inner step brings loopback up, drops every privilege, probes, and runs the command.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ..credentials.scan import TOKEN_PATTERNS
from ..errors import AttestError
from .probe import run_probe

ALREADY_ISOLATED = "already-isolated"
ROOT_UNSHARE = "root-unshare"
SUDO_UNSHARE = "sudo-unshare"
USERNS = "userns"
GUARD = "guard"
NAMESPACE_STRATEGIES = (ALREADY_ISOLATED, ROOT_UNSHARE, SUDO_UNSHARE, USERNS)
# The strategies that make their own namespaces, and so can give the command a private /tmp.
MOUNT_STRATEGIES = (ROOT_UNSHARE, SUDO_UNSHARE, USERNS)
UNSHARE = ["--net", "--mount", "--pid", "--fork", "--kill-child", "--mount-proc"]
NETWORKS = ("none", "guard")

# sudo rebuilds PATH (secure_path) and deletes loader variables even with --preserve-env; they are
# paths, not secrets, so the inner step gets them back on its command line and restores them.
_SUDO_RESET = re.compile(r"^(PATH|HOME|USER|LOGNAME|SHELL|TMPDIR|LD_\w+|PYTHON\w+|PERL\w*|RUBY\w+)$")
_TRIAL_TIMEOUT = 20


class SandboxError(AttestError):
    """The command cannot be run with the network off; the message names what was tried."""


@dataclass(frozen=True)
class Invoker:
    """Who runs the sandbox: the identity the sudo path drops back to."""

    uid: int
    gid: int
    groups: tuple[int, ...]

    @classmethod
    def current(cls) -> Invoker:
        return cls(os.getuid(), os.getgid(), tuple(os.getgroups()))


@dataclass
class Attempt:
    """The outcome of looking for a namespace: the chosen strategy, and why the others were not."""

    strategy: str | None = None
    refused: list[str] = field(default_factory=list)

    def explain(self) -> str:
        return "; ".join(self.refused)


def import_root() -> str:
    """The directory the attest_toolkit package is imported from."""
    return str(Path(__file__).resolve().parents[2])


def interpreter_argv() -> list[str]:
    """This Python, with the flags that keep it apart from its environment when it was started with
    them (the action's gate runs `python -I -X pycache_prefix=DIR`): a process it starts keeps them."""
    argv = [sys.executable]
    if sys.flags.isolated:
        argv.append("-I")
    if sys.pycache_prefix:
        argv += ["-X", f"pycache_prefix={sys.pycache_prefix}"]
    return argv


def boot_argv(module: str = "attest_toolkit.sandbox.inner") -> list[str]:
    """This Python running `module`'s main(): never `python -m`, which would import a package of that
    name from the working directory (the pull request's checkout) first, as root on the sudo path."""
    # The working directory ('' for -c) leaves the path; isolated mode never adds it.
    boot = f"import sys; sys.path[:] = [{import_root()!r}, *filter(None, sys.path)]; from {module} import main; main()"
    return [*interpreter_argv(), "-c", boot]


def inner_argv(
    strategy: str, argv: list[str], *, probe_out: Path | None = None, outer_net_fd: int | None = None
) -> list[str]:
    """The step that runs inside the namespace, then runs `argv`."""
    head = [*boot_argv(), "--strategy", strategy]
    if probe_out is not None:
        head += ["--probe-out", str(probe_out)]
    if outer_net_fd is not None:
        head += ["--outer-net-fd", str(outer_net_fd)]
    return [*head, "--", *argv]


def _sudo_restore_args(env: Mapping[str, str]) -> list[str]:
    """--setenv/--unsetenv options that give the command back the variables sudo would change."""
    args: list[str] = []
    for name in sorted(env):
        value = env[name]
        if _SUDO_RESET.match(name) and not any(p.search(value) for _, p in TOKEN_PATTERNS):
            args += ["--setenv", f"{name}={value}"]
    if "PYTHONPATH" not in env:
        args += ["--unsetenv", "PYTHONPATH"]  # set below only so the inner step can import itself
    return args


def sudo_argv(
    argv: list[str], *, env: Mapping[str, str], invoker: Invoker, probe_out: Path | None = None
) -> list[str]:
    """`sudo -n unshare --net ...` around the inner step, which drops back to `invoker` before the command."""
    inner = inner_argv(SUDO_UNSHARE, argv, probe_out=probe_out)
    cut = inner.index("--")
    identity = ["--user", str(invoker.uid), "--group", str(invoker.gid)]
    identity += ["--groups", ",".join(str(g) for g in invoker.groups)]
    inner[cut:cut] = identity + _sudo_restore_args(env)
    sudo = shutil.which("sudo") or "sudo"
    unshare = shutil.which("unshare") or "unshare"
    loader = ["env", f"PYTHONPATH={import_root()}"]
    return [sudo, "-n", "--preserve-env", "--", unshare, *UNSHARE, "--", *loader, *inner]


def wrap(
    strategy: str,
    argv: list[str],
    *,
    env: Mapping[str, str] | None = None,
    invoker: Invoker | None = None,
    probe_out: Path | None = None,
    outer_net_fd: int | None = None,
) -> list[str]:
    """The argv that runs `argv` under `strategy` (one of NAMESPACE_STRATEGIES, or GUARD).

    `outer_net_fd`, a descriptor of the caller's network namespace the caller passes on, lets the
    probe try the most direct escape there is (sudo closes it; the sudo path tries sudo instead).
    """
    inner = inner_argv(strategy, argv, probe_out=probe_out, outer_net_fd=outer_net_fd)
    if strategy in (ALREADY_ISOLATED, GUARD):
        return inner
    unshare = shutil.which("unshare") or "unshare"
    if strategy == ROOT_UNSHARE:
        return [unshare, *UNSHARE, "--", *inner]
    if strategy == USERNS:
        return [unshare, "--user", "--map-root-user", *UNSHARE, "--", *inner]
    if strategy == SUDO_UNSHARE:
        env = os.environ if env is None else env
        return sudo_argv(argv, env=env, invoker=invoker or Invoker.current(), probe_out=probe_out)
    raise ValueError(f"unknown sandbox strategy {strategy!r}")


def _trial(argv: list[str]) -> str | None:
    """None when `argv` runs and exits 0, else a short reason."""
    if shutil.which(argv[0]) is None:
        return f"{argv[0]} not found"
    try:
        done = subprocess.run(
            argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=_TRIAL_TIMEOUT
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return str(exc).splitlines()[0]
    if done.returncode == 0:
        return None
    lines = done.stderr.strip().splitlines()
    return lines[-1] if lines else f"exit {done.returncode}"


def _already_isolated() -> str | None:
    # Only the namespace is judged here; the inner step drops privileges and then tries the escapes.
    return run_probe(confinement=False).why_not(confinement=False) or None


def _root_unshare() -> str | None:
    if os.geteuid() != 0:
        return "not root"
    return _trial(["unshare", *UNSHARE, "true"])


def _sudo_unshare() -> str | None:
    if os.geteuid() == 0:
        return "already root"
    return _trial(["sudo", "-n", "--preserve-env", "--", "unshare", *UNSHARE, "true"])


def _userns() -> str | None:
    return _trial(["unshare", "--user", "--map-root-user", *UNSHARE, "true"])


CHECKS: tuple[tuple[str, Callable[[], str | None]], ...] = (
    (ALREADY_ISOLATED, _already_isolated),
    (ROOT_UNSHARE, _root_unshare),
    (SUDO_UNSHARE, _sudo_unshare),
    (USERNS, _userns),
)


def find_strategy(names: tuple[str, ...] | None = None) -> Attempt:
    """The first strategy of CHECKS (or of `names`) that works here, with why the earlier ones did not."""
    attempt = Attempt()
    if not sys.platform.startswith("linux"):
        attempt.refused.append(f"network namespaces need Linux, this is {sys.platform}")
        return attempt
    for name, check in CHECKS:
        if names is not None and name not in names:
            continue
        reason = check()
        if reason is None:
            attempt.strategy = name
            return attempt
        attempt.refused.append(f"{name} ({reason})")
    return attempt
