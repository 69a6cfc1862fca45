"""A real MCP server (the official SDK's MCPServer) with one tool, for the tool-channel tests.

    python weather_server.py http     streamable HTTP on a loopback port; prints the port first
    python weather_server.py stdio    over stdin and stdout

Each tool call appends a line to $WEATHER_CALLS_LOG when set, so a test sees whether the real server
was reached.
"""

from __future__ import annotations

import os
import socket
import sys

from mcp.server.mcpserver import MCPServer

server = MCPServer("weather", log_level="WARNING")


@server.tool()
def get_forecast(city: str, days: int = 1, units: str = "celsius") -> str:
    """The weather forecast for a city."""
    log = os.environ.get("WEATHER_CALLS_LOG")
    if log:
        with open(log, "a", encoding="utf-8") as fh:
            fh.write(f"{city} {days} {units}\n")
    degrees = 21 if units == "celsius" else 70
    return f"{city}: sunny for {days} day(s), {degrees} degrees {units}"


@server.prompt()
def forecast_question(city: str) -> str:
    """The question the agent asks about a city, as an MCP prompt."""
    return f"What is the weather in {city}?"


def serve_http() -> None:
    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    print(sock.getsockname()[1], flush=True)  # the test reads the port from the first line
    config = uvicorn.Config(server.streamable_http_app(), log_level="warning", lifespan="on")
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    if sys.argv[1:2] == ["stdio"]:  # later arguments (flags a real server takes) are ignored
        server.run("stdio")
    else:
        serve_http()
