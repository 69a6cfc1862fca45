"""A scripted agent for tests: makes the calls listed in a JSON file with the official SDKs.

    python calls.py CALLS.json [--at-once]
                                   each item: {"sdk": "openai"|"anthropic", "api": "chat"|"responses"|
                                   "embeddings"|"messages", "body": {...}}; a chat item with
                                   "hang_up": true reads its answer's JSON and closes the connection
                                   without waiting for the body's end
Prints one JSON line per call (the parsed result, or the error), exits 1 when a call failed.
--at-once: every call at the same time, each from a thread of its own, lines in the order they end.
"""

from __future__ import annotations

import json
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import anthropic
import openai


def _key(item: dict) -> dict:
    return {"api_key": item["api_key"]} if "api_key" in item else {}


def call(item: dict) -> object:
    body = item["body"]
    if item.get("sdk", "openai") == "anthropic":
        client = anthropic.Anthropic(max_retries=0, **_key(item))
        if body.get("stream"):
            body = {k: v for k, v in body.items() if k != "stream"}
            with client.messages.stream(**body) as stream:
                return {"text": "".join(stream.text_stream)}
        return client.messages.create(**body).model_dump()
    client = openai.OpenAI(max_retries=0, **_key(item))
    if item.get("hang_up"):
        return _hang_up(client, body)
    api = item.get("api", "chat")
    if api == "embeddings":
        return client.embeddings.create(**body).model_dump()
    if api == "responses":
        return client.responses.create(**body).model_dump()
    if body.get("stream"):
        chunks = client.chat.completions.create(**body)
        return {"text": "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)}
    return client.chat.completions.create(**body).model_dump()


def _hang_up(client: openai.OpenAI, body: dict) -> object:
    """A chat completion read as its bytes arrive: once they make the whole JSON answer, the
    connection is closed, whatever else the server still had to send."""
    with client.chat.completions.with_streaming_response.create(**body) as response:
        received = b""
        for chunk in response.iter_bytes():
            received += chunk
            try:
                return json.loads(received)
            except ValueError:
                continue
    raise ValueError("the answer ended before its JSON did")


_PRINTING = threading.Lock()


def outcome(item: dict) -> bool:
    """Make one call and print what came of it; False when it failed."""
    try:
        line, ok = json.dumps({"ok": call(item)}, default=str), True
    except (openai.APIError, anthropic.APIError) as exc:
        line, ok = json.dumps({"error": type(exc).__name__, "message": str(exc)}), False
    with _PRINTING:
        print(line, flush=True)
    return ok


def main() -> int:
    items = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
    if "--at-once" in sys.argv[2:]:
        with ThreadPoolExecutor(max_workers=len(items)) as pool:
            done = list(pool.map(outcome, items))
    else:
        done = [outcome(item) for item in items]
    return 0 if all(done) else 1


if __name__ == "__main__":
    sys.exit(main())
