"""A small refund agent: one tool-call round trip, then a streamed answer, with the official openai SDK.

Its tool is `lookup_order` on an MCP server (examples/orders_server.py, official mcp SDK) that it
finds at $ORDERS_MCP_URL. Run it for real with a key and the server running
(`OPENAI_API_KEY=... ORDERS_MCP_URL=http://127.0.0.1:PORT/mcp python examples/agent.py`), or replay
both the model and the tool with no key, no server and no network from the bundled fixture:

    attest replay --name example --fixtures-dir examples/fixtures -- python examples/agent.py
"""

from __future__ import annotations

import asyncio
import json
import os

from mcp.client.client import Client
from openai import OpenAI

MODEL = "gpt-4o-mini"
SYSTEM = (
    "You are a refund agent. Use the tools to check an order before you answer, then answer in one sentence."
)
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "lookup_order",
            "description": "Look up an order's refunds by its number.",
            "parameters": {
                "type": "object",
                "properties": {
                    "order_id": {"type": "string", "description": "The order number, e.g. O-1042"}
                },
                "required": ["order_id"],
                "additionalProperties": False,
            },
        },
    }
]


async def call_tool(name: str, arguments: dict) -> str:
    """One call on the orders MCP server; `attest replay` points ORDERS_MCP_URL at its fixture."""
    async with Client(os.environ["ORDERS_MCP_URL"]) as orders:
        result = await orders.call_tool(name, arguments)
    return "".join(getattr(block, "text", "") for block in result.content)


def run(question: str) -> str:
    client = OpenAI()  # built after the replay starts: it reads OPENAI_BASE_URL and OPENAI_API_KEY now
    messages: list[dict] = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": question}]
    first = client.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS, temperature=0)
    reply = first.choices[0].message
    messages.append(reply.model_dump(exclude_none=True, exclude={"annotations", "audio", "refusal"}))
    for call in reply.tool_calls or []:
        result = asyncio.run(call_tool(call.function.name, json.loads(call.function.arguments)))
        messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
    stream = client.chat.completions.create(
        model=MODEL, messages=messages, tools=TOOLS, temperature=0, stream=True
    )
    return "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)


if __name__ == "__main__":
    print(run("Was order O-1042 refunded twice?"))
