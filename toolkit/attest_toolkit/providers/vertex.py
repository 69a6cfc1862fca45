"""Vertex AI, as the google-genai SDK calls it with `vertexai=True` (or GOOGLE_GENAI_USE_VERTEXAI).

The paths name the project and location: `/v1beta1/projects/{p}/locations/{l}/publishers/google/
models/{m}:generateContent` (and `:streamGenerateContent?alt=sse`, `:countTokens`, `:embedContent`);
the bodies, streams, usage and errors are the Gemini API's. google-genai reads its base URL from
GOOGLE_VERTEX_BASE_URL when the code says `vertexai=True`, but from GOOGLE_GEMINI_BASE_URL when only
GOOGLE_GENAI_USE_VERTEXAI chose Vertex, so a Vertex path that reaches the Gemini route is this
provider's too. The SDK takes a base URL ending in `.googleapis.com` for Google's own and keeps the
project/location path; any other it takes for an API gateway that wants no path at all. So both base
URLs the proxy hands out end with such a segment, dropped again from the path.

The caller authenticates with a Google OAuth token (`authorization: Bearer ya29…`,
`x-goog-user-project`): capture forwards it as sent; a request header is never stored, and the key is
the path, query and body only. The project and location are part of the path, so of the key. There is
no key variable, so a miss is never forwarded live in replay.
"""

from __future__ import annotations

import re

from . import gemini
from .base import Provider

# google-genai: `aiplatform.{location}.rep.googleapis.com` for its multi-region locations.
_MULTI_REGION = frozenset({"us", "eu"})
_LOCATION = re.compile(r"/projects/[^/]+/locations/([^/]+)/")
# Google's location names; the host is built from it, so anything else could name another host.
_LOCATION_NAME = re.compile(r"[a-z0-9-]+")
GLOBAL = "https://aiplatform.googleapis.com"


def upstream_of(path: str) -> str:
    """The regional endpoint a request path's location is served at, as google-genai picks it.
    Raises ValueError for a location that is not a location name (`[a-z0-9-]+`)."""
    found = _LOCATION.search(path)
    location = found.group(1) if found else "global"
    if not _LOCATION_NAME.fullmatch(location):
        raise ValueError(f"not a Vertex AI location: {location!r}")
    if location == "global":
        return GLOBAL
    if location in _MULTI_REGION:
        return f"https://aiplatform.{location}.rep.googleapis.com"
    return f"https://{location}-aiplatform.googleapis.com"


PROVIDER = Provider(
    name="vertex",
    on_httpx=False,
    base_url_vars=("GOOGLE_VERTEX_BASE_URL",),  # google-genai (HttpOptions.base_url wins over it)
    proxy_path="",  # the SDK adds /v1beta1/projects/... (or GOOGLE_GENAI_API_VERSION)
    path_marker="aiplatform.googleapis.com",
    also_under=("gemini",),
    upstream_var="ATTEST_VERTEX_UPSTREAM",
    default_upstream=GLOBAL,
    upstream_of=upstream_of,
    path=re.compile(r"(?:^|/)v1(?:beta1)?/projects/[^/]+/locations/[^/]+/publishers/[^/]+/models/"),
    host_marks=("aiplatform", "vertex"),
    usage=gemini.PROVIDER.usage,
    stream_end=gemini.PROVIDER.stream_end,
    error=gemini.error,
    status_error=gemini.status_error,
    reply_parts=gemini.reply_parts,
    clients={"pytest": "genai.Client(vertexai=True)", "vitest": "new GoogleGenAI({ vertexai: true })"},
    google_token=True,
)
