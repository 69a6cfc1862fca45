"""How much matching normalization costs per replayed call, against hashing the same body raw.

`request_key` runs on every request the replay proxy answers. The baseline is the least any content
key must do: parse the JSON body and hash its canonical form. Both run here, on the same bodies, and
the ratio is what to watch.

    python bench/bench_normalize.py
"""

from __future__ import annotations

import hashlib
import json
import timeit

from attest_toolkit.credentials.scan import Secrets
from attest_toolkit.normalize import parse_body, request_key

SECRETS = Secrets.of(["a-dotenv-secret-value-123", "another-dotenv-value-456"])


def chat_body(turns: int) -> dict:
    """A chat request with a system prompt, tool calls, tool results and a long history."""
    messages: list[dict] = [
        {
            "role": "system",
            "content": "You are a support agent for an online shop. Be precise and brief. " * 12,
        }
    ]
    for i in range(turns):
        call = f"call_Zr5UUuTt3pf61kjwAJIY{i:04d}"
        messages += [
            {
                "role": "user",
                "content": f"Where is order O-{1040 + i}? I ordered it on 2025-01-0{i % 9 + 1}.",
            },
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": call,
                        "type": "function",
                        "function": {
                            "name": "lookup_order",
                            "arguments": json.dumps({"order": f"O-{1040 + i}"}),
                        },
                    }
                ],
            },
            {
                "role": "tool",
                "tool_call_id": call,
                "content": f'{{"status": "shipped", "eta": "2025-02-0{i % 9 + 1}"}}',
            },
            {"role": "assistant", "content": f"Order O-{1040 + i} has shipped and should arrive soon."},
        ]
    tool = {
        "type": "function",
        "function": {
            "name": "lookup_order",
            "description": "Look an order up by its number.",
            "parameters": {
                "type": "object",
                "properties": {"order": {"type": "string"}},
                "required": ["order"],
            },
        },
    }
    return {"model": "gpt-4o-mini", "messages": messages, "tools": [tool], "temperature": 0, "stream": True}


def raw_key(raw: bytes) -> str:
    canonical = json.dumps(json.loads(raw), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def attest_key(raw: bytes) -> str:
    body = parse_body(raw, "application/json")
    return request_key("openai", "POST", "/v1/chat/completions", "", body, SECRETS).key


def per_call_ms(fn, raw: bytes, number: int) -> float:
    return min(timeit.repeat(lambda: fn(raw), number=number, repeat=5)) / number * 1000


def main() -> None:
    print(f"{'body':>10} {'baseline ms':>12} {'request_key ms':>15} {'ratio':>7}")
    for turns in (2, 8, 32):
        raw = json.dumps(chat_body(turns)).encode()
        number = max(20, 4000 // turns)
        base, ours = per_call_ms(raw_key, raw, number), per_call_ms(attest_key, raw, number)
        print(f"{len(raw) / 1024:>8.1f}KB {base:>12.3f} {ours:>15.3f} {ours / base:>6.1f}x")


if __name__ == "__main__":
    main()
