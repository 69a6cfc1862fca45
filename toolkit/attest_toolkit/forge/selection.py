"""The select step: which tests of the change run, or why all or none do.

A fork without the pinned fixtures runs nothing; without selection, or without a base to compare with,
everything runs once (in shard 1 when sharded); else `attest select`'s choice between the change's base
and HEAD (HEAD, not the working tree: files the set-up left behind are no change of the pull request).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..errors import AttestError
from ..fixtures.document import atomic_write
from ..selection import Selection, parse_shard, select_tests, split
from ..selection.scan import pytest_runnable
from .changes import base_commit
from .step import Step, StepFailed, flag

FETCH_HINT = "selection needs the base commit: check out with fetch-depth: 0"


@dataclass(frozen=True)
class SelectInputs:
    select: bool = False
    base: str | None = None
    shard: str | None = None
    fixtures_dir: str = "tests/attest/fixtures"
    fixtures_available: bool = True  # False: a fork's run, given no object-store secrets


@dataclass(frozen=True)
class Choice:
    kind: str  # none, some or all, as attest select says
    reason: str
    tests: tuple[str, ...] = ()  # the ids to append to the command; none: the command as it is

    @property
    def runs(self) -> bool:
        return self.kind != "none"


def choose(inputs: SelectInputs, repo: Path = Path(".")) -> Choice:
    if not inputs.fixtures_available:
        return Choice("none", "fixtures not available to forks")
    if not inputs.select:
        return Choice("all", "selection is off: running the whole command")
    base = base_commit(inputs.base)
    if base is None:
        # Not a pull request: the whole suite, once, in shard 1.
        if inputs.shard and not inputs.shard.startswith("1/"):
            return Choice("none", "no base commit: shard 1 runs everything")
        return Choice("all", "no base commit to compare with: running everything")
    try:
        selection = _selected(inputs, base, repo)
    except AttestError as exc:
        raise StepFailed(f"attest select failed: {exc}; {FETCH_HINT}") from None
    reason = " ".join(selection.reason.split())
    if selection.kind == "all" and not inputs.shard:
        return Choice("all", reason)  # the whole suite, unsharded: the command as it is
    return Choice(selection.kind, reason, tuple(pytest_runnable(selection.tests)))


def _selected(inputs: SelectInputs, base: str, repo: Path) -> Selection:
    shard = parse_shard(inputs.shard) if inputs.shard else None
    selection = select_tests(repo, base, "HEAD", fixtures_dir=inputs.fixtures_dir)
    return split(selection, repo, "HEAD", *shard) if shard else selection


def select_step(inputs: SelectInputs, ids_file: Path, step: Step) -> int:
    """Choose, write the ids one a line to `ids_file`, and tell the later steps; the step's exit code."""
    choice = choose(inputs)
    atomic_write(ids_file, "".join(f"{test}\n" for test in choice.tests), mode=0o600)
    print(f"attest select: {choice.kind}: {choice.reason}", flush=True)
    step.outputs(
        {"run": flag(choice.runs), "kind": choice.kind, "reason": choice.reason, "ids": str(ids_file)}
    )
    return 0
