"""Agent frameworks on AWS Bedrock, one call each, as their users write them.

    python bedrock_frameworks_agent.py pydantic-ai   pydantic-ai's BedrockConverseModel: a run, then a streamed run
    python bedrock_frameworks_agent.py litellm       LiteLLM's `bedrock/` models: a completion, then a streamed one
    python bedrock_frameworks_agent.py langchain-aws langchain-aws's ChatBedrockConverse: invoke, then stream

None is given an endpoint: pydantic-ai's and langchain-aws's boto3 clients read
AWS_ENDPOINT_URL_BEDROCK_RUNTIME, LiteLLM reads AWS_BEDROCK_RUNTIME_ENDPOINT, and all sign with the AWS
credentials in the environment.
"""

from __future__ import annotations

import asyncio
import sys

MODEL = "us.amazon.nova-pro-v1:0"
QUESTION = "What is 1231 * 2331?"


def pydantic_ai() -> None:
    from pydantic_ai import Agent
    from pydantic_ai.models.bedrock import BedrockConverseModel
    from pydantic_ai.providers.bedrock import BedrockProvider

    model = BedrockConverseModel(MODEL, provider=BedrockProvider(region_name="us-east-1"))
    agent = Agent(model, system_prompt="Answer in one line.")
    print("answer:", agent.run_sync(QUESTION).output)

    async def streamed() -> list[str]:
        async with agent.run_stream("Say it in words.") as run:
            return [piece async for piece in run.stream_text(delta=True)]

    print("streamed:", "|".join(asyncio.run(streamed())))


def litellm() -> None:
    import litellm as llm

    messages = [{"role": "system", "content": "Answer in one line."}, {"role": "user", "content": QUESTION}]
    done = llm.completion(model=f"bedrock/{MODEL}", messages=messages, aws_region_name="us-east-1")
    print("answer:", done.choices[0].message.content)
    words = [{"role": "user", "content": "Say it in words."}]
    chunks = llm.completion(
        model=f"bedrock/{MODEL}", messages=words, aws_region_name="us-east-1", stream=True
    )
    print("streamed:", "|".join(c.choices[0].delta.content for c in chunks if c.choices[0].delta.content))


def langchain_aws() -> None:
    from langchain_aws import ChatBedrockConverse

    chat = ChatBedrockConverse(model=MODEL, region_name="us-east-1")
    print("answer:", chat.invoke([("system", "Answer in one line."), ("human", QUESTION)]).text)
    chunks = chat.stream([("human", "Say it in words.")])
    print("streamed:", "|".join(text for c in chunks if (text := c.text)))


if __name__ == "__main__":
    {"pydantic-ai": pydantic_ai, "litellm": litellm, "langchain-aws": langchain_aws}[sys.argv[1]]()
