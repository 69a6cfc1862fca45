"""What a channel beside the model calls (the tool channel) needs from the engine, and what it gives.

A channel adds its routes to the engine's web application (its variables in a session's environment
come from its declarations: `tools.declare.replay_env`). It sees the engine through a
`ChannelContext`: the open sessions, the run's secrets, the user's environment and the live
forwarder, not the server itself. The engine does not know its channels either: whoever starts it
hands them over as a list of `ChannelFactory` (`server.ReplayApp.channels`), as mitmproxy is handed
its addons, and the application builds each over its context.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from aiohttp import web

    from ..credentials.scan import Secrets
    from ..proxy.live import LiveForwarder
    from .session import Session


@dataclass(frozen=True)
class ChannelContext:
    sessions: Mapping[str, Session]  # the engine's own table: sessions opened later are seen too
    secrets: Secrets
    env: Mapping[str, str]  # the user's: where a live call goes is read from it, never from a fixture
    live: LiveForwarder


class Channel(Protocol):
    def add_routes(self, app: web.Application) -> None:
        """Its routes, added before the provider route (which would take any first segment)."""
        ...


# A channel built over the engine's context, when the application is (its class, as a rule).
ChannelFactory = Callable[[ChannelContext], Channel]
