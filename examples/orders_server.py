"""The refund agent's order tool: an MCP server (the official SDK) over streamable HTTP on loopback.

    python examples/orders_server.py          prints the port it listens on, then serves
    ORDERS_MCP_URL=http://127.0.0.1:PORT/mcp python examples/agent.py

Under `attest replay` it need not run: the agent's MCP calls are answered from the fixture.
"""

from __future__ import annotations

import socket

import uvicorn
from mcp.server.mcpserver import MCPServer

ORDERS = {"O-1042": {"order_id": "O-1042", "amount": 42.0, "refunds": [42.0, 42.0]}}
server = MCPServer("orders", log_level="WARNING")


@server.tool()
def lookup_order(order_id: str) -> dict:
    """Look up an order's refunds by its number."""
    return ORDERS.get(order_id, {"order_id": order_id, "error": "no such order"})


def main() -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    print(sock.getsockname()[1], flush=True)
    config = uvicorn.Config(server.streamable_http_app(), log_level="warning", lifespan="on")
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    main()
