"""An agent that loops the official openai SDK with tools from MCP servers (the official mcp SDK).

    python mcp_agent.py [--mcp-mode auto|legacy] [--stdio] [--orders] [--units U] [--question Q]
                        [--prompt-city CITY] [--api-key K] [--token T]

Its weather tools come from the MCP server at $WEATHER_MCP_URL (streamable HTTP) or, with --stdio,
from the stdio server that `attest tool stdio weather -- ...` runs. With --orders it also has a
`lookup_order` tool served by the plain HTTP API at $ORDERS_API_URL (sending $ORDERS_TOKEN as a bearer
token when set). --prompt-city CITY takes the question from the server's `forecast_question` prompt
instead of --question. $WEATHER_SERVER_ARGS (a JSON list) are more arguments for the stdio server, which
ignores them as the agent ignores --api-key and --token: they stand for credentials real commands
take. --units U adds an argument to every forecast call: a change in the agent's code.
It prints each tool result and the final answer, so a capture and its replay print the same thing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import urllib.request
from pathlib import Path
from typing import Any

from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters
from openai import AsyncOpenAI

SERVER = Path(__file__).with_name("weather_server.py")
LOOKUP_ORDER = {
    "type": "function",
    "function": {
        "name": "lookup_order",
        "description": "Look up an order.",
        "parameters": {
            "type": "object",
            "properties": {"order_id": {"type": "string"}},
            "required": ["order_id"],
        },
    },
}


def weather_server(args: argparse.Namespace) -> Any:
    if not args.stdio:
        return os.environ["WEATHER_MCP_URL"]
    wrapper = [
        "-m",
        "attest_toolkit.cli",
        "tool",
        "stdio",
        "weather",
        "--",
        sys.executable,
        str(SERVER),
        "stdio",
        *json.loads(os.environ.get("WEATHER_SERVER_ARGS", "[]")),
    ]
    return StdioServerParameters(command=sys.executable, args=wrapper, env=dict(os.environ))


def lookup_order(order_id: str) -> str:
    request = urllib.request.Request(f"{os.environ['ORDERS_API_URL']}/orders/{order_id}?expand=refunds")
    if os.environ.get("ORDERS_TOKEN"):
        request.add_header("Authorization", f"Bearer {os.environ['ORDERS_TOKEN']}")
    with urllib.request.urlopen(request, timeout=30) as response:
        return response.read().decode()


async def call_tool(mcp: Client, name: str, arguments: dict[str, Any], args: argparse.Namespace) -> str:
    if name == "lookup_order":
        return lookup_order(**arguments)
    if args.units:
        arguments = {**arguments, "units": args.units}
    result = await mcp.call_tool(name, arguments)
    if result.is_error:
        raise RuntimeError(f"tool {name} failed: {result.content}")
    return "".join(getattr(block, "text", "") for block in result.content)


async def question(mcp: Client, args: argparse.Namespace) -> str:
    if not args.prompt_city:
        return args.question
    listed = await mcp.list_prompts()
    prompt = await mcp.get_prompt(listed.prompts[0].name, {"city": args.prompt_city})
    return "".join(getattr(m.content, "text", "") for m in prompt.messages)


async def run(args: argparse.Namespace) -> str:
    model = AsyncOpenAI(max_retries=0)
    async with Client(weather_server(args), mode=args.mcp_mode) as mcp:
        listed = await mcp.list_tools()
        tools = [
            {
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description or "",
                    "parameters": t.input_schema,
                },
            }
            for t in listed.tools
        ]
        if args.orders:
            tools.append(LOOKUP_ORDER)
        messages: list[dict[str, Any]] = [{"role": "user", "content": await question(mcp, args)}]
        for _ in range(5):
            reply = await model.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=tools)
            message = reply.choices[0].message
            if not message.tool_calls:
                return message.content or ""
            messages.append(
                message.model_dump(exclude_none=True, exclude={"annotations", "audio", "refusal"})
            )
            for call in message.tool_calls:
                output = await call_tool(mcp, call.function.name, json.loads(call.function.arguments), args)
                print(f"tool {call.function.name}: {output}", flush=True)
                messages.append({"role": "tool", "tool_call_id": call.id, "content": output})
    raise RuntimeError("the model kept calling tools")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mcp-mode", default="auto", choices=("auto", "legacy"))
    parser.add_argument("--stdio", action="store_true")
    parser.add_argument("--orders", action="store_true")
    parser.add_argument("--units", default=None)
    parser.add_argument("--question", default="What is the weather in Oslo?")
    parser.add_argument("--prompt-city", default=None)
    parser.add_argument("--api-key")
    parser.add_argument("--token")
    print(asyncio.run(run(parser.parse_args())), flush=True)


if __name__ == "__main__":
    main()
