"""Declared tool servers: `--tool VAR[=URL]` for HTTP servers, `attest tool stdio NAME` for stdio ones.

A server is known by a short name (`WEATHER_MCP_URL` → `weather`) that miss messages and the fixture
use; the fixture keeps each HTTP server's variable and upstream so a replay sets the variable again
and an auto-mode miss knows where to go.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from ..credentials.scan import Secrets, redact_argv
from ..errors import FixtureError, UsageError
from ..normalize import redact_query
from ..providers.env import ALL_VARS, KEY_VARS

_VAR = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_SUFFIXES = ("_MCP_URL", "_API_URL", "_BASE_URL", "_URL", "_MCP", "_API")
# The variables a stdio wrapper reads to find the proxy (capture) or the engine (replay).
CAPTURE_URL_VAR = "ATTEST_TOOL_CAPTURE_URL"
REPLAY_URL_VAR = "ATTEST_TOOL_REPLAY_URL"
# Every variable attest sets for itself (the engine, the helpers, the sandbox) is named in this space.
OWN_PREFIX = "ATTEST_"


@dataclass(frozen=True)
class HttpTool:
    name: str  # "weather"
    var: str  # "WEATHER_MCP_URL"
    upstream: str  # where the real server is: "http://127.0.0.1:8000/mcp"


def server_name(var: str) -> str:
    """`WEATHER_MCP_URL` → `weather`, `ORDERS_API_URL` → `orders`: the name misses and fixtures show."""
    upper = var.upper()
    for suffix in _SUFFIXES:
        if upper.endswith(suffix) and len(upper) > len(suffix):
            return var[: -len(suffix)].lower()
    return var.lower()


def reserved(var: str) -> bool:
    """True for a variable capture or replay sets itself: a provider's base URL or key, the OTLP
    endpoint, or attest's own. A tool variable naming one would let whoever wrote the fixture choose
    where the agent's model calls, and the keys they carry, are sent. Compared without case, as some
    settings libraries read the environment."""
    upper = var.upper()
    return upper.startswith(OWN_PREFIX) or upper in {v.upper() for v in (*ALL_VARS, *KEY_VARS.values())}


def check_declared(declared: Mapping[str, dict], path: str | Path) -> None:
    """Refuse a fixture whose tool server would re-point a variable attest sets (see `reserved`)."""
    for name, decl in declared.items():
        var = decl.get("env") if isinstance(decl, Mapping) else None
        if isinstance(var, str) and reserved(var):
            raise FixtureError(
                f"tool server {name!r} names {var}, a variable attest sets for providers, OTLP or itself; "
                "a fixture may not choose where model calls go",
                path,
            )


def parse_tool(spec: str, env: Mapping[str, str]) -> HttpTool:
    """One `--tool VAR[=URL]`: the upstream is URL, or VAR's current value."""
    var, sep, url = spec.partition("=")
    var = var.strip()
    if not _VAR.match(var):
        raise UsageError(f"--tool {spec!r}: VAR must be an environment variable name, like WEATHER_MCP_URL")
    if reserved(var):
        raise UsageError(
            f"--tool {var}: attest sets {var} itself (providers, OTLP or attest); name the tool's own variable"
        )
    url = url.strip() if sep else env.get(var, "").strip()
    if not url:
        raise UsageError(f"--tool {var}: give its URL (--tool {var}=http://...) or set {var}")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise UsageError(f"--tool {var}: {url!r} is not an http(s) URL")
    return HttpTool(server_name(var), var, url.rstrip("/"))


def parse_tools(specs: Sequence[str], env: Mapping[str, str]) -> list[HttpTool]:
    tools = [parse_tool(spec, env) for spec in specs]
    names = [t.name for t in tools]
    for name in names:
        if names.count(name) > 1:
            raise UsageError(f"two --tool variables share the server name {name!r}; rename one")
    return tools


def stored_upstream(url: str, secrets: Secrets) -> str:
    """The upstream as the fixture keeps it: no user:password, no secret query parameters."""
    parts = urlsplit(url)
    netloc = parts.netloc.rpartition("@")[2]
    query = redact_query(parts.query, secrets)
    return secrets.redact(urlunsplit((parts.scheme, netloc, parts.path, query, "")))


def declarations(tools: Sequence[HttpTool], stdio: Mapping[str, list[str]], secrets: Secrets) -> dict:
    """The fixture's `tools` object: each server by name, with how to reach it."""
    out: dict[str, dict] = {}
    for tool in tools:
        out[tool.name] = {
            "transport": "http",
            "env": tool.var,
            "upstream": stored_upstream(tool.upstream, secrets),
        }
    for name, command in stdio.items():
        out.setdefault(name, {"transport": "stdio", "command": redact_argv(command, secrets)})
    return out


def specs_of(declared: Mapping[str, dict], env: Mapping[str, str]) -> list[str]:
    """The `--tool` flags that re-create a fixture's HTTP servers (refresh): the variable's current
    value wins over the stored upstream, which may have had its credentials removed."""
    specs = []
    for decl in declared.values():
        if decl.get("transport") == "http":
            var = decl["env"]
            specs.append(var if env.get(var) else f"{var}={decl['upstream']}")
    return specs


def replay_env(prefix: str, servers: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
    """Each declared HTTP server's variable pointed at a replay session's tool route under `prefix`,
    and the URL `attest tool stdio` relays to."""
    env = {
        decl["env"]: f"{prefix}/tool/{name}"
        for name, decl in servers.items()
        if decl.get("transport") == "http" and decl.get("env")
    }
    env[REPLAY_URL_VAR] = f"{prefix}/stdio"
    return env
