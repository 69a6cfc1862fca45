"""A real network namespace for the tests that run something with the network off. Test modules load
this with `pytest_plugins = ["netns"]`."""

from __future__ import annotations

import pytest
from attest_toolkit.sandbox import SandboxError, choose_strategy


@pytest.fixture(scope="module")
def namespace() -> str:
    """The strategy this machine offers, or a skip saying why there is none."""
    try:
        return choose_strategy("none")
    except SandboxError as exc:
        pytest.skip(f"no network namespace can be made here: {exc}")
