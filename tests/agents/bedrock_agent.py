"""A small Bedrock agent on boto3's bedrock-runtime client, for the provider tests.

    python bedrock_agent.py flow [QUESTION]   Converse with a tool (the model asks for `multiply`, the
                                              result goes back), ConverseStream, InvokeModel and
                                              InvokeModelWithResponseStream with Anthropic bodies
    python bedrock_agent.py ask [QUESTION]    one Converse call
    python bedrock_agent.py stream            one ConverseStream call

The client is built with a region only: it finds the engine through AWS_ENDPOINT_URL_BEDROCK_RUNTIME
and its credentials in the environment, as a user's agent would. An AWS error exits with its code.
"""

from __future__ import annotations

import json
import sys

import boto3
from botocore.exceptions import ClientError

CONVERSE_MODEL = "us.amazon.nova-pro-v1:0"
CLAUDE = "anthropic.claude-3-5-haiku-20241022-v1:0"
# An inference profile by ARN: its `/` travels escaped in the path.
CLAUDE_PROFILE = (
    "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-sonnet-4-20250514-v1:0"
)
SYSTEM = [{"text": "You are a careful calculator. Use the tools."}]
TOOLS = {
    "tools": [
        {
            "toolSpec": {
                "name": "multiply",
                "description": "Multiply two numbers.",
                "inputSchema": {
                    "json": {
                        "type": "object",
                        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                        "required": ["a", "b"],
                    }
                },
            }
        }
    ]
}


def user(text: str) -> dict:
    return {"role": "user", "content": [{"text": text}]}


def ask(client, question: str) -> None:
    answer = client.converse(modelId=CONVERSE_MODEL, messages=[user(question)])
    print("answer:", answer["output"]["message"]["content"][0]["text"])


def with_tools(client, messages: list[dict]) -> dict:
    return client.converse(
        modelId=CONVERSE_MODEL,
        system=SYSTEM,
        messages=messages,
        toolConfig=TOOLS,
        inferenceConfig={"maxTokens": 512},
    )


def converse(client, question: str) -> None:
    messages = [user(question)]
    first = with_tools(client, messages)
    (use,) = [block["toolUse"] for block in first["output"]["message"]["content"] if "toolUse" in block]
    result = use["input"]["a"] * use["input"]["b"]
    print(f"tool {use['name']}({use['input']['a']}, {use['input']['b']}) = {result}")
    messages += [
        first["output"]["message"],
        {
            "role": "user",
            "content": [
                {"toolResult": {"toolUseId": use["toolUseId"], "content": [{"json": {"result": result}}]}}
            ],
        },
    ]
    second = with_tools(client, messages)
    print(
        "answer:",
        second["output"]["message"]["content"][0]["text"],
        "| usage:",
        second["usage"]["outputTokens"],
    )


def stream_pieces(client) -> tuple[list[str], list[dict]]:
    streamed = client.converse_stream(modelId=CONVERSE_MODEL, messages=[user("Say it in words.")])
    events = list(streamed["stream"])
    return [e["contentBlockDelta"]["delta"]["text"] for e in events if "contentBlockDelta" in e], events


def converse_stream(client) -> None:
    pieces, events = stream_pieces(client)
    print("streamed:", "|".join(pieces), "| events:", ",".join(next(iter(e)) for e in events))


def claude_body(question: str) -> str:
    return json.dumps(
        {"anthropic_version": "bedrock-2023-05-31", "max_tokens": 256, "messages": [user(question)]}
    )


def invoke(client) -> None:
    answer = client.invoke_model(modelId=CLAUDE, body=claude_body("Check: 1231 * 2331?"))
    doc = json.loads(answer["body"].read())
    print("invoked:", doc["content"][0]["text"], "| stop:", doc["stop_reason"])
    streamed = client.invoke_model_with_response_stream(
        modelId=CLAUDE_PROFILE, body=claude_body("Once more?")
    )
    kinds, text = [], []
    for event in streamed["body"]:
        chunk = json.loads(event["chunk"]["bytes"])
        kinds.append(chunk["type"])
        if chunk["type"] == "content_block_delta":
            text.append(chunk["delta"]["text"])
    print("invoke-streamed:", "|".join(text), "| events:", ",".join(kinds))


def main() -> int:
    what = sys.argv[1]
    question = sys.argv[2] if len(sys.argv) > 2 else "What is 1231 * 2331?"
    client = boto3.client("bedrock-runtime", region_name="us-east-1")
    try:
        if what == "flow":
            converse(client, question)
            converse_stream(client)
            invoke(client)
        elif what == "stream":
            print("streamed:", "|".join(stream_pieces(client)[0]))
        else:
            ask(client, question)
    except ClientError as exc:
        error = exc.response["Error"]
        print(f"aws error {error['Code']}: {error['Message']}", file=sys.stderr)
        return 4
    return 0


if __name__ == "__main__":
    sys.exit(main())
