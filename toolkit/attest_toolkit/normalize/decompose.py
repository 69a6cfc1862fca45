"""A request as five components (system, messages, tools, params, model), normalized and hashed.

Matching compares these hashes: a recording and a live request match when all five are equal, and a
miss names the first that differs. Normalization is the same for the stored request and the live one:
secrets redacted, Claude Code's run-specific lines neutralized (system and messages only), volatile
values renumbered by first occurrence. Each component is numbered on its own, so a change in one
component never changes another's hash.
"""

from __future__ import annotations

import functools
import hashlib
import threading
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, unquote

from ..credentials.scan import Secrets
from ..providers import Endpoint, endpoint_for, model_of
from . import unchanged
from .body import Body, redact_encoded, redact_query
from .claude_code import neutralize
from .jsontext import canonical
from .volatile import Numbering
from .walk import Walker, texts_of

COMPONENTS: tuple[str, ...] = ("system", "messages", "tools", "params", "model")


@dataclass(frozen=True)
class RequestKey:
    key: str  # sha256 hex over method, path and the five component hashes
    hashes: dict[str, str]  # component -> 64-hex sha256
    model: str | None  # the model name as sent (for "model changed" and pricing)
    parts: tuple[dict[str, Any], ...] | None = None  # an upload's normalized parts, for its miss message
    # The request as `request_key` got it: its normalized components are built only when a miss
    # names the paths that changed (a hit needs only the hashes).
    sent: tuple[str, str, str, str, Body, Secrets] | None = field(default=None, compare=False, repr=False)

    @functools.cached_property
    def components(self) -> dict[str, Any] | None:
        """The normalized components, for a miss to name the paths that changed."""
        return describe_components(*self.sent) if self.sent is not None else None


def endpoint_kind(path: str) -> str:
    """ "chat", "responses", "messages" (Anthropic), ... or "other": how a request body decomposes."""
    endpoint = endpoint_for(path)
    return endpoint.kind if endpoint is not None else "other"


# --- decomposition (raw values, before normalization) ---------------------------------------------


def _rest(endpoint: Endpoint | None, body: dict[str, Any]) -> dict[str, Any]:
    own = endpoint.own_keys if endpoint is not None else ("model",)
    rest = {k: v for k, v in body.items() if k not in own}
    return endpoint.trim(rest) if endpoint is not None and endpoint.trim is not None else rest


def _body_value(body: Body) -> Any:
    if "json" in body:
        return body["json"]
    if "sse" in body:
        return "".join(body["sse"])
    if "text" in body:
        return body["text"]
    if "base64" in body:
        return {"base64": body["base64"]}
    if "multipart" in body:
        return {"multipart": body["multipart"]}  # an upload: its parts are its params
    return None


def decompose(path: str, query: list[list[str]], body: Body) -> dict[str, Any]:
    """The raw components of a request; `query` is the redacted query as sorted [name, value] pairs."""
    value = _body_value(body)
    if isinstance(value, dict):
        endpoint = endpoint_for(path)
        parts = endpoint.split(value) if endpoint else dict.fromkeys(("system", "messages", "tools"))
        parts["model"] = model_of(path, value)
        params: Any = _rest(endpoint, value)
    else:
        parts = dict.fromkeys(("system", "messages", "tools", "model"))
        params = value
    parts["params"] = {"body": params, "query": query} if query else params
    return parts


# --- normalization and hashing ---------------------------------------------------------------------


# Transport markers, not part of what was asked: Anthropic's SDK sent `?beta=true` on beta endpoints and
# newer releases do not, so a recording from either still matches the other.
_TRANSPORT_PARAMS = frozenset({"beta"})


def query_pairs(query: str, secrets: Secrets) -> list[list[str]]:
    if not query:
        return []
    redacted = redact_query(query, secrets)
    pairs = parse_qsl(redacted, keep_blank_values=True)
    return sorted([name, value] for name, value in pairs if name not in _TRANSPORT_PARAMS)


_NEUTRALIZED = ("system", "messages")  # where Claude Code writes its run-specific lines


def _normalize(component: str, value: Any, secrets: Secrets, redacting: bool) -> Any:
    if value is None or isinstance(value, (bool, int, float)):  # nothing to redact or renumber
        return value
    numbering = Numbering(renumber=True)
    if component in _NEUTRALIZED:

        def on_text(text: str) -> str:
            return numbering.apply(neutralize(text))

    else:
        on_text = numbering.apply
    # Tool results travel in the messages, or in params for endpoints not decomposed (count_tokens).
    return Walker(secrets, on_text, redacting).walk(value, tool_results=component in ("messages", "params"))


def describe_components(
    provider: str, method: str, path: str, query: str, body: Body, secrets: Secrets
) -> dict[str, Any]:
    """The normalized value of each component, exactly what `request_key` hashes (for diffs and tests)."""
    del provider, method  # the decomposition follows the path: one proxy serves every provider's paths
    parts = _parts(path, query, body, secrets)
    # One scan of the whole request spares one per string: most requests hold no secret at all.
    redacting = not secrets.none_in(texts_of([parts[name] for name in COMPONENTS]))
    return {name: _normalize(name, parts[name], secrets, redacting) for name in COMPONENTS}


