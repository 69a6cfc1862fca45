"""A small tool-using agent for the capture tests, built on the official SDKs.

    python capture_agent.py flow     three multi-turn flows (below), then one OTLP export
    python capture_agent.py chat     one chat completion
    python capture_agent.py stream   one streamed chat completion, printing each piece as it arrives
    python capture_agent.py none     no model call at all
Options: --exit N (exit status when every call succeeded), --fail-if PATH (exit 1 when PATH exists),
--retries N (the SDKs' max_retries, default 0). CAPTURE_AGENT_OFFSET=N makes `multiply` answer N more
(a tool changed since the recording).

The flows: OpenAI chat, streamed, where the model asks for `multiply` and the result goes back under
its call id; OpenAI responses, where the function output goes back with previous_response_id (the
response id echoed); Anthropic messages, streamed, where two tool_use blocks are answered with
tool_results under their ids. Output is the tool calls made and the final answers, never an id, so a
capture and its replay print the same thing.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import urllib.request
from pathlib import Path

import openai

MULTIPLY = {
    "name": "multiply",
    "description": "Multiply two numbers.",
    "parameters": {
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
        "type": "object",
    },
}
PELICAN = {
    "name": "pelican_name_generator",
    "description": "",
    "input_schema": {"properties": {}, "type": "object"},
}
PELICAN_NAMES = ["Charles", "Sammy"]


def multiply(arguments: str) -> str:
    args = json.loads(arguments)
    # A tool that changed since the recording: the requests carrying its result no longer match.
    return str(args["a"] * args["b"] + int(os.environ.get("CAPTURE_AGENT_OFFSET", "0")))


def streamed_chat(client: openai.OpenAI, messages: list[dict]) -> tuple[str, list[dict]]:
    stream = client.chat.completions.create(
        model="gpt-4o-mini",
        messages=messages,
        tools=[{"type": "function", "function": MULTIPLY}],
        stream=True,
        stream_options={"include_usage": True},
    )
    text: list[str] = []
    calls: dict[int, dict] = {}
    for chunk in stream:
        for choice in chunk.choices:
            delta = choice.delta
            text.append(delta.content or "")
            for call in delta.tool_calls or []:
                slot = calls.setdefault(call.index, {"id": "", "name": "", "arguments": ""})
                slot["id"] = call.id or slot["id"]
                if call.function is not None:
                    slot["name"] = call.function.name or slot["name"]
                    slot["arguments"] += call.function.arguments or ""
    return "".join(text), [calls[i] for i in sorted(calls)]


def chat_flow(client: openai.OpenAI) -> None:
    messages: list[dict] = [{"role": "user", "content": "What is 1231 * 2331?"}]
    _, calls = streamed_chat(client, messages)
    messages.append(
        {
            "role": "assistant",
            "tool_calls": [
                {
                    "type": "function",
                    "id": c["id"],
                    "function": {"name": c["name"], "arguments": c["arguments"]},
                }
                for c in calls
            ],
        }
    )
    for call in calls:
        result = multiply(call["arguments"])
        print(f"chat tool {call['name']}({call['arguments']}) = {result}")
        messages.append({"role": "tool", "tool_call_id": call["id"], "content": result})
    answer, _ = streamed_chat(client, messages)
    print(f"chat answer: {answer}")


def responses_flow(client: openai.OpenAI) -> None:
    tools = [{"type": "function", **MULTIPLY}]
    first = client.responses.create(
        model="gpt-5.5",
        input=[{"role": "user", "content": "What is 1231 * 2331? Use the multiply tool."}],
        tools=tools,
    )
    outputs = []
    for item in first.output:
        if item.type == "function_call":
            result = multiply(item.arguments)
            print(f"responses tool {item.name}({item.arguments}) = {result}")
            outputs.append({"type": "function_call_output", "call_id": item.call_id, "output": result})
    second = client.responses.create(
        model="gpt-5.5", previous_response_id=first.id, input=outputs, tools=tools
    )
    print(f"responses answer: {second.output_text}")


def messages_flow(retries: int) -> None:
    import anthropic  # only this flow needs it, and it is slow to import

    client = anthropic.Anthropic(max_retries=retries)
    messages: list[dict] = [
        {"role": "user", "content": [{"type": "text", "text": "Two names for a pet pelican"}]}
    ]
    request = {"model": "claude-haiku-4-5-20251001", "max_tokens": 8192, "tools": [PELICAN]}
    with client.messages.stream(messages=messages, **request) as stream:
        first = stream.get_final_message()
    uses = [block for block in first.content if block.type == "tool_use"]
    messages.append(
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": u.id, "name": u.name, "input": u.input} for u in uses],
        }
    )
    results = []
    for use, name in zip(uses, PELICAN_NAMES, strict=False):
        print(f"messages tool {use.name} = {name}")
        results.append({"type": "tool_result", "tool_use_id": use.id, "content": name})
    messages.append({"role": "user", "content": results})
    with client.messages.stream(messages=messages, **request) as stream:
        print(f"messages answer: {''.join(stream.text_stream)}")


def export_trace() -> None:
    request = urllib.request.Request(
        os.environ["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"],
        data=b'{"resourceSpans": []}',
        headers={"content-type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        print(f"otlp export: {response.status}")


def one_chat(client: openai.OpenAI) -> None:
    completion = client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "Say hello"}]
    )
    print(f"chat answer: {completion.choices[0].message.content}")


def one_stream(client: openai.OpenAI) -> None:
    stream = client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "Say hello"}], stream=True
    )
    for chunk in stream:
        for choice in chunk.choices:
            print(f"piece: {choice.delta.content or ''}", flush=True)


def main() -> int:
    sys.stdout.reconfigure(encoding="utf-8")  # type: ignore[union-attr]
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["flow", "chat", "stream", "none"])
    parser.add_argument("--exit", type=int, default=0)
    parser.add_argument("--fail-if", type=Path)
    parser.add_argument("--retries", type=int, default=0)
    args = parser.parse_args()
    oai = openai.OpenAI(max_retries=args.retries)
    try:
        if args.mode == "flow":
            chat_flow(oai)
            responses_flow(oai)
            messages_flow(args.retries)
            export_trace()
        elif args.mode == "chat":
            one_chat(oai)
        elif args.mode == "stream":
            one_stream(oai)
    except Exception as exc:  # an API error, or a stream cut off mid-way
        print(f"error: {type(exc).__name__}: {exc}", flush=True)
        return 1
    if args.fail_if is not None and args.fail_if.exists():
        print("failing on purpose", flush=True)
        return 1
    return args.exit


if __name__ == "__main__":
    sys.exit(main())
