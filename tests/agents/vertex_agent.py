"""The Gemini agent's calls on Vertex AI, through the official google-genai SDK.

    python vertex_agent.py flow [QUESTION]   genai.Client(vertexai=True, project=..., location=...), as
                                             Google's samples build it: function calling, a streamed
                                             answer, countTokens, an embedding (gemini_agent's flow)
    python vertex_agent.py ask [QUESTION]    one generateContent call from genai.Client(), Vertex AI
                                             chosen by GOOGLE_GENAI_USE_VERTEXAI, GOOGLE_CLOUD_PROJECT
                                             and GOOGLE_CLOUD_LOCATION

No base URL and no credentials are given in code: the SDK finds the engine through the variables it
reads, and its Google token through application default credentials. A Google API error exits with its
code and message.
"""

from __future__ import annotations

import sys

import gemini_agent
from google import genai

PROJECT, LOCATION = "attest-demo", "us-central1"


def client_for(what: str) -> genai.Client:
    if what == "flow":
        return genai.Client(vertexai=True, project=PROJECT, location=LOCATION)
    return genai.Client()


if __name__ == "__main__":
    sys.exit(gemini_agent.main(client_for))
