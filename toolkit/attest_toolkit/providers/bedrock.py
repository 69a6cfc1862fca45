"""AWS Bedrock Runtime, as boto3's `bedrock-runtime` client calls it.

boto3 reads its endpoint from AWS_ENDPOINT_URL_BEDROCK_RUNTIME and appends `/model/{modelId}/converse`
(and `converse-stream`, `invoke`, `invoke-with-response-stream`), the model id percent-encoded. The
model is in the path; Converse bodies hold `system`, `messages` and `toolConfig`, and InvokeModel bodies
are the model vendor's own (Anthropic's `system`, `messages`, `tools` on Bedrock). Streams are AWS
event streams (`normalize.eventstream`). Every request is signed with SigV4 over its Host, so a
forwarded request is signed again for the real endpoint with the caller's own AWS credentials, as
botocore signs; the signature headers are never stored and never part of a key (a fixture keeps no
request header). An error's kind travels in the `x-amzn-ErrorType` header, which botocore reads.
"""

from __future__ import annotations

import hmac
import re
from collections.abc import Mapping
from typing import Any

from .base import Endpoint, Provider, SigningFailed, Streamed, ToolCall, UsageFields

SERVICE = "bedrock"
DEFAULT_REGION = "us-east-1"
# The caller's signature names the region it signed for: `Credential=AKID/20250101/us-west-2/bedrock/...`.
_SCOPE = re.compile(r"Credential=([^/,\s]+)/[0-9]{8}/([a-z0-9-]+)/")
_SIGNED = re.compile(r"SignedHeaders=([^,\s]+)")
_GIVEN = re.compile(r"Signature=([0-9a-f]{64})")
# Headers of the caller's signature: replaced by the new one (and never recorded: no request header is).
_SIGNATURE = frozenset({"authorization", "x-amz-date", "x-amz-security-token", "x-amz-content-sha256"})
_BASE_URL_VARS = (
    "AWS_ENDPOINT_URL_BEDROCK_RUNTIME",  # botocore's per-service endpoint: boto3, pydantic-ai, langchain-aws
    "AWS_BEDROCK_RUNTIME_ENDPOINT",  # LiteLLM's `bedrock/` models
)
_ACTIONS = ("converse", "converse-stream", "invoke", "invoke-with-response-stream")
_MODEL = re.compile(r"/model/(.+)/(?:" + "|".join(_ACTIONS) + ")$")


def _converse(body: dict[str, Any]) -> dict[str, Any]:
    return {"system": body.get("system"), "messages": body.get("messages"), "tools": body.get("toolConfig")}


_PROMPT_KEYS = ("messages", "prompt", "inputText")  # Anthropic, Nova, Mistral; Llama; Titan


def _invoke(body: dict[str, Any]) -> dict[str, Any]:
    """A vendor's own body: its conversation is under the first of `_PROMPT_KEYS` it has."""
    messages = next((body[k] for k in _PROMPT_KEYS if k in body), None)
    return {"system": body.get("system"), "messages": messages, "tools": body.get("tools")}


# A model id: an inference profile's region and the vendor before the name, a version after it
# (us.anthropic.claude-sonnet-4-20250514-v1:0 prices as claude-sonnet-4, amazon.nova-pro-v1:0 as nova-pro).
_MODEL_ID = re.compile(r"^(?:[a-z]+\.)+(.+?)(?:-v\d+(?::\d+)?)?$")


def priced_as(model: str) -> str | None:
    found = _MODEL_ID.fullmatch(model)
    return found.group(1) if found else None


# The exception names botocore raises for the statuses the proxy answers with itself.
_ERROR_TYPES = {
    400: "ValidationException",
    402: "ServiceQuotaExceededException",
    403: "AccessDeniedException",
}


def error(_status: int, message: str) -> dict[str, Any]:
    return {"message": message}


def error_headers(status: int) -> dict[str, str]:
    kind = _ERROR_TYPES.get(status, "ServiceUnavailableException")
    return {"x-amzn-ErrorType": f"{kind}:http://internal.amazon.com/coral/com.amazon.bedrock/"}


# The exceptions Bedrock answers the statuses a fault injects with (botocore's standard retry mode
# retries each of them).
_STATUS_TYPES = {429: "ThrottlingException", 500: "InternalServerException"}


