"""What a provider is: the record every provider module fills in, and the parts it is built from."""

from __future__ import annotations

import re
import string
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

OPENAI_CLIENTS = {"pytest": "OpenAI()", "vitest": "new OpenAI()"}
BASE62 = string.digits + string.ascii_uppercase + string.ascii_lowercase
HEX = "0123456789abcdef"


@dataclass(frozen=True)
class Shape:
    """The tail after an id's prefix, as the provider issues it (measured on recorded traffic)."""

    alphabet: str
    length: int
    lead: str = ""  # fixed characters the provider puts first (Anthropic's "01")


@dataclass(frozen=True)
class Endpoint:
    """How the body of a request to one endpoint splits into system, messages and tools.

    `own_keys` are the body keys those components (and the model) take; every other key is a
    parameter, after `trim` (which drops run-specific values that must not be part of the key)."""

    kind: str
    suffix: str  # the path ends with it (a trailing slash ignored)
    own_keys: tuple[str, ...]
    split: Callable[[dict[str, Any]], dict[str, Any]]
    trim: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    model_in_path: re.Pattern[str] | None = None  # group 1 is the model, when the body does not name it


@dataclass(frozen=True)
class UsageFields:
    """Where a response reports the tokens a call used: `container` holds the counts, each read from
    the first of its keys that is present; cached input counts as input."""

    container: str
    input: tuple[str, ...]
    output: tuple[str, ...]
    cached: tuple[str, ...] = ()
    also_output: tuple[str, ...] = ()  # counted as output besides the first of `output` (thinking)


ErrorBody = Callable[[int, str], dict[str, Any]]
ErrorHeaders = Callable[[int], dict[str, str]]
# The body and headers of an error the provider itself answers with (a rate limit, an overload, a 5xx),
# as its SDK reads and retries it: what a replay's `--fault status=CODE` answers (replay.faults).
StatusError = Callable[[int, str], "tuple[dict[str, Any], dict[str, str]]"]


class SigningFailed(Exception):
    """A forwarded request could not be signed for its upstream (no credentials): it is not sent."""


class Signer(Protocol):
    """Signs each forwarded request for the host it goes to. A provider whose requests carry a
    signature over their Host (AWS SigV4) needs it: the caller signed for the proxy's loopback host."""

    def prepare(
        self, method: str, url: str, headers: Mapping[str, str], body: bytes
    ) -> tuple[str, dict[str, str]]:
        """The URL (its `{region}` filled) and the headers to send: the caller's, signature replaced."""
        ...

    def signed_with(self, key: str, method: str, url: str, headers: Mapping[str, str], body: bytes) -> bool:
        """True when the request, as it reached `url`, carries a valid signature made with the
        credentials of `key` (this process's own): the caller holds the secret, not only the key id."""
        ...


SignerFactory = Callable[[Mapping[str, str]], Signer]  # built once per forwarder, from its environment
# The text pieces and tool names of one reply object (an answer or a stream event), for
# `attest fixture show`; None when the object is not of the provider's shape.
ReplyParts = Callable[[dict[str, Any]], "tuple[list[str], list[str]] | None"]
# A tool call a reply asks for: the tool's name and its arguments (an object, or JSON text).
ToolCall = tuple[str, Any]
# The calls a reply streams in pieces, across its events: (the call's place in the stream, the tool's
# name) -> the pieces of its arguments' JSON text so far.
Streamed = dict[tuple[Any, str], list[str]]
# The tool calls one reply object asks for whole; those it streams in pieces go into `Streamed`.
ToolCalls = Callable[[dict[str, Any], Streamed], list[ToolCall]]
# The model a reply object says answered, or None.
ReplyModel = Callable[[dict[str, Any]], "str | None"]


@dataclass(frozen=True)
class KeyPattern:
    """The shape of a secret (a provider's API key): the credential scan refuses and redacts it by
    `pattern`, in text that holds one of `hints` (substring scans first: cheaper than a regex)."""

    label: str  # names the kind of secret in errors; the value itself is never shown
    pattern: str
    hints: tuple[str, ...]


