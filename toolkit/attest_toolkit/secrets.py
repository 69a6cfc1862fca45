"""What a credential looks like: provider keys, bearer tokens, secret-named JSON keys, `.env` values.

Both the credential scan (fixture read and write) and redaction (capture and replay) use these
shapes, so what capture removes is exactly what the scan would refuse.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

REDACTED = "{{redacted}}"

# (label, pattern). Labels name the kind of secret in errors; the value itself is never shown.
TOKEN_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (label, re.compile(rx))
    for label, rx in (
        ("Anthropic API key", r"sk-ant-[A-Za-z0-9_\-]{16,}"),
        ("OpenAI-style API key", r"\bsk-(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_\-]{16,}"),
        ("bearer token", r"(?i)\bbearer\s+[A-Za-z0-9._~+/=\-]{8,}"),
        ("GitHub token", r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{20,})"),
        ("AWS access key", r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
        ("Google API key", r"\bAIza[0-9A-Za-z_\-]{35}"),
        ("Groq API key", r"\bgsk_[A-Za-z0-9]{20,}"),
        ("xAI API key", r"\bxai-[A-Za-z0-9]{20,}"),
        ("Hugging Face token", r"\bhf_[A-Za-z0-9]{30,}"),
        ("Slack token", r"\bxox[abprs]-[A-Za-z0-9\-]{10,}"),
        ("JSON web token", r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"),
    )
)

# JSON keys whose string value is a credential whatever it looks like. Not "token" (logprobs use it)
# nor "signature" (Anthropic thinking blocks carry one that is no credential).
SECRET_JSON_KEYS = frozenset(
    {
        "api_key",
        "apikey",
        "x_api_key",
        "api_token",
        "authorization",
        "proxy_authorization",
        "access_token",
        "refresh_token",
        "id_token",
        "auth_token",
        "session_token",
        "bearer_token",
        "client_secret",
        "secret_key",
        "password",
        "passwd",
        "private_key",
        "x_goog_api_key",
        "cookie",
        "set_cookie",
    }
)
# Query parameters that carry credentials (Google's `key`, signed URLs' `sig`).
SECRET_QUERY_PARAMS = SECRET_JSON_KEYS | {"key", "sig", "signature", "token", "code"}

# The shortest `.env` value treated as a secret: shorter ones ("1", "true", "gpt-4o") are settings.
MIN_ENV_SECRET = 8
ENV_MAX_BYTES = 1024 * 1024


def _canon(name: str) -> str:
    return name.lower().replace("-", "_")


def is_secret_key(name: str) -> bool:
    return _canon(name) in SECRET_JSON_KEYS


def is_secret_param(name: str) -> bool:
    return _canon(name) in SECRET_QUERY_PARAMS


# Text every shape in TOKEN_PATTERNS contains (a test keeps the two in step). The scan and
# redaction check these substrings first and run the shapes only on text that has one: most text has
# none, and eleven regular-expression scans per string would dominate a replayed call and a fixture read.
SECRET_HINTS = (
    "sk-",
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "github_pat_",
    "AKIA",
    "ASIA",
    "AIza",
    "gsk_",
    "xai-",
    "hf_",
    "xox",
    "eyJ",
)  # and "bearer" in any case


# Short text (most keys and values) is checked with one pattern; long text with plain substring scans,
# which Python runs faster than a pattern with many alternatives.
_HINT_PATTERN = re.compile("|".join(map(re.escape, SECRET_HINTS)) + "|(?i:bearer)")
_SHORT = 256


def may_hold_secret(text: str, values: tuple[str, ...]) -> bool:
    """False only when `text` cannot hold a secret shape or one of `values`."""
    if len(text) < MIN_ENV_SECRET:  # every shape and every `.env` secret is at least this long
        return False
    for value in values:
        if value in text:
            return True
    if len(text) < _SHORT:
        return _HINT_PATTERN.search(text) is not None
    for hint in SECRET_HINTS:
        if hint in text:
            return True
    return "bearer" in text.lower()


@dataclass(frozen=True)
class Secrets:
    """The secrets to look for beyond the fixed shapes: values from `.env` and the environment."""

    values: tuple[str, ...] = ()
    _pattern: re.Pattern[str] | None = field(default=None, compare=False, repr=False)

    @classmethod
    def of(cls, values: Iterable[str]) -> Secrets:
        vals = tuple(sorted({v for v in values if len(v) >= MIN_ENV_SECRET}, key=len, reverse=True))
        pattern = re.compile("|".join(re.escape(v) for v in vals)) if vals else None
        return cls(vals, pattern)

    def find(self, text: str) -> str | None:
        """The label of the first secret in `text`, or None."""
        if not may_hold_secret(text, self.values):
            return None
        for label, rx in TOKEN_PATTERNS:
            if rx.search(text):
                return label
        if self._pattern is not None and self._pattern.search(text):
            return "value from .env"
        return None

    def redact(self, text: str) -> str:
        if not may_hold_secret(text, self.values):
            return text
        for _, rx in TOKEN_PATTERNS:
            text = rx.sub(REDACTED, text)
        if self._pattern is not None:
            text = self._pattern.sub(REDACTED, text)
        return text


def _parse_env(text: str) -> Iterator[str]:
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        _, value = line.removeprefix("export ").split("=", 1)
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        else:
            value = value.split(" #", 1)[0].strip()
        if value:
            yield value


_warned: set[str] = set()


def load_dotenv_values(cwd: Path | None = None) -> tuple[str, ...]:
    """The values of the working directory's `.env`; an unusable one is ignored with one warning."""
    path = (cwd or Path.cwd()) / ".env"
    if not path.exists() and not path.is_symlink():
        return ()
    problem = None
    if not path.is_file():
        problem = "not a regular file"
    elif path.stat().st_size > ENV_MAX_BYTES:
        problem = "over 1 MiB"
    if problem is None:
        try:
            return tuple(_parse_env(path.read_text(encoding="utf-8", errors="replace")))
        except OSError as exc:
            problem = exc.strerror or "unreadable"
    if str(path) not in _warned:
        _warned.add(str(path))
        print(f"attest: warning: {path}: {problem}; ignoring it", file=sys.stderr)
    return ()


def environment_secrets(cwd: Path | None = None, extra: Iterable[str] = ()) -> Secrets:
    """Secrets from `.env` in `cwd` plus any extra values (e.g. the provider keys of this process)."""
    return Secrets.of([*load_dotenv_values(cwd), *extra])
