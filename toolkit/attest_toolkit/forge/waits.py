"""How long a forge's API asks a client to wait, as every forge's REST API says it (RFC 9110)."""

from __future__ import annotations

from email.utils import parsedate_to_datetime


def retry_after(value: str, now: float) -> float | None:
    """Seconds from `now` that a `Retry-After` header asks for: a number of seconds or an HTTP date;
    None when it is neither."""
    if value.isdigit():
        return float(value)
    try:
        return max(parsedate_to_datetime(value).timestamp() - now, 0.0)
    except (TypeError, ValueError):
        return None
