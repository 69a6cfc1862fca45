"""Links to the code as GitHub shows it, for the summary (`report.summary.Links`)."""

from __future__ import annotations

from ..report.summary import NO_LINKS, Links
from .event import DEFAULT_SERVER_URL


def blob_links(repo: str | None, sha: str | None, server_url: str = DEFAULT_SERVER_URL) -> Links:
    """`{server}/{repo}/blob/{sha}/{file}#L{line}`; without a repository and a commit, none."""
    if not (repo and sha):
        return NO_LINKS
    return Links(f"{server_url.rstrip('/')}/{repo}/blob/{sha}/")
