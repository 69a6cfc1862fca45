"""The environment variables through which SDKs and agent frameworks find their provider.

Capture and replay point every one of them at the proxy: a framework that reads a variable the proxy
left alone would talk to the provider directly, and a strict replay would pass without replaying it.
The same variables, as the user set them, name the user's own gateway (Azure, a LiteLLM proxy, vLLM,
a company gateway), which capture then records from.
"""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import urlsplit

from ..errors import UsageError
from ..providers import PROVIDERS

# Per provider, in the order the user's own value is looked for (see each provider's module).
BASE_URL_VARS: dict[str, tuple[str, ...]] = {p.name: p.base_url_vars for p in PROVIDERS.values() if p.records}
OTLP_TRACES_VAR = PROVIDERS["otlp"].base_url_vars[0]
ALL_VARS: tuple[str, ...] = tuple(v for p in PROVIDERS.values() for v in p.base_url_vars)
# The base-URL variables a vcr test keeps as it set them: its SDK's calls to the real host are served by host.
KEPT_BY_VCR: tuple[str, ...] = tuple(
    v for p in PROVIDERS.values() if p.records and p.on_httpx for v in p.base_url_vars
)
# The variable each provider's SDKs read their key from.
KEY_VARS: dict[str, str] = {p.name: p.key_var for p in PROVIDERS.values() if p.key_var}
# Every variable that holds a credential a provider's SDK reads: the keys, and AWS's secret and token.
CREDENTIAL_VARS: tuple[str, ...] = tuple(
    var for p in PROVIDERS.values() if p.key_var for var in (p.key_var, *p.placeholder_vars)
)
# Where a provider's capture and live calls go when the user names it (ATTEST_<NAME>_UPSTREAM).
UPSTREAM_VARS: tuple[str, ...] = tuple(p.upstream_var for p in PROVIDERS.values() if p.upstream_var)
# The SDKs refuse to build a client without a key; a replay needs none, so sessions hand the agent a
# placeholder that can never match the engine's own key and so is never forwarded.
PLACEHOLDER_KEY = "attest-replay-no-key"


def placeholder_credentials(env: Mapping[str, str], placeholder: str) -> dict[str, str]:
    """`placeholder` in the key variable of each provider whose key `env` lacks, and in the others its
    SDK needs before it sends anything (AWS's secret key): SDKs refuse to build a client or to sign
    without them, and a replay needs no key."""
    return {
        var: placeholder
        for p in PROVIDERS.values()
        if p.key_var and not env.get(p.key_var)
        for var in (p.key_var, *p.placeholder_vars)
    }


def keys_in(env: Mapping[str, str]) -> dict[str, str | None]:
    """Each provider's key as `env` holds it (None: not set): the only key a live call may carry."""
    return {p: env.get(var) or None for p, var in KEY_VARS.items()}


def proxy_env(prefix: str) -> dict[str, str]:
    """Every variable pointed at a proxy serving each provider under `<prefix>/<provider>`."""
    return {var: f"{prefix}/{p.name}{p.path_for(var)}" for p in PROVIDERS.values() for var in p.base_url_vars}


def user_base_url(provider: str, env: Mapping[str, str]) -> tuple[str, str] | None:
    """The base URL the user set for `provider` (their own gateway), if any, and the variable."""
    return next(((env[var], var) for var in BASE_URL_VARS[provider] if env.get(var, "").strip()), None)


def explicit_upstream(var: str, env: Mapping[str, str]) -> str | None:
    """The upstream the user set in `var`, if any. A value that is not an http(s) URL with a host is a
    usage error: unchecked, every forwarded call would fail later, one by one, in the HTTP client."""
    text = env.get(var, "").strip()
    if not text:
        return None
    shown = "the value" if "@" in text else repr(text)  # userinfo may hold a credential: never echoed
    url = urlsplit(text)
    if url.scheme not in ("http", "https"):
        hint = f": write http://{text} or https://{text}" if "://" not in text and "@" not in text else ""
        raise UsageError(f"{var} must be a URL starting with http:// or https://, not {shown}{hint}")
    try:
        url.port  # noqa: B018 -- parsing the port is the check
    except ValueError:
        raise UsageError(f"{var} has a port that is not a number from 0 to 65535: {shown}") from None
    if not url.hostname:
        raise UsageError(f"{var} names no host: {shown}")
    return text


def check_upstreams(env: Mapping[str, str]) -> None:
    """Every ATTEST_<NAME>_UPSTREAM of `env` checked, before the agent runs (see `explicit_upstream`)."""
    for var in UPSTREAM_VARS:
        explicit_upstream(var, env)