def status_error(status: int, message: str) -> tuple[dict[str, Any], dict[str, str]]:
    kind = _STATUS_TYPES.get(status, "ServiceUnavailableException")
    return {"message": message}, {
        "x-amzn-ErrorType": f"{kind}:http://internal.amazon.com/coral/com.amazon.bedrock/"
    }


def reply_parts(obj: dict[str, Any]) -> tuple[list[str], list[str]] | None:
    """The text and tool calls of a Converse answer or a ConverseStream event."""
    output = obj.get("output")
    if isinstance(output, dict) and isinstance(output.get("message"), dict):
        blocks = output["message"].get("content") or []
    elif isinstance(obj.get("delta"), dict) or isinstance(obj.get("start"), dict):
        blocks = [obj.get("delta") or {}, obj.get("start") or {}]
    else:
        return None
    blocks = [b for b in blocks if isinstance(b, dict)]
    texts = [b["text"] for b in blocks if isinstance(b.get("text"), str)]
    uses = [b["toolUse"] for b in blocks if isinstance(b.get("toolUse"), dict) and "name" in b["toolUse"]]
    return texts, [str(use["name"]) for use in uses]


def tool_calls(obj: dict[str, Any], streamed: Streamed) -> list[ToolCall]:
    """The `toolUse` blocks of a Converse answer; in ConverseStream, a block's name comes at its start
    and its input in JSON pieces."""
    key = ("toolUse", obj.get("contentBlockIndex"))
    start = obj.get("start")
    use = start.get("toolUse") if isinstance(start, dict) else None
    if isinstance(use, dict) and use.get("name"):
        streamed[(key, str(use["name"]))] = []
    delta = obj.get("delta")
    piece = delta.get("toolUse") if isinstance(delta, dict) else None
    if isinstance(piece, dict) and isinstance(piece.get("input"), str):
        for (k, _), parts in streamed.items():
            if k == key:
                parts.append(piece["input"])
    output = obj.get("output")
    message = output.get("message") if isinstance(output, dict) else None
    blocks = message.get("content") if isinstance(message, dict) else None
    uses = [b["toolUse"] for b in blocks or [] if isinstance(b, dict) and isinstance(b.get("toolUse"), dict)]
    return [(str(u["name"]), u.get("input")) for u in uses if u.get("name")]


class SigV4Signer:
    """Signs forwarded requests with botocore's SigV4, with the credentials botocore would find in the
    environment (keys, a profile, SSO), resolved at the first call; the region is the one the caller
    signed for, else AWS_REGION, else AWS_DEFAULT_REGION."""

    def __init__(self, env: Mapping[str, str]) -> None:
        self.env = dict(env)
        self._credentials: Any = None

    def credentials(self) -> Any:
        if self._credentials is None:
            self._credentials = _credentials(self.env)
        return self._credentials

    def region(self, headers: Mapping[str, str]) -> str:
        found = _SCOPE.search(headers.get("authorization", ""))
        if found:
            return found.group(2)
        return self.env.get("AWS_REGION") or self.env.get("AWS_DEFAULT_REGION") or DEFAULT_REGION

    def prepare(
        self, method: str, url: str, headers: Mapping[str, str], body: bytes
    ) -> tuple[str, dict[str, str]]:
        from botocore.auth import SigV4Auth
        from botocore.awsrequest import AWSRequest

        region = self.region({k.lower(): v for k, v in headers.items()})
        url = url.replace("{region}", region)
        kept = {k: v for k, v in headers.items() if k.lower() not in _SIGNATURE}
        request = AWSRequest(method=method, url=url, data=body, headers=kept)
        SigV4Auth(self.credentials().get_frozen_credentials(), SERVICE, region).add_auth(request)
        return url, dict(request.headers.items())

    def signed_with(self, key: str, method: str, url: str, headers: Mapping[str, str], body: bytes) -> bool:
        from botocore.auth import SigV4Auth
        from botocore.awsrequest import AWSRequest

        lowered = {k.lower(): v for k, v in headers.items()}
        auth = lowered.get("authorization", "")
        scope, names, given = _SCOPE.search(auth), _SIGNED.search(auth), _GIVEN.search(auth)
        if (
            scope is None
            or names is None
            or given is None
            or scope.group(1) != key
            or "x-amz-date" not in lowered
        ):
            return False
        try:
            credentials = self.credentials().get_frozen_credentials()
        except SigningFailed:
            return False
        signed = {k: v for k, v in lowered.items() if k in names.group(1).split(";")}
        request = AWSRequest(method=method, url=url, data=body, headers=signed)
        request.context["timestamp"] = lowered["x-amz-date"]
        signer = SigV4Auth(credentials, SERVICE, scope.group(2))
        expected = signer.signature(
            signer.string_to_sign(request, signer.canonical_request(request)), request
        )
        return hmac.compare_digest(expected, given.group(1))


