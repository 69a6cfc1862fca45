"""No-network mode: run a command in a fresh network namespace with only loopback up, and prove it.

See `strategy` for how the namespaces are obtained, `probe` for the proof (no packet is ever sent)
and `confine` for the escapes it tries, `inner` for the steps that run inside (privileges dropped
with util-linux `setpriv`), `mounts` for the private /tmp and hidden daemon sockets, `tmpfiles` for
the files named directly under /tmp, `init` for the PID namespace's first process, and `egress` for
the record that report-v2 carries.
"""

from __future__ import annotations

from .egress import Egress, egress_from_environ
from .probe import Probe, run_probe
from .runner import SandboxResult, choose_strategy, current_egress, isolated_argv, run_isolated, write_egress
from .strategy import NETWORKS, SandboxError

__all__ = [
    "NETWORKS",
    "Egress",
    "Probe",
    "SandboxError",
    "SandboxResult",
    "choose_strategy",
    "current_egress",
    "egress_from_environ",
    "isolated_argv",
    "run_isolated",
    "run_probe",
    "write_egress",
]
