"""One model call through an SDK or framework with its own retry settings, for the fault tests.

    python fault_agent.py gemini|bedrock|bedrock-stream|pydantic-ai|langchain

Prints `answer: TEXT`, or `error: EXCEPTION` and exits 1 when the call failed after its retries.
"""

from __future__ import annotations

import sys


def gemini() -> str:
    from google import genai
    from google.genai import types

    retry = types.HttpRetryOptions(attempts=3, initial_delay=0.01, max_delay=0.05)
    client = genai.Client(http_options=types.HttpOptions(retry_options=retry))
    return client.models.generate_content(model="gemini-2.5-flash", contents="Say hello").text or ""


def _bedrock():  # type: ignore[no-untyped-def]
    import boto3
    from botocore.config import Config

    config = Config(retries={"mode": "standard", "max_attempts": 3})
    return boto3.client("bedrock-runtime", region_name="us-east-1", config=config)


MESSAGES = [{"role": "user", "content": [{"text": "Say hello"}]}]


def bedrock() -> str:
    reply = _bedrock().converse(modelId="us.amazon.nova-pro-v1:0", messages=MESSAGES)
    return reply["output"]["message"]["content"][0]["text"]


def bedrock_stream() -> str:
    reply = _bedrock().converse_stream(modelId="us.amazon.nova-pro-v1:0", messages=MESSAGES)
    return "".join(
        e["contentBlockDelta"]["delta"]["text"] for e in reply["stream"] if "contentBlockDelta" in e
    )


def pydantic_ai() -> str:
    from openai import AsyncOpenAI
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    provider = OpenAIProvider(openai_client=AsyncOpenAI(max_retries=2))
    return Agent(OpenAIChatModel("gpt-4o-mini", provider=provider)).run_sync("Say hello").output


def langchain() -> str:
    from langchain_openai import ChatOpenAI

    return str(ChatOpenAI(model="gpt-4o-mini", max_retries=2).invoke("Say hello").content)


CALLS = {
    "gemini": gemini,
    "bedrock": bedrock,
    "bedrock-stream": bedrock_stream,
    "pydantic-ai": pydantic_ai,
    "langchain": langchain,
}

if __name__ == "__main__":
    try:
        print("answer:", CALLS[sys.argv[1]]())
    except Exception as exc:  # the agent's failure, as a line the test reads
        print("error:", type(exc).__name__)
        sys.exit(1)
