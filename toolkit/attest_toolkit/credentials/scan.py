"""What a credential looks like: provider keys, bearer tokens, secret-named values, `.env` secrets.

Both the credential scan (fixture read and write) and redaction (capture and replay) use these
shapes, so what capture removes is exactly what the scan would refuse.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..providers import KEY_PATTERNS, KeyPattern
from .context import REDACTED, Span, context_spans, json_in_text_spans, mixed_case_and_digits
from .names import is_secret_env_name, is_secret_flag, is_secret_key

# Shapes that are no provider's own (the providers' key shapes are fields of their records).
_GENERIC = (
    # A token has a digit or a symbol in it: "the ring bearer returned" is prose, not a header.
    KeyPattern(
        "bearer token",
        r"(?i)\bbearer\s+(?=[A-Za-z0-9._~+/=\-]{8})[A-Za-z]*[0-9._~+/=\-][A-Za-z0-9._~+/=\-]*",
        (),  # "bearer" in any case: see may_hold_secret
    ),
    KeyPattern(
        "GitHub token",
        r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{20,})",
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    ),
    KeyPattern("AWS access key", r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b", ("AKIA", "ASIA")),
    KeyPattern("xAI API key", r"\bxai-[A-Za-z0-9]{20,}", ("xai-",)),
    KeyPattern("Hugging Face token", r"\bhf_[A-Za-z0-9]{30,}", ("hf_",)),
    KeyPattern("Slack token", r"\bxox[abprs]-[A-Za-z0-9\-]{10,}", ("xox",)),
    KeyPattern(
        "JSON web token", r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}", ("eyJ",)
    ),
)
_SHAPES = (*KEY_PATTERNS, *_GENERIC)

# (label, pattern). Labels name the kind of secret in errors; the value itself is never shown.
TOKEN_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (k.label, re.compile(k.pattern)) for k in _SHAPES
)

# The shortest `.env` value treated as a secret: shorter ones ("1", "true", "gpt-4o") are settings.
MIN_ENV_SECRET = 8
ENV_MAX_BYTES = 1024 * 1024


# Text every shape in TOKEN_PATTERNS contains (a test keeps the two in step). The scan and
# redaction check these substrings first and run the shapes only on text that has one: most text has
# none, and eleven regular-expression scans per string would dominate a replayed call and a fixture read.
SECRET_HINTS: tuple[str, ...] = tuple(dict.fromkeys(h for k in _SHAPES for h in k.hints))  # and "bearer"


def may_hold_secret(text: str, values: tuple[str, ...]) -> bool:
    """False only when `text` cannot hold a secret shape or one of `values`."""
    if len(text) < MIN_ENV_SECRET:  # every shape and every `.env` secret is at least this long
        return False
    for value in values:
        if value in text:
            return True
    for hint in SECRET_HINTS:  # plain substring scans: faster than one pattern of alternatives at any length
        if hint in text:
            return True
    return "bearer" in text.lower()


def _merged(spans: list[Span]) -> list[Span]:
    spans.sort()
    out: list[Span] = []
    for start, end, label in spans:
        if out and start <= out[-1][1]:
            last = out[-1]
            out[-1] = (last[0], max(last[1], end), last[2])
        else:
            out.append((start, end, label))
    return out


_JSON_STARTS = ("{", "[")


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

    def spans(self, text: str) -> list[Span]:
        """Where the secrets in `text` are, overlapping ones merged, in order."""
        if len(text) < 6:  # shorter than any secret this can tell from a setting
            return []
        found: list[Span] = []
        if may_hold_secret(text, self.values):
            for label, rx in TOKEN_PATTERNS:
                found.extend((m.start(), m.end(), label) for m in rx.finditer(text))
            if self._pattern is not None:
                found.extend((m.start(), m.end(), "value from .env") for m in self._pattern.finditer(text))
        found.extend(context_spans(text))
        return _merged(found) if found else found

    def none_in(self, texts: list[str]) -> bool:
        """True when no text of `texts` holds a secret, decided with one scan of them all joined.

        Scanning each string on its own is most of reading a fixture and of keying a request. Joined by
        newlines, a string's secret is still found: every shape and every rule but the multipart one
        stops at a line end, and a match inside one string is a match in the joined text. The joined
        text can only add matches across strings (then the caller looks string by string), as do
        multipart text and JSON written in a string, whose rule looks at the string's first character."""
        return self.none_in_joined("\n".join(texts), texts)

    def none_in_joined(self, joined: str, texts: Iterable[str]) -> bool:
        """`none_in` of strings already joined by newlines; `texts`: those of them that may hold JSON
        text (a string of it starts with a bracket, after any blank)."""
        if "disposition" in joined.lower():
            return False
        if ("{" in joined or "[" in joined) and any(
            json_in_text_spans(t) for t in texts if t[:1] in _JSON_STARTS or t[:1].isspace()
        ):
            return False
        return not self.spans(joined)

    def find(self, text: str) -> str | None:
        """The label of the first secret in `text`, or None."""
        spans = self.spans(text)
        return spans[0][2] if spans else None

    def redact(self, text: str) -> str:
        spans = self.spans(text)
        if not spans:
            return text
        parts, last = [], 0
        for start, end, _ in spans:
            parts += [text[last:start], REDACTED]
            last = end
        parts.append(text[last:])
        return "".join(parts)

    def redact_all(self, value: Any) -> Any:
        """`value` (JSON-like) with every string in it redacted, keys included."""
        if isinstance(value, str):
            return self.redact(value)
        if isinstance(value, dict):
            return {self.redact(k): self.redact_all(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.redact_all(v) for v in value]
        return value


# `.env` values that are settings, not secrets, whatever their variable is called.
_SETTING = re.compile(r"(?i)true|false|yes|no|on|off|none|null|enabled|disabled")


def is_env_secret(name: str, value: str) -> bool:
    """A `.env` entry is a secret when its name says so (`*_KEY`, `*_TOKEN`, `*PASSWORD*`) or its
    value looks like a random key (20+ characters mixing upper case, lower case and digits), and it
    has at least 8 characters. Settings (`OPENAI_MODEL=gpt-4o-mini`, `APP_ENV=production`, ports,
    booleans, short words) are not."""
    if len(value) < MIN_ENV_SECRET or _SETTING.fullmatch(value):
        return False
    if is_secret_env_name(name):
        return True
    return len(value) >= 20 and not any(c.isspace() for c in value) and mixed_case_and_digits(value)


def _parse_env(text: str) -> Iterator[tuple[str, str]]:
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        name, value = line.removeprefix("export ").split("=", 1)
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        else:
            value = value.split(" #", 1)[0].strip()
        if value:
            yield name.strip(), value


_warned: set[str] = set()


def load_dotenv_values(cwd: Path | None = None) -> tuple[str, ...]:
    """The secret values of the working directory's `.env` (see is_env_secret); an unusable file is
    ignored with one warning."""
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
            entries = _parse_env(path.read_text(encoding="utf-8", errors="replace"))
            return tuple(value for name, value in entries if is_env_secret(name, value))
        except OSError as exc:
            problem = exc.strerror or "unreadable"
    if str(path) not in _warned:
        _warned.add(str(path))
        print(f"attest: warning: {path}: {problem}; ignoring it", file=sys.stderr)
    return ()


def environment_secrets(cwd: Path | None = None, extra: Iterable[str] = ()) -> Secrets:
    """Secrets from `.env` in `cwd` plus any extra values (e.g. the provider keys of this process)."""
    return Secrets.of([*load_dotenv_values(cwd), *extra])


# Flags whose value is a header line, `Name: value` (curl, httpie, wget, most HTTP clients).
_HEADER_FLAGS = frozenset({"-H", "--header", "--headers"})


def redact_argv(argv: Iterable[str], secrets: Secrets) -> list[str]:
    """A command line as a fixture may keep it: the value of every credential-named flag, in either form
    (`--api-key VALUE`, `--api-key=VALUE`), of a credential header (`-H "Authorization: Bearer …"`) and
    of a credential-named `NAME=VALUE` (`env API_TOKEN=…`) is redacted, then whatever has a secret's shape.
    Only names are read, so a value of any shape, a short one included, is caught."""
    out: list[str] = []
    pending: str | None = None  # the flag whose value the next argument is
    for arg in argv:
        if pending is not None:
            out.append(_header_redacted(arg) if pending in _HEADER_FLAGS else REDACTED)
            pending = None
            continue
        flag = _flag_name(arg)
        if arg in _HEADER_FLAGS or (flag is not None and is_secret_flag(flag)):
            pending = arg
            out.append(arg)
            continue
        out.append(secrets.redact(_assignment_redacted(arg)))
    return out


def _flag_name(arg: str) -> str | None:
    """`api-key` of `--api-key` or `-api-key`; None for an argument that is not a flag alone."""
    if not arg.startswith("-") or "=" in arg or arg in ("-", "--"):
        return None
    return arg.lstrip("-")


def _assignment_redacted(arg: str) -> str:
    """`--api-key={{redacted}}`, `--header=Authorization: {{redacted}}`, `API_TOKEN={{redacted}}`."""
    name, equals, value = arg.partition("=")
    if not equals or not value:
        return arg
    if name in _HEADER_FLAGS:
        return f"{name}={_header_redacted(value)}"
    flag = name.lstrip("-")
    secret = is_secret_flag(flag) if name.startswith("-") else is_secret_env_name(name)
    return f"{name}={REDACTED}" if secret and " " not in name else arg


def _header_redacted(line: str) -> str:
    name, colon, _ = line.partition(":")
    return f"{name}: {REDACTED}" if colon and is_secret_key(name.strip()) else line
