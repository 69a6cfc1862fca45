"""`attest capture --image`: an agent's container image recorded the way a command is.

The recording proxy listens only inside the container's loopback-only namespace (netns), so the
container reaches nothing but the recorder; the recorder forwards from the host. The container gets
the placeholder keys a replay gives, never the caller's: the recorder puts the caller's key in place
of the placeholder as it forwards, the way ctxmesh's egress sidecar injects credentials after capture.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from aiohttp import web

from ..capture.proxy import RecordingProxy
from ..capture.run import Captured, capture_secrets, conclude
from ..fixtures.document import fixture_path, new_source
from ..providers.env import KEY_VARS, PLACEHOLDER_KEY
from ..proxy.live import LiveForwarder
from ..tools.declare import parse_tools
from .container import ImageRun
from .netns import LoopbackNamespace

CREDENTIAL_HEADERS = ("authorization", "x-api-key", "api-key")


class KeyAttacher(LiveForwarder):
    """Forwards a model call with the caller's key where the container sent the placeholder."""

    def outgoing_headers(self, request: web.Request) -> dict[str, str]:
        headers = super().outgoing_headers(request)
        key = self.keys.get(request.match_info.get("provider", ""))  # tool routes name no provider
        if not key:
            return headers
        for name, value in headers.items():
            if name.lower() in CREDENTIAL_HEADERS and PLACEHOLDER_KEY in value:
                headers[name] = value.replace(PLACEHOLDER_KEY, key)
        return headers


def capture_image(
    target: ImageRun,
    name: str,
    *,
    fixtures_dir: str | Path | None = None,
    expect_fail: bool = False,
    tools: Sequence[str] = (),
) -> Captured:
    """Run the image against the recording proxy and write the fixture if it ended as expected."""
    path = fixture_path(name, fixtures_dir)
    env = dict(os.environ)
    declared = parse_tools(tools, env)
    binary = target.ready()
    with LoopbackNamespace() as ns:
        proxy = RecordingProxy(capture_secrets(env), env, tools=declared, live=KeyAttacher(env))
        proxy.start(sock=ns.sockets[0])
        try:
            container_env = {**proxy.app.child_env(), **dict.fromkeys(KEY_VARS.values(), PLACEHOLDER_KEY)}
            returncode = target.run(binary, ns.path, container_env)
        finally:
            proxy.stop()
    source = {**new_source(target.args, expect_fail=expect_fail, exit_code=returncode), "image": target.image}
    return conclude(proxy.app, source, name, path, returncode, expect_fail)
