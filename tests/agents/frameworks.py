"""One small weather agent per framework, written the way each framework's users write it.

    python frameworks.py FRAMEWORK [--scenario NAME] [--system PROMPT] [--tool-description TEXT]

Runs each scenario the framework has, in order, and prints `SCENARIO: REPLY` for each: `tool` (a tool
round trip: the model asks for `get_weather`, the tool answers, the model replies; on chat completions,
or on the Responses API where that is the framework's default), `stream` (the same round trip streamed
on chat completions), `responses` (on the Responses API), `anthropic` (on Anthropic's Messages API)
and `anthropic_stream` (the same round trip streamed there).
Every client is built from the environment only, as a user's agent is. `--scenario` runs that one only;
`--tool-description` changes what the agent tells the model about its tool.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from collections.abc import Callable
from typing import Any

SYSTEM = "You are a weather assistant."
QUESTION = "What is the weather in Paris?"
MODEL = "gpt-4o-mini"
CLAUDE = "claude-haiku-4-5"
DESCRIPTION = "The weather in a city."


def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"Sunny in {city}"


def weather_tool(description: str) -> dict:
    return {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": description,
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    }


def described(description: str) -> Callable[[str], str]:
    """`get_weather` as the frameworks read it (name, docstring, signature), with this description."""
    get_weather.__doc__ = description
    return get_weather


def chat_loop(ask: Callable[[list], dict], system: str) -> str:
    """A hand-written tool loop over chat-completions-shaped messages (LiteLLM users)."""
    messages: list = [{"role": "system", "content": system}, {"role": "user", "content": QUESTION}]
    while True:
        message = ask(messages)
        calls = message.get("tool_calls") or []
        if not calls:
            return message["content"]
        messages.append(message)
        for call in calls:
            args = json.loads(call["function"]["arguments"])
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": get_weather(**args)})


def responses_loop(ask: Callable[[list], Any]) -> str:
    """A hand-written tool loop over Responses API items (LiteLLM users): each function call goes back
    with its output, as the Responses API asks when no previous response id is passed."""
    items: list = [{"role": "user", "content": QUESTION}]
    while True:
        response = ask(items)
        calls = [item for item in response.output if item.type == "function_call"]
        if not calls:
            return response.output_text
        for call in calls:
            output = get_weather(**json.loads(call.arguments))
            items += [
                {
                    "type": "function_call",
                    "call_id": call.call_id,
                    "name": call.name,
                    "arguments": call.arguments,
                },
                {"type": "function_call_output", "call_id": call.call_id, "output": output},
            ]


# --- pydantic-ai -----------------------------------------------------------------------------------


def pydantic_ai(scenario: str, system: str, description: str) -> str:
    from pydantic_ai import Agent

    # `openai-chat:` models use chat completions, `openai:` ones the Responses API, `anthropic:` ones an
    # AnthropicModel on the Messages API.
    if scenario.startswith("anthropic"):
        model = f"anthropic:{CLAUDE}"
    else:
        model = f"openai:{MODEL}" if scenario == "responses" else f"openai-chat:{MODEL}"
    agent = Agent(model, system_prompt=system, tools=[described(description)])
    if scenario.endswith("stream"):
        return agent.run_stream_sync(QUESTION).get_output()
    return agent.run_sync(QUESTION).output


# --- LangChain -------------------------------------------------------------------------------------


def langchain(scenario: str, system: str, description: str) -> str:
    from langchain_core.messages import HumanMessage, SystemMessage, ToolMessage

    if scenario == "anthropic":
        from langchain_anthropic import ChatAnthropic

        chat: Any = ChatAnthropic(model=CLAUDE, max_retries=0)
    else:
        from langchain_openai import ChatOpenAI

        chat = ChatOpenAI(model=MODEL, max_retries=0, use_responses_api=scenario == "responses")
    model = chat.bind_tools([described(description)])
    messages: list = [SystemMessage(system), HumanMessage(QUESTION)]
    while True:
        if scenario == "stream":
            reply: Any = None
            for chunk in model.stream(messages):
                reply = chunk if reply is None else reply + chunk
        else:
            reply = model.invoke(messages)
        if not reply.tool_calls:
            return reply.text
        messages.append(reply)
        for call in reply.tool_calls:
            messages.append(ToolMessage(get_weather(**call["args"]), tool_call_id=call["id"]))


# --- the OpenAI Agents SDK -------------------------------------------------------------------------


def openai_agents(scenario: str, system: str, description: str) -> str:
    from agents import Agent, OpenAIChatCompletionsModel, Runner, function_tool
    from openai import AsyncOpenAI

    tools = [function_tool(described(description))]
    if scenario in ("tool", "anthropic"):
        # The SDK's default model is on the Responses API; other providers' models go through LiteLLM.
        if scenario == "anthropic":
            from agents.extensions.models.litellm_model import LitellmModel

            chosen: Any = LitellmModel(model=f"anthropic/{CLAUDE}")
        else:
            chosen = MODEL
        agent = Agent(name="weather", instructions=system, model=chosen, tools=tools)
        return Runner.run_sync(agent, QUESTION).final_output
    model = OpenAIChatCompletionsModel(model=MODEL, openai_client=AsyncOpenAI(max_retries=0))
    agent = Agent(name="weather", instructions=system, model=model, tools=tools)

    async def streamed() -> str:
        result = Runner.run_streamed(agent, QUESTION)
        async for _ in result.stream_events():
            pass
        return result.final_output

    return asyncio.run(streamed())


# --- LiteLLM ---------------------------------------------------------------------------------------


def litellm(scenario: str, system: str, description: str) -> str:
    import litellm as lite

    model = f"anthropic/{CLAUDE}" if scenario == "anthropic" else MODEL
    if scenario == "responses":
        flat = [{"type": "function", **weather_tool(description)["function"]}]  # the Responses API shape

        def respond(items: list) -> Any:
            return lite.responses(model=model, input=items, instructions=system, tools=flat, num_retries=0)

        return responses_loop(respond)
    tools = [weather_tool(description)]

    def ask(messages: list) -> dict:
        if scenario == "stream":
            chunks = list(
                lite.completion(model=model, messages=messages, tools=tools, stream=True, num_retries=0)
            )
            reply: Any = lite.stream_chunk_builder(chunks, messages=messages)
        else:
            reply = lite.completion(model=model, messages=messages, tools=tools, num_retries=0)
        return reply.choices[0].message.model_dump(exclude_none=True)

    return chat_loop(ask, system)


# --- instructor ------------------------------------------------------------------------------------


def instructor(scenario: str, system: str, description: str) -> str:
    import instructor as instr
    import openai
    from pydantic import BaseModel, Field

    class Weather(BaseModel):
        city: str
        summary: str = Field(description=description)

    messages = [{"role": "system", "content": system}, {"role": "user", "content": QUESTION}]
    asked = {"response_model": Weather, "max_retries": 0}
    if scenario == "anthropic":
        import anthropic

        claude = instr.from_anthropic(anthropic.Anthropic(max_retries=0))
        weather = claude.messages.create(model=CLAUDE, max_tokens=1024, messages=messages, **asked)
    elif scenario == "responses":
        client = instr.from_openai(openai.OpenAI(max_retries=0), mode=instr.Mode.RESPONSES_TOOLS)
        weather = client.responses.create(model=MODEL, input=messages, **asked)
    elif scenario == "stream":
        client = instr.from_openai(openai.OpenAI(max_retries=0))
        partials = client.chat.completions.create_partial(model=MODEL, messages=messages, **asked)
        *_, weather = partials  # each partial fills in more; the last one is whole
    else:
        client = instr.from_openai(openai.OpenAI(max_retries=0))
        weather = client.chat.completions.create(model=MODEL, messages=messages, **asked)
    return f"{weather.city}: {weather.summary}"


AGENTS: dict[str, Callable[[str, str, str], str]] = {
    f.__name__: f for f in (pydantic_ai, langchain, openai_agents, litellm, instructor)
}
# What each framework is run on, in order. instructor runs in a virtualenv of its own (see the docs'
# "Your framework", docs/guides/frameworks.md), so this script imports each framework only inside its own function.
SCENARIOS: dict[str, tuple[str, ...]] = {
    "pydantic_ai": ("tool", "stream", "responses", "anthropic", "anthropic_stream"),
    "langchain": ("tool", "stream", "responses", "anthropic"),
    "openai_agents": ("tool", "stream", "anthropic"),
    "litellm": ("tool", "stream", "responses", "anthropic"),
    "instructor": ("tool", "stream", "responses", "anthropic"),
}


def run(
    framework: str, system: str = SYSTEM, description: str = DESCRIPTION, only: str | None = None
) -> list[str]:
    """`SCENARIO: REPLY` for each scenario of `framework` (or scenario `only`), in order."""
    scenarios = [only] if only else SCENARIOS[framework]
    return [f"{scenario}: {AGENTS[framework](scenario, system, description)}" for scenario in scenarios]


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("framework", choices=sorted(AGENTS))
    parser.add_argument("--scenario", choices=sorted({s for names in SCENARIOS.values() for s in names}))
    parser.add_argument("--system", default=SYSTEM)
    parser.add_argument("--tool-description", default=DESCRIPTION)
    args = parser.parse_args()
    for line in run(args.framework, args.system, args.tool_description, args.scenario):
        print(line, flush=True)
