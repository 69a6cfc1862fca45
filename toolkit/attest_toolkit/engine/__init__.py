"""The replay engine: fixtures indexed by request key, served on loopback to the official SDKs."""

from .runner import ReplayRun, line_of, run_command, serve, serve_control
from .server import Engine
from .session import MODES, Mode, default_mode

__all__ = [
    "MODES",
    "Engine",
    "Mode",
    "ReplayRun",
    "default_mode",
    "line_of",
    "run_command",
    "serve",
    "serve_control",
]
