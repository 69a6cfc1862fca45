"""Record examples/fixtures/example.attest.json with `attest capture`, offline.

The bundled fixture was made this way: `attest capture` runs examples/agent.py against a scripted
OpenAI-compatible upstream on loopback (ATTEST_OPENAI_UPSTREAM) that answers as the real API does, and
against the real orders MCP server (examples/orders_server.py) on loopback, declared with
`--tool ORDERS_MCP_URL=...`, so the example needs no key to record or to replay. To record against the
real API instead, with the orders server running:

    OPENAI_API_KEY=... attest capture --name example --fixtures-dir examples/fixtures \
        --tool ORDERS_MCP_URL=http://127.0.0.1:PORT/mcp -- python examples/agent.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from upstream import FakeUpstream, Reply  # noqa: E402  (the tests' scripted provider)

TOOL_CALL = {
    "id": "chatcmpl-CkZ9Qm2VfT7rX4pLw8sYd1NbGh3Je",
    "object": "chat.completion",
    "created": 1764569740,
    "model": "gpt-4o-mini-2024-07-18",
    "choices": [
        {
            "index": 0,
            "message": {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_Xb3kQ9mZt2LpV7wR1yNcF4sH",
                        "type": "function",
                        "function": {"name": "lookup_order", "arguments": '{"order_id":"O-1042"}'},
                    }
                ],
                "refusal": None,
                "annotations": [],
            },
            "logprobs": None,
            "finish_reason": "tool_calls",
        }
    ],
    "usage": {"prompt_tokens": 96, "completion_tokens": 18, "total_tokens": 114},
    "service_tier": "default",
    "system_fingerprint": "fp_560af6e559",
}
ANSWER = ["Yes", ": order O-1042 was refunded twice", ", $42.00 each time", "."]


def chunk(delta: dict, finish: str | None = None) -> bytes:
    body = {
        "id": "chatcmpl-CkZ9RaQ4nY8uB2cVx6tKe0MdLs7Wp",
        "object": "chat.completion.chunk",
        "created": 1764569741,
        "model": "gpt-4o-mini-2024-07-18",
        "service_tier": "default",
        "system_fingerprint": "fp_560af6e559",
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
    }
    return f"data: {json.dumps(body, separators=(',', ':'))}\n\n".encode()


def stream() -> list[bytes]:
    events = [chunk({"role": "assistant", "content": "", "refusal": None})]
    events += [chunk({"content": piece}) for piece in ANSWER]
    return [*events, chunk({}, "stop"), b"data: [DONE]\n\n"]


def orders_server() -> tuple[subprocess.Popen[str], str]:
    """examples/orders_server.py in its own process, and its MCP URL."""
    proc = subprocess.Popen(
        [sys.executable, str(HERE / "orders_server.py")], stdout=subprocess.PIPE, text=True
    )
    port = proc.stdout.readline().strip() if proc.stdout else ""
    if not port.isdigit():
        proc.kill()
        raise SystemExit("the orders server did not start")
    return proc, f"http://127.0.0.1:{port}/mcp"


def main() -> int:
    replies = [
        Reply(body=json.dumps(TOOL_CALL).encode(), headers={"content-type": "application/json"}),
        Reply(events=stream(), headers={"content-type": "text/event-stream; charset=utf-8"}),
    ]
    server, orders_url = orders_server()
    try:
        with FakeUpstream(replies) as upstream:
            env = {
                **os.environ,
                "ATTEST_OPENAI_UPSTREAM": upstream.url,
                "OPENAI_API_KEY": "example-recording",
            }
            argv = [
                "attest",
                "capture",
                "--name",
                "example",
                "--fixtures-dir",
                "examples/fixtures",
                "--tool",
                f"ORDERS_MCP_URL={orders_url}",
                "--",
                "python",
                "examples/agent.py",
            ]
            return subprocess.run(argv, env=env, cwd=HERE.parent, check=False).returncode
    finally:
        server.terminate()
        server.wait(timeout=30)


if __name__ == "__main__":
    sys.exit(main())
