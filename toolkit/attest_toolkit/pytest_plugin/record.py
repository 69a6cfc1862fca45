"""Recording from pytest: `--attest-record=none|once|new|all|rebase` (or `ATTEST_RECORD`), as
pytest-recording, plus `rebase` (see `rebase`): a fixture's requests rewritten to what the code sends
now, every response kept, no provider called.

With a record mode, the plugin starts one recording front per pytest process (`record_front`) at
pytest_configure and points every base-URL variable at it before any test module is imported, so a
client built at module level reaches attest too. This module holds what the plugin needs without
importing the front's server: the modes, the CI rule, and the process environment.

Recording never starts by accident in CI: with `CI` set, only a record mode given on the pytest
command line itself records; one from `ATTEST_RECORD`, addopts or PYTEST_ADDOPTS is refused with a
line saying why, and the run replays (`none`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, MutableMapping

import pytest

from ..replay.modes import default_mode

RECORD_MODES: tuple[str, ...] = ("none", "once", "new", "all", "rebase")
OFFLINE_MODES: tuple[str, ...] = ("none", "rebase")  # never call a provider, so the egress guard allows them
# Keep what the fixture holds and add to it or rewrite requests only: its recorded plain HTTP (which
# recording does not capture) goes on answering the test's own fetches.
KEEPING_MODES: tuple[str, ...] = ("new", "rebase")


FLAGS = ("--attest-record", "--record-mode")  # the second is pytest-recording's (see vcr)


def _given_on_command_line(config: pytest.Config) -> bool:
    """True when a record flag is in the arguments pytest was invoked with (not addopts)."""
    return any(a == f or a.startswith(f + "=") for a in config.invocation_params.args for f in FLAGS)


def resolve(config: pytest.Config, env: Mapping[str, str] = os.environ) -> tuple[str | None, str | None]:
    """The record mode (None: not asked for, the plugin behaves as without recording) and, when CI
    stopped a recording, the line that says why."""
    flag = config.getoption("attest_record")
    mode = flag or env.get("ATTEST_RECORD", "").strip().lower() or None
    if mode is None:
        return None, None
    if mode not in RECORD_MODES:
        raise pytest.UsageError(f"ATTEST_RECORD must be one of {', '.join(RECORD_MODES)}, not {mode!r}")
    if mode == "none" or default_mode(env) != "strict" or (flag and _given_on_command_line(config)):
        return mode, None
    origin = "--attest-record in addopts" if flag else f"ATTEST_RECORD={mode}"
    return "none", (
        f"attest record: not recording: CI is set and the record mode came from {origin}; "
        f"pass --attest-record={mode} on the pytest command line to record in CI (replaying instead)"
    )


def runs_tests(config: pytest.Config) -> bool:
    """False on an xdist controller, which runs no test: its workers start fronts of their own."""
    if hasattr(config, "workerinput"):
        return True
    return not (getattr(config.option, "numprocesses", None) and getattr(config.option, "dist", "no") != "no")


def point_at(env: Mapping[str, str]) -> dict[str, str | None]:
    """Set `env` in this process; what to restore (None: unset) when the run ends."""
    from ..providers.env import ALL_VARS, KEY_VARS  # the provider registry: loaded by a run that records

    saved = {k: os.environ.get(k) for k in {*ALL_VARS, *KEY_VARS.values(), *env}}
    os.environ.update(env)
    return saved


def prefix_of(handed_out: Mapping[str, str]) -> str:
    """The URL prefix (`<prefix>/<provider>/...`) of a listener, from the variables it hands out: a
    session's on the engine, or the recording front's (each `<prefix>/<provider><path>`)."""
    from ..providers import DEFAULT  # the provider registry: loaded by a run that records

    var = DEFAULT.base_url_vars[0]
    return handed_out[var].removesuffix(f"/{DEFAULT.name}{DEFAULT.path_for(var)}")


def swap_urls(values: Mapping[str, str | None]) -> dict[str, str | None]:
    """The base-URL variables a vcr test keeps set to `values` (None or absent: unset), every other
    variable left alone (an SDK the lane does not see stays pointed at attest); what to restore."""
    from ..providers.env import KEPT_BY_VCR

    saved = {k: os.environ.get(k) for k in KEPT_BY_VCR}
    restore({k: values.get(k) for k in KEPT_BY_VCR})
    return saved


def restore(saved: Mapping[str, str | None], env: MutableMapping[str, str] = os.environ) -> None:
    for key, value in saved.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value


def as_the_user_set_it(saved: Mapping[str, str | None]) -> dict[str, str]:
    """This process's environment with what `point_at` changed given back its own values: the
    user's upstream and key, where live calls must go (not the front the variables point at now)."""
    env = dict(os.environ)
    restore(saved, env)
    return env


def missing_key_hint(error: str, env: Mapping[str, str] = os.environ) -> str | None:
    """What to do when a module failed to import because an SDK client built at import time found no
    key (its error names the variable): the placeholder key is only there while a replay runs, or for
    the whole run with a record mode. None for any other error."""
    from ..providers.env import CREDENTIAL_VARS  # the provider registry: loaded only when collection failed

    var = next((v for v in CREDENTIAL_VARS if v in error and not env.get(v)), None)
    if var is None:
        return None
    return (
        f"attest: {var} is not set and a model client built when the module is imported needs it; attest "
        "gives clients a placeholder key only while an attest_replay block runs: build the client inside "
        "the block, or run with --attest-record=none (ATTEST_RECORD=none), which sets the placeholder "
        "and points the clients at attest from start-up"
    )
