"""Tests that mock httpx with pytest-httpx, in a run with a record mode.

A record mode points the provider variables at the recording front for the whole run (see `record`),
so a client a test builds would send its calls to the front's loopback URL, and the test's mocks of the
provider's URL (`httpx_mock.add_response(url="https://api.openai.com/v1/...")`) would match nothing.
While such a test runs, without an attest_replay block of its own, the variables are as the user set
them: the front is invisible to it and its mocks match as they do without attest. A client built when
a module is imported already holds the front's URL, which no variable changes afterwards: such a test
builds its client inside (docs/guides/pytest-recording.md says so).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

import pytest

from . import record

MOCK_FIXTURE = "httpx_mock"  # pytest-httpx's fixture


def mocks_httpx(item: pytest.Item) -> bool:
    names = getattr(item, "fixturenames", ())
    return MOCK_FIXTURE in names and "attest_replay" not in names


@contextmanager
def front_hidden(saved: Mapping[str, str | None], front_env: Mapping[str, str]) -> Iterator[None]:
    """The user's own provider variables (`saved`, as `record.point_at` kept them) while the test runs;
    the front's (`front_env`) again after it."""
    record.restore(saved)
    try:
        yield
    finally:
        os.environ.update(front_env)
