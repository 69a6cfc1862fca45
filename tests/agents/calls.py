"""A scripted agent for tests: makes the calls listed in a JSON file with the official SDKs.

    python calls.py CALLS.json     each item: {"sdk": "openai"|"anthropic", "api": "chat"|"responses"|
                                   "embeddings"|"messages", "body": {...}}
Prints one JSON line per call (the parsed result, or the error), exits 1 when a call failed.
"""

from __future__ import annotations

import json
import sys
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
    api = item.get("api", "chat")
    if api == "embeddings":
        return client.embeddings.create(**body).model_dump()
    if api == "responses":
        return client.responses.create(**body).model_dump()
    if body.get("stream"):
        chunks = client.chat.completions.create(**body)
        return {"text": "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)}
    return client.chat.completions.create(**body).model_dump()


def main() -> int:
    failed = 0
    for item in json.loads(Path(sys.argv[1]).read_text(encoding="utf-8")):
        try:
            print(json.dumps({"ok": call(item)}, default=str), flush=True)
        except (openai.APIError, anthropic.APIError) as exc:
            failed = 1
            print(json.dumps({"error": type(exc).__name__, "message": str(exc)}), flush=True)
    return failed


if __name__ == "__main__":
    sys.exit(main())
