"""A small agent on the openai SDK's AzureOpenAI client, for the provider tests.

    python azure_agent.py [DEPLOYMENT] [QUESTION]

The client is built with no arguments: it reads AZURE_OPENAI_ENDPOINT, AZURE_OPENAI_API_KEY and
OPENAI_API_VERSION, as a user's agent would, and calls `/openai/deployments/DEPLOYMENT/...`: a chat
completion, a streamed one, and an embedding. An API error exits 4 with its status and message.
"""

from __future__ import annotations

import sys

import openai


def main() -> int:
    deployment = sys.argv[1] if len(sys.argv) > 1 else "gpt-4o-prod"
    question = sys.argv[2] if len(sys.argv) > 2 else "Say hello"
    client = openai.AzureOpenAI(max_retries=0)
    messages = [{"role": "system", "content": "You are terse."}, {"role": "user", "content": question}]
    try:
        reply = client.chat.completions.create(model=deployment, messages=messages)
        print("answer:", reply.choices[0].message.content)
        stream = client.chat.completions.create(model=deployment, messages=messages, stream=True)
        print("streamed:", "|".join(c.choices[0].delta.content or "" for c in stream if c.choices))
        embedded = client.embeddings.create(model="embed-prod", input="hello")
        print("embedding:", embedded.data[0].embedding)
    except openai.APIStatusError as exc:
        print(f"azure error {exc.status_code}: {exc.message}", file=sys.stderr)
        return 4
    return 0


if __name__ == "__main__":
    sys.exit(main())
