"""One small weather agent per framework, written the way each framework's users write it.

    python frameworks.py FRAMEWORK [SYSTEM_PROMPT]

Each makes a tool round trip (the model asks for `get_weather`, the tool answers, the model replies)
and prints the reply. Every client is built from the environment only, as a user's agent is.
"""

from __future__ import annotations

import json
import sys

SYSTEM = "You are a weather assistant."
QUESTION = "What is the weather in Paris?"
MODEL = "gpt-4o-mini"


def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"Sunny in {city}"


WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}


def chat_loop(ask, system: str) -> str:
    """A hand-written tool loop over chat-completions-shaped messages (LangChain, LiteLLM users)."""
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


def pydantic_ai(system: str) -> str:
    from pydantic_ai import Agent

    agent = Agent(f"openai:{MODEL}", system_prompt=system, tools=[get_weather])
    return agent.run_sync(QUESTION).output


def langchain(system: str) -> str:
    from langchain_core.messages import HumanMessage, SystemMessage, ToolMessage
    from langchain_openai import ChatOpenAI

    model = ChatOpenAI(model=MODEL, max_retries=0).bind_tools([get_weather])
    messages: list = [SystemMessage(system), HumanMessage(QUESTION)]
    while True:
        reply = model.invoke(messages)
        if not reply.tool_calls:
            return str(reply.content)
        messages.append(reply)
        for call in reply.tool_calls:
            messages.append(ToolMessage(get_weather(**call["args"]), tool_call_id=call["id"]))


def openai_agents(system: str) -> str:
    from agents import Agent, Runner, function_tool

    agent = Agent(name="weather", instructions=system, model=MODEL, tools=[function_tool(get_weather)])
    return Runner.run_sync(agent, QUESTION).final_output


def litellm(system: str) -> str:
    import litellm as lite

    def ask(messages: list) -> dict:
        reply = lite.completion(model=MODEL, messages=messages, tools=[WEATHER_TOOL], num_retries=0)
        return reply.choices[0].message.model_dump(exclude_none=True)

    return chat_loop(ask, system)


def instructor(system: str) -> str:
    import instructor as instr
    import openai
    from pydantic import BaseModel

    class Weather(BaseModel):
        city: str
        summary: str

    client = instr.from_openai(openai.OpenAI(max_retries=0))
    weather = client.chat.completions.create(
        model=MODEL,
        response_model=Weather,
        max_retries=0,
        messages=[{"role": "system", "content": system}, {"role": "user", "content": QUESTION}],
    )
    return f"{weather.city}: {weather.summary}"


AGENTS = {f.__name__: f for f in (pydantic_ai, langchain, openai_agents, litellm, instructor)}

if __name__ == "__main__":
    print(AGENTS[sys.argv[1]](sys.argv[2] if len(sys.argv) > 2 else SYSTEM), flush=True)
