"""A small Gemini agent on the official google-genai SDK, for the provider tests.

    python gemini_agent.py flow [QUESTION]   function calling (the model asks for `multiply`, the result
                                             goes back), a streamed answer, countTokens, an embedding
    python gemini_agent.py ask [QUESTION]    one generateContent call

The client is built with no arguments: it finds the engine through GOOGLE_GEMINI_BASE_URL and its key
through GEMINI_API_KEY, as a user's agent would. A Google API error exits with its code and message.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from google import genai
from google.genai import errors, types

MODEL = "gemini-2.5-flash"
SYSTEM = "You are a careful calculator. Use the tools."
MULTIPLY = types.FunctionDeclaration(
    name="multiply",
    description="Multiply two numbers.",
    parameters_json_schema={
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
    },
)
TOOLS = types.GenerateContentConfig(
    system_instruction=SYSTEM,
    tools=[types.Tool(function_declarations=[MULTIPLY])],
    automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
)


def ask(client: genai.Client, question: str) -> None:
    print("answer:", client.models.generate_content(model=MODEL, contents=question).text)


def flow(client: genai.Client, question: str) -> None:
    contents: list[types.Content] = [types.Content(role="user", parts=[types.Part(text=question)])]
    first = client.models.generate_content(model=MODEL, contents=contents, config=TOOLS)
    (call,) = first.function_calls or []
    args = dict(call.args or {})
    result = int(args["a"]) * int(args["b"])
    print(f"tool {call.name}({args['a']}, {args['b']}) = {result}")
    contents += [
        first.candidates[0].content,
        types.Content(
            role="user",
            parts=[types.Part.from_function_response(name="multiply", response={"result": result})],
        ),
    ]
    print("answer:", client.models.generate_content(model=MODEL, contents=contents, config=TOOLS).text)
    pieces = [
        chunk.text
        for chunk in client.models.generate_content_stream(model=MODEL, contents="Say it in words.")
    ]
    print("streamed:", "|".join(p for p in pieces if p))
    print("tokens:", client.models.count_tokens(model=MODEL, contents=question).total_tokens)
    embedded = client.models.embed_content(model="gemini-embedding-001", contents="multiply")
    print("embedding:", embedded.embeddings[0].values)


def main(client_for: Callable[[str], genai.Client] = lambda _what: genai.Client()) -> int:
    """Run the calls `argv[1]` names on the client `client_for` builds for them."""
    what = sys.argv[1]
    question = sys.argv[2] if len(sys.argv) > 2 else "What is 1231 * 2331?"
    try:
        (flow if what == "flow" else ask)(client_for(what), question)
    except errors.APIError as exc:
        print(f"google error {exc.code}: {exc.message}", file=sys.stderr)
        return 4
    return 0


if __name__ == "__main__":
    sys.exit(main())
