"""Every GitLab REST API v4 call attest makes, through requests.

The token goes as `PRIVATE-TOKEN`, and only to the API's own origin: a `Link` to another host is not
followed. Lists are read 100 a page, following `x-next-page`, else the `Link` header's rel="next"
(`x-total` may be missing, so neither is relied on alone). A 429 waits as its `Retry-After` says
(seconds or a date), else until `RateLimit-Reset` (Unix seconds); a 5xx or a dropped connection
backs off exponentially. Attempts and the total wait are bounded, and a wait longer than allowed gives
up at once instead of holding the job. `sleep` and `clock` are injectable so tests never wait. Every
failure is one line, `GitLabError`, naming what was asked and never the token.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import requests

from ..forge.waits import retry_after

PER_PAGE = 100  # GitLab's most per page
TIMEOUT = 30.0
HINTS = {
    401: "the token is missing, invalid, expired or revoked",
    403: "the token may not do this (a project or group access token with the api scope is needed)",
    404: "no such project or merge request, or the token cannot see it",
}


class GitLabError(Exception):
    """GitLab could not be reached or refused a request; publishing degrades, the verdict stands."""


@dataclass(frozen=True)
class RetryPolicy:
    attempts: int = 5
    backoff: float = 2.0
    rate_limited_wait: float = 60.0  # a 429 that says nothing of when to come back
    max_wait: float = 120.0
    total_wait: float = 300.0
    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.time


DEFAULT_RETRY = RetryPolicy()


def _message(response: requests.Response) -> str:
    try:
        data = response.json()
    except ValueError:
        data = None
    text = ""
    if isinstance(data, dict):
        found = data.get("message") or data.get("error_description") or data.get("error") or ""
        text = found if isinstance(found, str) else str(found)
    return " ".join(text.split())[:300]


@dataclass
class Client:
    """The API at `api_url` (CI_API_V4_URL) with one token."""

    api_url: str
    token: str
    policy: RetryPolicy | None = None  # None: DEFAULT_RETRY, as it is when the client is made
    waits: list[float] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.retry = self.policy or DEFAULT_RETRY
        self.api_url = self.api_url.rstrip("/")
        self.session = requests.Session()
        self.session.headers["PRIVATE-TOKEN"] = self.token
        self.session.trust_env = False  # no .netrc credentials of this machine sent instead

    def close(self) -> None:
        self.session.close()

    def request(
        self, what: str, method: str, path: str, *, allow: tuple[int, ...] = (), **kwargs: Any
    ) -> requests.Response:
        """The response; a refusal is GitLabError unless its status is in `allow`."""
        url = path if path.startswith(self.api_url + "/") else f"{self.api_url}{path}"
        for attempt in range(1, self.retry.attempts + 1):
            try:
                response = self.session.request(method, url, timeout=TIMEOUT, **kwargs)
            except requests.RequestException as exc:
                if attempt == self.retry.attempts:
                    raise GitLabError(f"{what}: {type(exc).__name__}: cannot reach GitLab") from None
                self._wait(what, self.retry.backoff * 2 ** (attempt - 1))
                continue
            if response.status_code != 429 and response.status_code < 500:
                break
            if attempt == self.retry.attempts:
                break
            self._wait(what, self._wait_for(response, attempt))
        if response.status_code >= 400 and response.status_code not in allow:
            hint = HINTS.get(response.status_code) or _message(response) or response.reason
            raise GitLabError(f"{what}: GitLab answered {response.status_code}: {hint}")
        return response

    def _wait_for(self, response: requests.Response, attempt: int) -> float:
        now = self.retry.clock()
        after = (response.headers.get("Retry-After") or "").strip()
        if after and (wait := retry_after(after, now)) is not None:
            return wait
        reset = (response.headers.get("RateLimit-Reset") or "").strip()
        if response.status_code == 429 and reset.isdigit():
            return max(int(reset) - now, 0.0) + 1.0  # the reset is whole seconds
        backoff = self.retry.backoff * 2 ** (attempt - 1)
        return max(self.retry.rate_limited_wait, backoff) if response.status_code == 429 else backoff

    def _wait(self, what: str, wait: float) -> None:
        left = self.retry.total_wait - sum(self.waits)
        if wait > self.retry.max_wait or wait > left:
            allowed = min(self.retry.max_wait, left)
            raise GitLabError(
                f"{what}: rate limited: GitLab asked to wait {wait:.0f}s, more than the {allowed:.0f}s allowed"
            )
        self.waits.append(wait)
        self.retry.sleep(wait)

    def json(self, what: str, method: str, path: str, **kwargs: Any) -> Any:
        response = self.request(what, method, path, **kwargs)
        try:
            return response.json()
        except ValueError:
            raise GitLabError(f"{what}: GitLab answered {response.status_code} without JSON") from None

    def pages(self, what: str, path: str, params: dict[str, str]) -> Iterator[dict[str, Any]]:
        """Every item of a list, page after page."""
        first = {**params, "per_page": str(PER_PAGE)}
        url: str | None = f"{self.api_url}{path}"
        query: dict[str, str] | None = first
        while url is not None:
            response = self.request(what, "GET", url, params=query)
            items = response.json() if response.content else []
            if not isinstance(items, list):
                raise GitLabError(f"{what}: GitLab answered a page that is not a list")
            yield from (item for item in items if isinstance(item, dict))
            following = (response.headers.get("x-next-page") or "").strip()
            link = response.links.get("next", {}).get("url")
            if following.isdigit():
                url, query = f"{self.api_url}{path}", {**first, "page": following}
            elif link and self._same_origin(link):
                url, query = link, None  # the link carries the whole query
            else:
                url = None

    def _same_origin(self, url: str) -> bool:
        ours, theirs = urlsplit(self.api_url), urlsplit(url)
        return (ours.scheme, ours.netloc) == (theirs.scheme, theirs.netloc)
