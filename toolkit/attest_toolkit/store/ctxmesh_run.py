"""`attest fixture download RUN_ID`: a ctxmesh run's blobs from the object store, as one attest fixture.

ctxmesh's gateway (model channel) and egress sidecar (tool channel) each put the whole growing run
under `fixtures/<run id>/<sha256>.json` after every call. This lists exactly that prefix (a trailing
`/`, so `run-1` never picks up `run-12`), validates and credential-checks each blob, keeps the most
complete snapshot of each channel (`ctxmesh.fixture_from_blobs`), and writes the fixture atomically at
0600. Exit codes are ctxmesh's: 1 for usage (no run id, no store), 2 for anything the run or the store
gets wrong, with nothing written.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from pathlib import Path

from .. import ctxmesh
from .. import fixture as fx
from ..errors import UsageError
from ..secrets import Secrets, environment_secrets
from .client import ObjectStore, StoreConfig, StoreError, StoreUsageError, config_from_env, stored

PREFIX = "fixtures"  # ctxmesh's key prefix: fixtures/<run id>/<sha256>.json


@dataclass(frozen=True)
class Downloaded:
    path: Path
    name: str
    blobs: int
    model: int
    tools: int


def run_key(run_id: str) -> str:
    """ctxmesh's sanitising: the last segment of the cleaned id; nothing left is `_unkeyed`."""
    last = posixpath.basename(posixpath.normpath(run_id.strip()).rstrip("/"))
    return last if last not in ("", ".", "..", "/") else "_unkeyed"


def download_run(
    run_id: str,
    *,
    config: StoreConfig | None = None,
    output: Path | None = None,
    name: str | None = None,
    fixtures_dir: Path | None = None,
    mcp_env: str = "MCP_URL",
    secrets: Secrets | None = None,
) -> Downloaded:
    if not run_id.strip():
        raise StoreUsageError("the run id is blank (usage: attest fixture download RUN_ID)")
    key = run_key(run_id)
    try:
        name = fx.check_name(name or (fx.name_of(output) if output else key))
        ctxmesh.check_mcp_env(mcp_env)
        target = output or fx.fixture_path(name, fixtures_dir)
    except UsageError as exc:
        raise StoreUsageError(f"{exc}{'' if name else '; pass --name'}") from None
    store = ObjectStore(config or config_from_env())
    # A blob that is invalid or holds a credential, or a failed write: exit 2, nothing written.
    return stored(_download, store, key, name, target, mcp_env, secrets or environment_secrets())


def _download(
    store: ObjectStore, key: str, name: str, target: Path, mcp_env: str, secrets: Secrets
) -> Downloaded:
    prefix = f"{PREFIX}/{key}/"
    keys = [k for k in store.keys(prefix) if k.endswith(".json")]
    if not keys:
        raise StoreError(f"no fixture recorded for run {key} (no *.json under {prefix})", store.url(prefix))
    blobs = []
    for blob_key in keys:
        where = store.url(blob_key)
        text = store.get(blob_key, fx.MAX_FIXTURE_BYTES).decode("utf-8", "replace")
        blobs.append((where, ctxmesh.parse_blob(text, where)))
    doc = ctxmesh.fixture_from_blobs(blobs, name, mcp_env, secrets, key, store.url(prefix))
    fx.write_fixture(target, doc, secrets)  # scans the merged fixture again before the atomic write
    return Downloaded(
        target, name, len(keys), len(fx.model_interactions(doc)), len(fx.tool_interactions(doc))
    )