INSTALL = "pip install 'attest-toolkit[bedrock]'"  # the extra that brings botocore
# What sends a capture's Bedrock calls to AWS: attest's upstream for it, the user's own endpoint, or
# the credentials boto3 signs with (which the proxy signs with again).
_CAPTURED_BY = ("ATTEST_BEDROCK_UPSTREAM", *_BASE_URL_VARS, "AWS_ACCESS_KEY_ID", "AWS_PROFILE")


def capture_needs(env: Mapping[str, str]) -> str | None:
    """Capturing Bedrock signs each call again with botocore: said once, before the command starts,
    when the environment selects Bedrock and botocore cannot be imported."""
    selected = next((var for var in _CAPTURED_BY if env.get(var, "").strip()), None)
    if selected is None:
        return None
    try:
        import botocore.auth  # noqa: F401  # what signing imports
    except ImportError:
        return (
            f"capturing Bedrock ({selected} is set) re-signs each call with botocore, which is not "
            f"installed here: {INSTALL}"
        )
    return None


def _credentials(env: Mapping[str, str]) -> Any:
    try:
        from botocore.credentials import Credentials
        from botocore.session import Session
    except ImportError:
        raise SigningFailed(f"forwarding a Bedrock call needs botocore to sign it ({INSTALL})") from None
    key, secret = env.get("AWS_ACCESS_KEY_ID"), env.get("AWS_SECRET_ACCESS_KEY")
    if key and secret:
        return Credentials(key, secret, env.get("AWS_SESSION_TOKEN") or None)
    found = Session(profile=env.get("AWS_PROFILE") or None).get_credentials()
    if found is None:
        raise SigningFailed(
            "no AWS credentials to sign the Bedrock call with (set AWS_ACCESS_KEY_ID and "
            "AWS_SECRET_ACCESS_KEY, or AWS_PROFILE)"
        )
    return found


PROVIDER = Provider(
    name="bedrock",
    on_httpx=False,
    base_url_vars=_BASE_URL_VARS,
    proxy_path="",  # boto3 adds /model/{modelId}/...
    key_var="AWS_ACCESS_KEY_ID",
    placeholder_vars=("AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"),
    upstream_var="ATTEST_BEDROCK_UPSTREAM",
    default_upstream="https://bedrock-runtime.{region}.amazonaws.com",  # the region the caller signed for
    path=re.compile(r"(?:^|/)model/.+/(?:" + "|".join(_ACTIONS) + ")$"),
    host_marks=("bedrock",),
    endpoints=(
        *(
            Endpoint(
                "converse", f"/{a}", ("system", "messages", "toolConfig"), _converse, model_in_path=_MODEL
            )
            for a in _ACTIONS[:2]
        ),
        *(
            Endpoint("invoke", f"/{a}", ("system", *_PROMPT_KEYS, "tools"), _invoke, model_in_path=_MODEL)
            for a in _ACTIONS[2:]
        ),
    ),
    usage=UsageFields(
        "usage",
        input=("inputTokens",),
        output=("outputTokens",),
        cached=("cacheReadInputTokens", "cacheWriteInputTokens"),
    ),
    stream_end=(rb":event-type\x07\x00\x08metadata",),  # ConverseStream's last event
    # Converse; InvokeModel with an Anthropic body (max_tokens) or a Nova one
    output_limits=("inferenceConfig.maxTokens", "inferenceConfig.max_new_tokens", "max_tokens"),
    error=error,
    error_headers=error_headers,
    status_error=status_error,
    errors_in_stream=("/converse-stream", "/invoke-with-response-stream"),
    # InvokeModel's token counts (`x-amzn-bedrock-input-token-count`, ...) are the call's own: kept.
    volatile_headers=("x-amzn-bedrock-invocation-latency",),
    reply_parts=reply_parts,
    tool_calls=tool_calls,
    credential_headers=("x-amz-security-token",),
    signer=SigV4Signer,
    capture_needs=capture_needs,
    clients={"pytest": 'boto3.client("bedrock-runtime")', "vitest": "new BedrockRuntimeClient()"},
    priced_as=priced_as,
)
