"""Azure OpenAI, as the openai SDK's AzureOpenAI client calls it.

AzureOpenAI reads AZURE_OPENAI_ENDPOINT (the resource, `https://NAME.openai.azure.com`), appends
`/openai/deployments/{deployment}/chat/completions` (and embeddings, images, audio) with the
`api-version` query, and sends AZURE_OPENAI_API_KEY in the `api-key` header. The bodies, ids, usage
and streams are OpenAI's. The deployment (in the path) and the api-version (a query parameter, so one
of the params) are both part of a recording's key: the deployment names which model answers, and an
API version can change the shape of the answer. There is no default resource: capture forwards to
ATTEST_AZURE_UPSTREAM, else the AZURE_OPENAI_ENDPOINT the user set.
"""

from __future__ import annotations

import re

from . import openai
from .base import Provider

PROVIDER = Provider(
    name="azure",
    base_url_vars=(
        "AZURE_OPENAI_ENDPOINT",  # the openai SDK's AzureOpenAI, LangChain's AzureChatOpenAI
        "AZURE_API_BASE",  # LiteLLM's `azure/` models (it reads AZURE_OPENAI_API_KEY first, as the SDK does)
    ),
    proxy_path="",  # the SDK adds /openai/deployments/...
    key_var="AZURE_OPENAI_API_KEY",
    key_header="api-key",
    upstream_var="ATTEST_AZURE_UPSTREAM",
    # No resource is everyone's: without one set, a forwarded call fails with "cannot resolve" this name.
    default_upstream="https://set-azure-openai-endpoint.invalid",
    path=re.compile(r"(?:^|/)openai/deployments/"),
    host_marks=("azure",),
    ids=openai.PROVIDER.ids,
    usage=openai.PROVIDER.usage,
    error=openai.error,
    status_error=openai.status_error,
    volatile_headers=openai.VOLATILE_HEADERS,
    clients={"pytest": "AzureOpenAI()", "vitest": "new AzureOpenAI()"},
)