def _parts(path: str, query: str, body: Body, secrets: Secrets) -> dict[str, Any]:
    return decompose(path, query_pairs(query, secrets), redact_encoded(body, secrets))


def canonical_hash(value: Any) -> str:
    return hashlib.sha256(canonical(value)).hexdigest()


@functools.lru_cache(maxsize=1024)  # a handful of endpoints, keyed again on every call
def normal_path(path: str) -> str:
    """The path as matched: percent-decoded, with ids in it renumbered (`/v1/responses/resp_{{id_1}}`)."""
    return Numbering(renumber=True).apply(unquote(path))


def key_of(method: str, path: str, hashes: dict[str, str]) -> str:
    """The lookup key of a recording, from its stored method, path and component hashes."""
    text = "\n".join((method.upper(), normal_path(path), *(hashes[name] for name in COMPONENTS)))
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _model_as_sent(path: str, body: Body) -> str | None:
    return model_of(path, body.get("json"))


def upload_parts(params: Any) -> tuple[dict[str, Any], ...] | None:
    """The parts of an upload from its normalized params component, or None for any other request."""
    if isinstance(params, dict) and "body" in params and "query" in params:
        params = params["body"]
    if not isinstance(params, dict) or not isinstance(params.get("multipart"), list):
        return None
    return tuple(part for part in params["multipart"] if isinstance(part, dict))


def _hashes(path: str, query: str, body: Body, secrets: Secrets) -> dict[str, str]:
    """The hash of each component's normalized value. Most components hold nothing normalizing would
    change (no secret, no volatile value, none of Claude Code's lines): their canonical text, which is
    hashed anyway, says so (see `unchanged`), and such a value is hashed as it is, without the walk
    that rebuilds it. A component's hash depends only on its canonical text and the secrets, so the
    system prompt and tool schemas an agent sends with every call are normalized once (`_SEEN`)."""
    raw = _parts(path, query, body, secrets)
    encoded = {name: canonical(raw[name]) for name in COMPONENTS}
    hashes = _SEEN.known(secrets, encoded)
    new = {name: text for name, text in encoded.items() if name not in hashes}
    texts = {name: text.decode("utf-8", "surrogatepass") for name, text in new.items()}
    for name, redacting in unchanged.changing(texts, secrets, _NEUTRALIZED).items():
        new[name] = canonical(_normalize(name, raw[name], secrets, redacting))
    found = {name: hashlib.sha256(text).hexdigest() for name, text in new.items()}
    _SEEN.learn(secrets, {(name, encoded[name]): digest for name, digest in found.items()})
    hashes.update(found)
    return {name: hashes[name] for name in COMPONENTS}


class _Seen:
    """Component hashes by (secrets, component, canonical text), within bounds: a few sets of
    secrets, the newest `CALLS` texts of each, none over `BYTES` long (those are normalized each
    time). Threads key calls at once (the pytest helper's lane), hence the lock."""

    SECRETS, CALLS, BYTES = 4, 1024, 64 * 1024

    def __init__(self) -> None:
        self._by: dict[Secrets, dict[tuple[str, bytes], str]] = {}
        self._lock = threading.Lock()

    def known(self, secrets: Secrets, encoded: dict[str, bytes]) -> dict[str, str]:
        seen = self._by.get(secrets, {})
        found = {name: seen.get((name, text)) for name, text in encoded.items()}  # one lookup each: atomic
        return {name: digest for name, digest in found.items() if digest is not None}

    def learn(self, secrets: Secrets, found: dict[tuple[str, bytes], str]) -> None:
        with self._lock:
            seen = self._by.get(secrets)
            if seen is None:
                if len(self._by) >= self.SECRETS:
                    self._by.clear()
                seen = self._by[secrets] = {}
            for key, digest in found.items():
                if len(key[1]) <= self.BYTES:
                    if len(seen) >= self.CALLS:
                        del seen[next(iter(seen))]
                    seen[key] = digest


_SEEN = _Seen()


def request_key(
    provider: str, method: str, path: str, query: str, body: Body, secrets: Secrets
) -> RequestKey:
    """The key and component hashes of a request: a stored (templated) one or a live one alike."""
    if "multipart" in body:  # an upload's miss names its parts: its components are needed now
        components = describe_components(provider, method, path, query, body, secrets)
        hashes = {name: canonical_hash(components[name]) for name in COMPONENTS}
        parts = upload_parts(components["params"])
        sent = (provider, method, path, query, body, secrets)
        return RequestKey(key_of(method, path, hashes), hashes, _model_as_sent(path, body), parts, sent)
    hashes = _hashes(path, query, body, secrets)
    sent = (provider, method, path, query, body, secrets)
    return RequestKey(key_of(method, path, hashes), hashes, _model_as_sent(path, body), sent=sent)
