"""A replay handle enters what it changes in the process as one unit, as vcrpy enters its patchers: once
it stops, nothing it set is left (the variables, httpx's and the plain clients' methods, the lane's
routes, the bypass watch, the plain HTTP replay, the front's target), even when one change fails to
enter, half-way or not at all."""

from __future__ import annotations

import os
import sys
import urllib.request
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import aiohttp.client
import httpx
import pytest
import urllib3.connectionpool
from attest_toolkit.providers.env import proxy_env
from attest_toolkit.pytest_plugin import handle, lane, plain_clients, plain_http
from attest_toolkit.replay import bypass
from conftest import chat_request, chat_response, exchange, write_fixture

CLIENT_METHODS = (
    (httpx.HTTPTransport, "handle_request"),
    (httpx.AsyncHTTPTransport, "handle_async_request"),
    (urllib3.connectionpool.HTTPConnectionPool, "urlopen"),
    (aiohttp.client.ClientSession, "_request"),
    (urllib.request.AbstractHTTPHandler, "do_open"),
)


def process_state(front: SimpleNamespace) -> dict[str, Any]:
    """Everything a replay may change in the process, as a test after it would meet it."""
    return {
        "environ": dict(os.environ),
        "methods": [getattr(cls, name) for cls, name in CLIENT_METHODS],
        "lanes": dict(lane._lanes),
        "hosts": lane._hosts_prefix,
        "watch": bypass._watch,
        "plain": plain_http._active,
        "front": front.target,
    }


class FakeEngine:
    """The engine process as the handle sees it: a session's variables, and its summary at the end."""

    url = "http://127.0.0.1:9"

    def __init__(self) -> None:
        self.lane = SimpleNamespace(closed=False)

    def open_session(self, *args: Any) -> tuple[str, dict[str, str]]:
        return "0" * 16, proxy_env(f"{self.url}/r/{'0' * 16}")

    def close_session(self, sid: str) -> dict[str, Any]:
        return {"replayed": 0, "misses": 0, "miss_list": []}


def replay_handle(tmp_path: Path, front: SimpleNamespace) -> handle.ReplayHandle:
    write_fixture(tmp_path, "t", [exchange(chat_request(), chat_response())])
    engine = FakeEngine()
    plugin = SimpleNamespace(
        active=None,
        front=front,
        front_env={},
        front_saved={},
        record_mode=None,
        record_refusal=None,
        no_live=False,
        match="strict",
        engine=lambda path: engine,
        ignore_rules=lambda item: [],
        relative=lambda path: str(path),
    )
    item = SimpleNamespace(config=SimpleNamespace(rootpath=tmp_path), nodeid="test_x.py::test_x", stash={})
    made = handle.ReplayHandle(plugin, item, "t", "strict", tmp_path, None)  # type: ignore[arg-type]
    made.keeps_urls = True  # a vcr test's: provider hosts served from the session too
    return made


def test_a_stopped_handle_leaves_nothing_of_what_it_changed(tmp_path: Path) -> None:
    front = SimpleNamespace(target=None, recorder=lambda path, mode: None)
    before = process_state(front)
    replay = replay_handle(tmp_path, front).start()
    during = process_state(front)
    replay.stop()
    assert process_state(front) == before
    changed = [key for key in before if during[key] != before[key]]
    assert changed == ["environ", "methods", "lanes", "hosts", "watch", "plain", "front"]


def _fails_after(real: Callable[..., Any]) -> Callable[..., Any]:
    """`real` that fails half-way the first time (made, then the error), and works when undone."""
    calls = []

    def entered_then_failed(*args: Any, **kwargs: Any) -> Any:
        calls.append(args)
        found = real(*args, **kwargs)
        if len(calls) == 1:
            raise RuntimeError("cannot enter")
        return found

    return entered_then_failed


@pytest.mark.parametrize(
    ("module", "name"),
    [
        (lane, "route"),
        (lane, "patch_loaded"),
        (bypass, "start"),
        (plain_http, "start"),
        (plain_clients, "patch_loaded"),
        (lane, "serve_hosts"),
    ],
)
def test_a_change_that_fails_to_enter_undoes_those_before_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, module: Any, name: str
) -> None:
    front = SimpleNamespace(target=None, recorder=lambda path, mode: None)
    before = process_state(front)
    monkeypatch.setattr(module, name, _fails_after(getattr(module, name)))
    with pytest.raises(RuntimeError, match="cannot enter"):
        replay_handle(tmp_path, front).start()
    monkeypatch.undo()
    assert process_state(front) == before


def test_the_modules_checked_are_loaded() -> None:
    """The clients are imported above, so a handle patches each of them (none is skipped as absent)."""
    assert {"httpx", "urllib3.connectionpool", "aiohttp.client", "urllib.request"} <= set(sys.modules)
