"""A small refund agent: one tool-call round trip, then a streamed answer, with the official openai SDK.

Run it for real with a key (`OPENAI_API_KEY=... python examples/agent.py`), or replay it with no key and
no network from the bundled fixture:

    attest replay --name example --fixtures-dir examples/fixtures -- python examples/agent.py
"""

from __future__ import annotations

import json

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
ORDERS = {"O-1042": {"order_id": "O-1042", "amount": 42.0, "refunds": [42.0, 42.0]}}


def lookup_order(order_id: str) -> dict:
    return ORDERS.get(order_id, {"order_id": order_id, "error": "no such order"})


def run(question: str) -> str:
    client = OpenAI()  # built after the replay starts: it reads OPENAI_BASE_URL and OPENAI_API_KEY now
    messages: list[dict] = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": question}]
    first = client.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS, temperature=0)
    reply = first.choices[0].message
    messages.append(reply.model_dump(exclude_none=True, exclude={"annotations", "audio", "refusal"}))
    for call in reply.tool_calls or []:
        result = lookup_order(**json.loads(call.function.arguments))
        messages.append({"role": "tool", "tool_call_id": call.id, "content": json.dumps(result)})
    stream = client.chat.completions.create(
        model=MODEL, messages=messages, tools=TOOLS, temperature=0, stream=True
    )
    return "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)


if __name__ == "__main__":
    print(run("Was order O-1042 refunded twice?"))