@dataclass(frozen=True)
class Provider:
    """One provider: how an SDK is pointed at the proxy, how a call is forwarded and read.

    The proxy serves the provider under `/<name>`; an SDK's base URL is that plus `proxy_path`."""

    name: str
    base_url_vars: tuple[str, ...]  # in the order the user's own value is looked for
    proxy_path: str = ""
    # Variables whose SDK wants another path than `proxy_path` after the provider (LiteLLM's, that
    # include the version where the vendor's own SDK adds it).
    var_paths: Mapping[str, str] = field(default_factory=dict)
    # A last segment of the base URL handed to the SDK that is no part of the provider's paths: the
    # proxy drops it from each request's path (see `route`).
    path_marker: str = ""
    # Other providers whose base URL this provider's SDK may send its calls to (told apart by `path`).
    also_under: tuple[str, ...] = ()
    key_var: str | None = None  # the variable its SDKs read the key from
    key_header: str | None = None  # the header that carries the key, besides `Authorization: Bearer`
    upstream_var: str | None = None  # ATTEST_<NAME>_UPSTREAM: where capture and live calls go
    default_upstream: str | None = None
    # The default upstream of one request path, when the path chooses it (Vertex AI's region).
    upstream_of: Callable[[str], str] | None = None
    records: bool = True  # its calls are model calls, recorded and replayed (OTLP's are only counted)
    # Its official Python SDK sends over httpx, whose calls to the provider's own host the lane answers:
    # a vcr test may keep its base URL. Others (boto3, google-genai's aiohttp) are pointed at attest.
    on_httpx: bool = True
    path: re.Pattern[str] | None = None  # a request path that can only be this provider's
    host_marks: tuple[str, ...] = ()  # a host or provider name containing one of these is this provider
    endpoints: tuple[Endpoint, ...] = ()
    ids: Mapping[str, Shape | None] = field(default_factory=dict)  # id prefix -> tail (None: unmeasured)
    usage: UsageFields | None = None
    stream_end: tuple[bytes, ...] = ()  # regexes (multiline) of the events that end a stream
    # The request fields that cap an answer's output tokens, dotted into nested objects: a call under
    # --max-cost-usd is priced up to them while it is in flight (`providers.output_limit`).
    output_limits: tuple[str, ...] = ()
    error: ErrorBody | None = None  # the body of an error the proxy answers with itself
    error_headers: ErrorHeaders | None = None  # and the headers its SDK reads the error's kind from
    status_error: StatusError | None = None  # its own 429/5xx (None: OpenAI's shape)
    # Path endings of its AWS event-stream answers, in which such an error arrives as the stream's
    # exception event (`:exception-type` the status error's `x-amzn-ErrorType`), after an HTTP 200.
    errors_in_stream: tuple[str, ...] = ()
    # Its exceptions to a fixture keeping each response header as sent: its own headers whose value
    # changes from call to call (timings, quota left), kept but not compared when a re-record is (see
    # normalize.headers; `*` is any run of characters).
    volatile_headers: tuple[str, ...] = ()
    # Besides key_var, the variables an SDK needs before it sends anything (AWS's secret key): replay sets
    # them to the same placeholder as the key when the engine has no key.
    placeholder_vars: tuple[str, ...] = ()
    signer: SignerFactory | None = None  # re-signs forwarded requests (capture, live calls)
    # Why a capture in this environment could not record its calls (a library missing), said before the
    # command starts; None when it can, or when nothing in the environment selects this provider.
    capture_needs: Callable[[Mapping[str, str]], str | None] | None = None
    # How `attest fixture show` and the agent's path read its replies: their text and tool names, the
    # tool calls they ask for, the model that answered.
    reply_parts: ReplyParts | None = None
    tool_calls: ToolCalls | None = None
    reply_model: ReplyModel | None = None
    # The shapes of its API keys, and the headers besides `key_header` that carry its credentials: the
    # credential scan and the importers refuse them.
    key_patterns: tuple[KeyPattern, ...] = ()
    credential_headers: tuple[str, ...] = ()
    # How its users build a client, per test runner (pytest, vitest): a call that went around a replay
    # fails naming it, since a client built before the replay keeps the provider's URL.
    clients: Mapping[str, str] = field(default_factory=lambda: dict(OPENAI_CLIENTS))
    # Its SDK fetches a Google OAuth token before any call, even in replay: a session replaying its calls
    # gets a credentials file whose token the engine itself answers (replay/google_token.py).
    google_token: bool = False
    # The name its model ids price as in data/prices.json, when the id wraps a table name (Bedrock's
    # `us.anthropic.claude-sonnet-4-20250514-v1:0`); None when not this provider's shape.
    priced_as: Callable[[str], str | None] | None = None

    def path_for(self, var: str) -> str:
        """What follows `/<name>` in the base URL handed out in `var`."""
        marker = f"/{self.path_marker}" if self.path_marker else ""
        return self.var_paths.get(var, self.proxy_path) + marker
