"""Run a command with the network off, and say how: the sandbox's Python API."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from . import mounts
from .egress import ENV_GUARD, ENV_MODE, ENV_STRATEGY, GUARD_BLOCK, Egress, egress_record
from .probe import run_probe
from .strategy import ALREADY_ISOLATED, GUARD, NETWORKS, SandboxError, find_strategy, wrap


@dataclass(frozen=True)
class SandboxResult:
    """The command's exit status and the egress record for report-v2's `summary.egress`."""

    returncode: int
    egress: Egress


def _check_network(network: str) -> None:
    if network not in NETWORKS:
        raise SandboxError(f"unknown network mode {network!r}: use one of {', '.join(NETWORKS)}")


def choose_strategy(network: str = "none") -> str:
    """The strategy `isolated_argv` would use: a namespace strategy, or "guard" (network="guard" only).

    `--network guard` means the in-process guard and no namespace: a job that needs the host's network
    (a service container published on the host's loopback) can still block provider hosts.
    """
    _check_network(network)
    if network == GUARD:
        return ALREADY_ISOLATED if find_strategy((ALREADY_ISOLATED,)).strategy else GUARD
    attempt = find_strategy()
    if attempt.strategy is None:
        raise SandboxError(
            f"cannot turn the network off: tried {attempt.explain()}; "
            "run as root, with passwordless sudo, in a container with --network none, "
            "or use --network guard for the best-effort in-process guard"
        )
    return attempt.strategy


def isolated_argv(
    argv: list[str],
    network: str = "none",
    *,
    env: Mapping[str, str] | None = None,
    probe_out: Path | None = None,
    outer_net_fd: int | None = None,
) -> tuple[list[str], str]:
    """The argv that runs `argv` inside a fresh network namespace (or under the guard), and the strategy.

    The wrapped command starts with the egress record in ATTEST_EGRESS_MODE, ATTEST_ISOLATION_VERIFIED,
    ATTEST_EGRESS_PROBE and ATTEST_EGRESS_STRATEGY; under "guard" also ATTEST_EGRESS=block. When
    isolation cannot be verified inside, it prints one line and exits 3 without running `argv`.
    `env` is the environment the caller will start it with (default: this process's); only the sudo
    strategy needs it. With `probe_out`, the inner step writes {"egress": ...} or {"error": ...} there.
    With `outer_net_fd` (passed on to the child), the probe tries to enter that network namespace too.
    """
    if not argv:
        raise SandboxError("no command given: put it after --")
    strategy = choose_strategy(network)
    wrapped = wrap(strategy, list(argv), env=env, probe_out=probe_out, outer_net_fd=outer_net_fd)
    return wrapped, strategy


def _outside_sockets() -> list[str]:
    try:
        return mounts.outside_sockets(Path("/proc/net/unix").read_text(encoding="utf-8", errors="replace"))
    except OSError:  # no /proc: nothing to list, the engine sockets and the private /tmp still hold
        return []


def _read_probe_out(path: Path) -> dict:
    try:
        doc = json.loads(path.read_text(encoding="utf-8") or "{}")
    except (OSError, ValueError):
        doc = {}
    return doc if isinstance(doc, dict) else {}


@contextlib.contextmanager
def _own_net_namespace() -> Iterator[int]:
    """A descriptor of this process's network namespace, for the probe's escape attempt."""
    fd = os.open("/proc/self/ns/net", os.O_RDONLY | os.O_CLOEXEC)
    try:
        yield fd
    finally:
        os.close(fd)


def run_isolated(
    argv: list[str],
    *,
    network: str = "none",
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
) -> SandboxResult:
    """Run `argv` with the network off (or under the guard) and return its exit code and egress record.

    Raises SandboxError (exit 3) when no isolation is possible for network="none", or when the sandbox
    could not start the command; the command's own exit code is returned as it is.
    """
    full_env = dict(os.environ if env is None else env)
    with tempfile.TemporaryDirectory(prefix="attest-sandbox-") as tmp, _own_net_namespace() as outer:
        probe_out = Path(tmp) / "probe.json"
        probe_out.touch(mode=0o600)
        # Listed here, in the outer network namespace: inside, /proc/net/unix shows only the new one.
        probe_out.write_text(json.dumps({"outside_sockets": _outside_sockets()}), encoding="utf-8")
        wrapped, strategy = isolated_argv(
            argv, network, env=full_env, probe_out=probe_out, outer_net_fd=outer
        )
        try:
            done = subprocess.run(wrapped, env=full_env, cwd=cwd, check=False, pass_fds=(outer,))
        except OSError as exc:
            raise SandboxError(f"cannot start {wrapped[0]}: {exc.strerror or exc}") from exc
        outcome = _read_probe_out(probe_out)
    if "egress" in outcome:
        return SandboxResult(done.returncode, outcome["egress"])
    reason = outcome.get("error") or f"the {strategy} sandbox exited {done.returncode} before the command ran"
    raise SandboxError(reason)


def current_egress(environ: Mapping[str, str] | None = None) -> Egress:
    """The egress record for the process calling it, verified now by the probe (sends nothing).

    A surrounding sandbox only names the strategy; whether isolation holds is probed again here, so a
    stale or hand-set ATTEST_EGRESS_MODE cannot claim isolation that is not there.
    """
    environ = os.environ if environ is None else environ
    probe = run_probe()
    strategy = (environ.get(ENV_STRATEGY) if environ.get(ENV_MODE) == "none" else None) or ALREADY_ISOLATED
    if probe.network_isolated and probe.loopback:
        # No network, but verified only when this process could not get it back (privileges, escapes).
        return egress_record("none", probe.isolated, probe.describe(), strategy)
    if environ.get(ENV_GUARD) == GUARD_BLOCK:
        return egress_record("guard", False, probe.describe(), None)
    return egress_record("off", False, probe.describe(), None)


def write_egress(path: Path, egress: Egress) -> None:
    """Write the egress record as JSON, atomically."""
    from ..fixtures.document import (
        atomic_write,  # not at import time: the inner step starts without jsonschema
    )

    atomic_write(path, json.dumps(egress, indent=2, sort_keys=True) + "\n", mode=0o644)
