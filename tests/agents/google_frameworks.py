"""Agent frameworks on Gemini and Azure OpenAI, each as its users write it, for the provider tests.

    python google_frameworks.py SCENARIO [QUESTION]

Scenarios: `pydantic-ai-gemini` (`Agent("google:...")`, run_sync then run_stream_sync),
`langchain-gemini` (langchain-google-genai's `ChatGoogleGenerativeAI`, invoke then stream),
`litellm-gemini` (`gemini/` models, completion then streamed), `litellm-azure` (`azure/` models,
completion then streamed); on Vertex AI `pydantic-ai-vertex` (`Agent("google-cloud:...")`) and
`langchain-vertex` (`ChatGoogleGenerativeAI(vertexai=True)`), the project and location from
GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION. Each prints `answer: ...` and `streamed: ...`. Every
client is built from the environment only: google-genai reads GOOGLE_GEMINI_BASE_URL (with
`vertexai=True`, GOOGLE_VERTEX_BASE_URL), LiteLLM GEMINI_API_BASE and AZURE_API_BASE.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

GEMINI = "gemini-2.5-flash"
SYSTEM = "You are terse."


def pydantic_ai_model(model: str) -> Callable[[str], tuple[str, str]]:
    def run(question: str) -> tuple[str, str]:
        from pydantic_ai import Agent

        agent = Agent(model, system_prompt=SYSTEM)
        answer = agent.run_sync(question).output
        streamed = agent.run_stream_sync(question)
        return answer, "".join(streamed.stream_text(delta=True))

    return run


def langchain_chat(vertexai: bool) -> Callable[[str], tuple[str, str]]:
    def run(question: str) -> tuple[str, str]:
        from langchain_google_genai import ChatGoogleGenerativeAI

        chat = ChatGoogleGenerativeAI(model=GEMINI, max_retries=0, vertexai=vertexai)
        messages = [("system", SYSTEM), ("human", question)]
        return str(chat.invoke(messages).text), "".join(str(c.text) for c in chat.stream(messages))

    return run


def litellm_model(model: str) -> Callable[[str], tuple[str, str]]:
    def run(question: str) -> tuple[str, str]:
        import litellm

        messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": question}]
        answer = litellm.completion(model=model, messages=messages).choices[0].message.content
        chunks = litellm.completion(model=model, messages=messages, stream=True)
        return answer, "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)

    return run


SCENARIOS: dict[str, Callable[[str], tuple[str, str]]] = {
    "pydantic-ai-gemini": pydantic_ai_model(f"google:{GEMINI}"),
    "langchain-gemini": langchain_chat(vertexai=False),
    "pydantic-ai-vertex": pydantic_ai_model(f"google-cloud:{GEMINI}"),
    "langchain-vertex": langchain_chat(vertexai=True),
    "litellm-gemini": litellm_model(f"gemini/{GEMINI}"),
    "litellm-azure": litellm_model("azure/gpt-4o-prod"),
}


def main() -> int:
    question = sys.argv[2] if len(sys.argv) > 2 else "Say hello"
    answer, streamed = SCENARIOS[sys.argv[1]](question)
    print("answer:", answer)
    print("streamed:", streamed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
