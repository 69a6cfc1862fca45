"""What every aiohttp proxy of attest sets up alike: the request size limit and per-request flags.

It imports aiohttp, so the engine's server imports it only with its web application (`replay.webapp`),
when a request first needs it.
"""

from __future__ import annotations

from typing import cast

from aiohttp import web

MAX_REQUEST_BYTES = 64 * 1024 * 1024


def request_flag(name: str) -> web.RequestKey[bool]:
    """The key of a flag kept on a request: a `web.RequestKey` where aiohttp has one (3.14 and later,
    which warn on a plain string), else the string, as the releases before take it."""
    make = getattr(web, "RequestKey", None)
    return make(name, bool) if make is not None else cast("web.RequestKey[bool]", name)
