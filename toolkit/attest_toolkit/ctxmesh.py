"""Import ctxmesh record-and-replay fixtures: one file, or a directory of its partial blobs.

A ctxmesh fixture is `{schemaVersion, runId, agent, recordedAt, model[], tools[]}` with each answer
as base64 `responseBytes` (SSE framing included). Its recorders write the whole growing run again
after every call, so a run's directory holds snapshots 1, 2, ... N calls long: this import keeps each
interaction once, in order. The bytes are kept (SSE event by event), ids are templated and
credentials refused, as for any import. Its tools all sat behind one MCP endpoint, declared here as one
server reached through one variable (`--mcp-env`, default MCP_URL).
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from . import fixture as fx
from .errors import AttestError, CredentialFound, UsageError, read_text
from .normalize import Exchange, Templater
from .secrets import Secrets, environment_secrets
from .tools.declare import server_name
from .tools.match import call_key
from .tools.mcp import rpc_reply

SUPPORTED = 1
# The header names ctxmesh's own no-credentials check looks for at the start of a line.
_HEADER_LINE = re.compile(
    r"(?:^|[\r\n])(authorization|proxy-authorization|cookie|set-cookie|x-api-key|x-goog-api-key|api-key|"
    r"x-amz-security-token|openai-api-key|anthropic-api-key)\s*:",
    re.IGNORECASE,
)


class CtxmeshError(AttestError):
    """A ctxmesh fixture that cannot be read or converted."""


def is_ctxmesh(path: Path) -> bool:
    """A directory of blobs, or a JSON file with ctxmesh's `schemaVersion` and channels."""
    if path.is_dir():
        return True
    if path.suffix.lower() != ".json":
        return False
    try:
        head = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(head, dict) and "schemaVersion" in head and ("model" in head or "tools" in head)


def parse_blob(text: str, where: str | Path) -> dict[str, Any]:
    """One ctxmesh fixture or partial blob, checked as ctxmesh loads it; `where` names it in errors."""
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise CtxmeshError(f"not valid JSON ({exc})", where) from None
    if not isinstance(doc, dict):
        raise CtxmeshError("not a ctxmesh fixture (expected a JSON object)", where)
    version = doc.get("schemaVersion")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise CtxmeshError("no schemaVersion: not a ctxmesh fixture", where)
    if version > SUPPORTED:
        raise CtxmeshError(f"schemaVersion {version} is newer than this importer reads ({SUPPORTED})", where)
    for channel in ("model", "tools"):
        if not isinstance(doc.get(channel) or [], list):
            raise CtxmeshError(f"{channel} is not a list", where)
    return doc


def _blob(path: Path) -> dict[str, Any]:
    return parse_blob(read_text(path, CtxmeshError, "ctxmesh fixture"), path)


def read_blobs(path: Path) -> list[tuple[Path, dict[str, Any]]]:
    """The blobs of a run: the file, or a directory's `*.json` files by name (as ctxmesh merges them)."""
    if not path.is_dir():
        return [(path, _blob(path))]
    files = sorted(p for p in path.iterdir() if p.suffix == ".json" and p.is_file())
    if not files:
        raise CtxmeshError("the directory holds no *.json blobs", path)
    return [(p, _blob(p)) for p in files]


