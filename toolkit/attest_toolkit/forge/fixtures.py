"""The pull step: the fixtures pinned in the lock, fetched from the object store before the network
goes off. A fork's pull request is given no secrets by the forge: its run is not evaluated, not failed."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ..errors import AttestError
from ..fixtures.document import DEFAULT_DIR
from ..fixtures.remote import pinned
from ..fixtures.remote.client import config_from_env
from .step import Step, StepFailed, flag

NO_STORE = (
    "pulling the pinned fixtures needs OBJECT_STORE_ADDR and the keys OBJECT_STORE_ACCESS_KEY and"
    " OBJECT_STORE_SECRET_KEY (on GitHub Actions: OBJECT_STORE_ADDR in the step's env, the keys as the"
    " inputs object-store-access-key and object-store-secret-key, from secrets)"
)
FORK = "fixtures not available to forks: the object store's secrets are not given to this pull request"


@dataclass(frozen=True)
class PullInputs:
    fixtures_dir: Path | None = None
    head_repo: str = ""  # the change's repository, when it is a pull request
    base_repo: str = ""
    project_dir: Path = Path()  # where a relative fixtures directory starts

    @property
    def from_fork(self) -> bool:
        return bool(self.head_repo) and self.head_repo != self.base_repo


def pull_step(inputs: PullInputs, step: Step, environ: Mapping[str, str]) -> int:
    """Pull, and tell the later steps whether the fixtures are here (output `available`)."""
    if not environ.get("OBJECT_STORE_ADDR"):
        if not inputs.from_fork:
            raise StepFailed(NO_STORE)
        step.warning(FORK)
        step.outputs({"available": flag(False)})
        return 0
    try:
        fixtures_dir = inputs.project_dir / (inputs.fixtures_dir or DEFAULT_DIR)
        lock, done = pinned.pull(config_from_env(environ), None, fixtures_dir)
    except AttestError as exc:
        print(f"attest: {exc}", file=sys.stderr, flush=True)
        raise StepFailed(
            f"attest fixture pull exited {exc.exit_code}: the tests cannot run without their pinned fixtures"
        ) from None
    print(pinned.pulled_line(lock, done), flush=True)
    step.outputs({"available": flag(True)})
    return 0
