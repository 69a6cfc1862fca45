"""Which names hold a credential: JSON keys, header names, query parameters, `.env` variables and
command-line flags.

A name is split into words (`X-Amz-Signature`, `x_amz_signature` and `xAmzSignature` all give
x, amz, signature) and judged by its words, so a provider's custom header (`X-Custom-Auth`) is caught
without a list of every provider, while the many ordinary names that merely contain such a word
(`max_tokens`, `prompt_cache_key`, `author`, a thinking block's `signature`, logprobs' `token`) are not.
"""

from __future__ import annotations

import re
from functools import lru_cache

# Words that make any name secret: `client_secret`, `x_custom_auth`, `db_password`, `set_cookie`.
_ALWAYS = frozenset(
    {
        "secret",
        "secrets",
        "password",
        "passwd",
        "passphrase",
        "auth",
        "authorization",
        "authentication",
        "cookie",
        "cookies",
        "credential",
        "credentials",
        "apikey",
        "sessionid",
        "sig",
        "dsn",
    }
)
# Words that are secret only after a qualifier: `api_key` but not `prompt_cache_key`,
# `access_token` but not logprobs' `token` or `max_tokens`, `x_amz_signature` but not `signature`.
_QUALIFIED = {
    "key": frozenset(
        {"api", "secret", "private", "access", "session", "signing", "encryption", "client", "master"}
        | {"account", "subscription", "service", "app", "auth", "admin", "license", "goog"}
    ),
    "token": frozenset(
        {"access", "refresh", "id", "auth", "session", "bearer", "api", "csrf", "xsrf", "security"}
        | {"oauth", "github", "gh", "gitlab", "sas", "personal", "client", "service", "bot", "slack", "hf"}
    ),
    "signature": frozenset({"amz", "request", "url", "hmac", "webhook"}),
}
# Query parameters that are credentials on their own (Google's `key`, signed URLs' `signature`).
_QUERY_ONLY = frozenset({"key", "token", "code", "signature", "session"})
# `.env` variables: also `OPENAI_API_KEY`, `GITHUB_TOKEN`, `SENTRY_DSN`, whatever qualifies them.
_ENV_WORDS = _ALWAYS | {"key", "token", "pass", "private", "signature"}

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_SEPARATORS = re.compile(r"[^a-z0-9]+")


def words(name: str) -> tuple[str, ...]:
    """`X-Amz-Signature` -> ("x", "amz", "signature"); `apiKey` -> ("api", "key")."""
    return tuple(w for w in _SEPARATORS.split(_CAMEL.sub("_", name).lower()) if w)


@lru_cache(maxsize=8192)
def is_secret_key(name: str) -> bool:
    """True for a JSON key, header or form field whose value is a credential whatever it looks like."""
    parts = words(name)
    if not parts:
        return False
    if any(part in _ALWAYS for part in parts):
        return True
    for index, part in enumerate(parts):
        qualifiers = _QUALIFIED.get(part)
        if qualifiers and any(word in qualifiers for word in parts[:index]):
            return True
    return "".join(parts) in _JOINED


# Names written as one word that the split cannot see into: `secretaccesskey`, `xapikey`.
_JOINED = frozenset(
    {"secretaccesskey", "accesstoken", "refreshtoken", "sessiontoken", "xapikey", "privatekey"}
)


@lru_cache(maxsize=4096)
def is_secret_param(name: str) -> bool:
    """True for a query parameter that carries a credential (`key`, `sig`, `X-Amz-Signature`, ...)."""
    parts = words(name)
    if len(parts) == 1:
        return is_secret_key(name) or parts[0] in _QUERY_ONLY
    # `session_id` in a URL is a login; as a header or JSON key (`mcp-session-id`) it names a session.
    return is_secret_key(name) or "".join(parts) == "sessionid"


def is_secret_env_name(name: str) -> bool:
    """True for a `.env` or environment variable named like a credential (`*_API_KEY`, `*_TOKEN`)."""
    return is_secret_key(name) or any(part in _ENV_WORDS for part in words(name))


# A flag's last word that makes it a credential even alone: `--token`, `--key`, `--pass`, `--pat`.
_FLAG_WORDS = frozenset({"key", "token", "pass", "pat"})


def is_secret_flag(name: str) -> bool:
    """True for a command-line flag (without its dashes) whose value is a credential: `api-key`,
    `token`, `password`, `client_secret`; not a negation such as `no-auth`, which takes no value."""
    parts = words(name)
    if not parts or parts[0] == "no":
        return False
    return is_secret_key(name) or parts[-1] in _FLAG_WORDS