def merged(lists: Sequence[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """One channel from several blobs: a snapshot that is a prefix of a longer one adds nothing;
    a part that is not is appended, without the interactions already kept."""

    def same(a: dict[str, Any], b: dict[str, Any]) -> bool:
        return {k: v for k, v in a.items() if k != "index"} == {k: v for k, v in b.items() if k != "index"}

    kept: list[dict[str, Any]] = []
    for items in sorted((i for i in lists if i), key=len, reverse=True):
        if len(items) <= len(kept) and all(same(a, b) for a, b in zip(items, kept, strict=False)):
            continue
        kept += [item for item in items if not any(same(item, k) for k in kept)]
    return kept


def _bytes(item: dict[str, Any], where: str, path: str | Path) -> bytes:
    try:
        return base64.b64decode(item.get("responseBytes") or "", validate=True)
    except (binascii.Error, ValueError):
        raise CtxmeshError(f"{where}.responseBytes is not base64", path) from None


def _content_type(item: dict[str, Any], raw: bytes) -> str:
    """The recorded content type, else sniffed as ctxmesh's replay does."""
    if item.get("contentType"):
        return str(item["contentType"])
    return "text/event-stream" if raw.lstrip().startswith((b"event:", b"data:")) else "application/json"


def check_credentials(path: str | Path, doc: dict[str, Any], secrets: Secrets) -> None:
    """Refuse a blob that holds a credential: ctxmesh's header lines, and attest's own scan."""
    for channel in ("model", "tools"):
        for i, item in enumerate(doc.get(channel) or []):
            where = f"{channel}[{i}]"
            text = _bytes(item, where, path).decode("utf-8", "replace")
            header = _HEADER_LINE.search(text)
            if header:
                raise CredentialFound(
                    f"credential found at {where}.responseBytes ({header.group(1)} header)", path
                )
            hit = fx.find_credential({"request": item.get("request"), "responseBytes": text}, secrets)
            if hit:
                raise CredentialFound(
                    f"credential found at {where}{hit[0]} ({hit[1]}); refusing to import it", path
                )


def _model_path(request: Any) -> str:
    return "/v1/responses" if isinstance(request, dict) and "input" in request else "/v1/chat/completions"


def model_interaction(
    item: dict[str, Any], templater: Templater, where: str, path: str | Path
) -> dict[str, Any]:
    raw = _bytes(item, where, path)
    request = item.get("request")
    exchange = Exchange(
        method="POST",
        path=_model_path(request),
        query="",
        request_body=json.dumps(request).encode() if request is not None else b"",
        status=int(item.get("statusCode") or 200),
        response_headers=[("content-type", _content_type(item, raw))],
        response_body=raw,
    )
    return templater.record(exchange, "openai")


def _rpc_request(item: dict[str, Any], position: int) -> dict[str, Any]:
    request = item.get("request")
    if isinstance(request, dict) and request.get("jsonrpc") == "2.0" and "method" in request:
        return request
    arguments = request.get("arguments", request) if isinstance(request, dict) else {}
    return {
        "jsonrpc": "2.0",
        "id": item.get("callId") or position + 1,
        "method": "tools/call",
        "params": {"name": item.get("toolName", ""), "arguments": arguments if arguments is not None else {}},
    }


def _tool_body(
    raw: bytes, content_type: str, request: dict[str, Any], templater: Templater
) -> dict[str, Any]:
    text = raw.decode("utf-8", "replace")
    if content_type.startswith("text/event-stream"):
        from .normalize import split_sse

        return {"sse": [templater.secrets.redact(e) for e in split_sse(text)]}
    try:
        parsed = json.loads(text)
    except ValueError:
        parsed = {"content": [{"type": "text", "text": text}]}
    if rpc_reply(parsed) is None:  # ctxmesh wraps such an answer in a result envelope
        parsed = {"jsonrpc": "2.0", "id": request.get("id"), "result": parsed}
    return {"json": parsed}


def tool_interaction(
    item: dict[str, Any], position: int, server: str, templater: Templater, path: str | Path
) -> dict[str, Any]:
    raw = _bytes(item, f"tools[{position}]", path)
    request = _rpc_request(item, position)
    body = {"json": request}
    rpc = {"method": request["method"], **({"name": item["toolName"]} if item.get("toolName") else {})}
    if "id" not in request:  # a notification: accepted, nothing to answer
        response: dict[str, Any] = {"status": 202, "body": {}}
    else:
        content_type = _content_type(item, raw)
        body_form = _tool_body(raw, content_type, request, templater)
        response = {"status": 200, "headers": {"content-type": content_type}, "body": body_form}
    return {
        "server": server,
        "method": "POST",
        "path": "/",
        "rpc": rpc,
        "request": body,
        "hash": call_key(server, "POST", "/", "", body, templater.secrets).hash,
        "response": response,
    }


def build_fixture(path: Path, name: str, mcp_env: str, secrets: Secrets) -> fx.Fixture:
    return fixture_from_blobs(read_blobs(path), name, mcp_env, secrets, path.name, path)


Blobs = Sequence[tuple[str | Path, dict[str, Any]]]


def fixture_from_blobs(
    blobs: Blobs, name: str, mcp_env: str, secrets: Secrets, run_id: str, where: str | Path
) -> fx.Fixture:
    """One fixture from a run's blobs (each credential-checked): the most complete snapshot of each
    channel, in order, with the parts no snapshot repeats. `where` names the run in errors."""
    for blob_where, doc in blobs:
        check_credentials(blob_where, doc, secrets)
    model = merged([doc.get("model") or [] for _, doc in blobs])
    tools = merged([doc.get("tools") or [] for _, doc in blobs])
    if not model and not tools:
        raise CtxmeshError("the ctxmesh fixture holds no interactions; nothing to import", where)
    templater = Templater(secrets)
    server = server_name(mcp_env)
    source = {**fx.new_source([]), "imported_from": f"ctxmesh run {_first(blobs, 'runId') or run_id}"}
    return fx.new_fixture(
        name,
        source,
        [model_interaction(item, templater, f"model[{i}]", where) for i, item in enumerate(model)],
        [tool_interaction(item, i, server, templater, where) for i, item in enumerate(tools)],
        {server: {"transport": "http", "env": mcp_env}} if tools else None,
    )


def _first(blobs: Blobs, key: str) -> str | None:
    return next((str(doc[key]) for _, doc in blobs if doc.get(key)), None)


def check_mcp_env(mcp_env: str) -> str:
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", mcp_env):
        raise UsageError(f"--mcp-env {mcp_env!r} must be an environment variable name")
    return mcp_env


def import_ctxmesh(
    path: str | Path,
    name: str,
    fixtures_dir: str | Path | None = None,
    *,
    mcp_env: str = "MCP_URL",
    force: bool = False,
    secrets: Secrets | None = None,
) -> tuple[Path, int, int]:
    """Import a ctxmesh fixture file or blob directory; returns (path, model calls, tool messages)."""
    from .fixture import check_name

    check_name(name)
    check_mcp_env(mcp_env)
    target = fx.fixture_path(name, fixtures_dir)
    if target.exists() and not force:
        raise UsageError("fixture exists; pass --force to overwrite it", target)
    secrets = secrets if secrets is not None else environment_secrets()
    doc = build_fixture(Path(path), name, mcp_env, secrets)
    model, tools = len(fx.model_interactions(doc)), len(fx.tool_interactions(doc))
    fx.write_fixture(target, doc, secrets)
    return target, model, tools
