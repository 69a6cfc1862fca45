"""Import vcrpy / pytest-recording cassettes as an attest fixture.

Reads the cassette forms found in the wild: stock vcrpy YAML (bodies as text, or `!!binary` when the
recorded body was compressed or not UTF-8), vcrpy's JSON serializer, pydantic-ai's serializer (JSON
bodies stored as a structured `parsed_body`), and the older httpx form (`status_code`, `content`).
Every interaction goes through one `normalize.Templater`, so credentials are redacted before anything
is written; ids and timestamps stay as the cassette recorded them (its tests assert them). A request to
a provider's API host (the registry names it) is a model call of that provider; any other host's is
plain HTTP.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import re
import zlib
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePath
from typing import Any
from urllib.parse import unquote, urlsplit

import yaml

from . import fixture as fx
from . import plain_http
from .errors import AttestError, UsageError, read_text
from .guard.hosts import is_blocked_host
from .normalize import Exchange, Templater
from .providers import provider_for, provider_of_host, route
from .repo_root import fixtures_root, relative_to_root
from .secrets import Secrets, environment_secrets

try:  # libyaml is several times faster on big cassettes; the pure-Python loader reads the same
    from yaml import CSafeLoader as _Loader
except ImportError:  # pragma: no cover - depends on how PyYAML was built
    from yaml import SafeLoader as _Loader  # type: ignore[assignment]

CASSETTE_VERSION = 1

# Called after each converted interaction with (done, total), for a progress display.
Progress = Callable[[int, int], None]


class CassetteError(AttestError):
    """A cassette that cannot be read: not YAML/JSON, not a vcrpy cassette, or missing fields."""


class MissingCodec(ValueError):
    """A body is compressed with a codec whose optional package is not installed."""


@dataclass(frozen=True)
class Imported:
    path: Path
    interactions: int
    cassettes: int
    plain: dict[str, int] = field(default_factory=dict)  # host -> interactions with it kept as plain HTTP


@dataclass(frozen=True)
class Entry:
    """One cassette interaction as a wire exchange, and the provider it was sent to (None: a host
    that is not a model provider attest replays, such as an image the library fetched: it is kept as
    plain HTTP, see `plain_http`)."""

    exchange: Exchange
    provider: str | None
    host: str
    url: str


# --- where a cassette's fixture goes -------------------------------------------------------------

CASSETTE_SUFFIXES = (".yaml", ".yml", ".json")
_NOT_IN_NAME = re.compile(r"[^A-Za-z0-9._-]+")
_MAX_NAME = 255 - len(fx.SUFFIX)  # a file name's limit on the usual file systems


def layout_name(cassette: PurePath) -> str:
    """The fixture name of a cassette in pytest-recording's layout, from its path relative to the
    project (where pytest runs): `tests/models/cassettes/test_openai/test_chat[gpt-4o].yaml` becomes
    `tests.models.test_openai.test_chat-gpt-4o`. The `cassettes` directories are dropped, the
    directories kept (two test modules of one name in different directories stay apart), and what a
    fixture name cannot hold becomes `-`; a name too long for a file ends in a hash of the whole."""
    parts = [p for p in cassette.parts if p not in ("cassettes", ".", "")]
    if parts and parts[-1].lower().endswith(CASSETTE_SUFFIXES):
        parts[-1] = parts[-1].rsplit(".", 1)[0]
    whole = ".".join(parts)
    name = _NOT_IN_NAME.sub("-", whole).strip("-.")
    if len(name) > _MAX_NAME:
        digest = hashlib.sha256(whole.encode("utf-8")).hexdigest()[:16]
        name = f"{name[: _MAX_NAME - len(digest) - 1]}-{digest}"
    return name or "cassette"


# --- reading a cassette ---------------------------------------------------------------------------


def _yaml_problem(exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    where = f" (line {mark.line + 1}, column {mark.column + 1}: {problem})" if mark else f" ({problem})"
    return "not valid YAML" + where


def _parse(text: str, path: Path) -> Any:
    if text.lstrip().startswith("{"):  # vcrpy's JSON serializer; YAML would read most of it too
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            if path.suffix.lower() == ".json":
                where = f"line {exc.lineno}, column {exc.colno}: {exc.msg}"
                raise CassetteError(f"not valid JSON ({where})", path) from None
    try:
        return yaml.load(text, Loader=_Loader)  # a safe loader (C or Python)
    except yaml.YAMLError as exc:
        raise CassetteError(_yaml_problem(exc), path) from None


def read_cassette(path: str | Path) -> list[dict[str, Any]]:
    """The interactions of a vcrpy cassette; a one-line CassetteError if it is not one."""
    path = Path(path)
    text = read_text(path, CassetteError, "cassette")
    doc = _parse(text, path)
    if isinstance(doc, list) and doc and isinstance(doc[0], dict) and "request" in doc[0]:
        raise CassetteError(
            "a cassette in vcrpy's pre-1.0 format; migrate it with `python -m vcr.migration`", path
        )
    if not isinstance(doc, dict) or not isinstance(doc.get("interactions"), list):
        raise CassetteError("not a vcrpy cassette (no `interactions` list)", path)
    version = doc.get("version", CASSETTE_VERSION)
    if version != CASSETTE_VERSION:
        raise CassetteError(f"cassette format version {version!r} is not supported (vcrpy writes 1)", path)
    return doc["interactions"]


# --- one interaction -> one Exchange --------------------------------------------------------------


def _field(mapping: Any, key: str, what: str, kind: type | tuple[type, ...]) -> Any:
    if not isinstance(mapping, dict) or key not in mapping:
        raise ValueError(f"{what} has no `{key}`")
    value = mapping[key]
    if not isinstance(value, kind) or isinstance(value, bool):
        raise ValueError(f"{what} `{key}` is {type(value).__name__}, not {_kind_name(kind)}")
    return value


def _kind_name(kind: type | tuple[type, ...]) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join(k.__name__ for k in kinds)


def _as_bytes(value: Any, what: str) -> bytes:
    if value is None:
        return b""
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8")
    raise ValueError(f"{what} is {type(value).__name__}, not text")


def _json_bytes(parsed: Any) -> bytes:
    # pydantic-ai's serializer rebuilds bodies with json.dumps and set content-length to match.
    return json.dumps(parsed).encode("utf-8")


def _request_body(request: dict[str, Any]) -> bytes:
    if "parsed_body" in request:
        return _json_bytes(request["parsed_body"])
    body = request.get("body")
    if isinstance(body, dict) and "string" in body:  # some recorders store requests like responses
        body = body["string"]
    return _unbase64(_as_bytes(body, "request body"))


_BASE64 = re.compile(rb"(?:[A-Za-z0-9+/]{4})+(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?")


def _unbase64(body: bytes) -> bytes:
    """crewAI's cassettes store a request body that is not UTF-8 (an upload) as base64 text: the
    multipart bytes the SDK sent, decoded back, so the upload matches by its parts."""
    if body[:1] in (b"{", b"[", b"-") or not _BASE64.fullmatch(body):
        return body
    decoded = base64.b64decode(body)
    return decoded if decoded.startswith(b"--") else body


def _headers(raw: Any) -> list[tuple[str, str]]:
    if raw is None:
        return []
    if not isinstance(raw, dict):
        raise ValueError("response `headers` is not a mapping")
    pairs: list[tuple[str, str]] = []
    for name, values in raw.items():
        for value in values if isinstance(values, list) else [values]:
            pairs.append((str(name), "" if value is None else str(value)))
    return pairs


def _header(pairs: Iterable[tuple[str, str]], name: str) -> str:
    return ", ".join(v for k, v in pairs if k.lower() == name)


def _status(response: dict[str, Any]) -> int:
    if "status_code" in response and "status" not in response:  # vcrpy's older httpx form
        code = _field(response, "status_code", "response", int)
    else:
        code = _field(_field(response, "status", "response", dict), "code", "response `status`", int)
    if not 100 <= code <= 599:
        raise ValueError(f"response status {code} is not an HTTP status")
    return code


def _response_raw(response: dict[str, Any]) -> bytes:
    if "parsed_body" in response:
        return _json_bytes(response["parsed_body"])
    if "content" in response and "body" not in response:  # vcrpy's older httpx form
        return _as_bytes(response["content"], "response `content`")
    body = response.get("body")
    if body is None:
        return b""
    if isinstance(body, dict):
        return _as_bytes(body.get("string"), "response body `string`")
    return _as_bytes(body, "response body")


def _is_text(raw: bytes) -> bool:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _inflate(raw: bytes) -> bytes:
    try:
        return zlib.decompress(raw)
    except zlib.error:  # servers send raw deflate as often as the zlib-wrapped form
        return zlib.decompress(raw, -zlib.MAX_WBITS)


def _brotli(raw: bytes) -> bytes:
    try:
        import brotli  # type: ignore[import-not-found]
    except ImportError:
        try:
            import brotlicffi as brotli  # type: ignore[import-not-found,no-redef]
        except ImportError:
            raise MissingCodec("a brotli (br) body; install the `brotli` package to import it") from None
    return brotli.decompress(raw)


def _zstd(raw: bytes) -> bytes:
    try:
        import zstandard  # type: ignore[import-not-found]
    except ImportError:
        raise MissingCodec("a zstd body; install the `zstandard` package to import it") from None
    return zstandard.ZstdDecompressor().decompressobj().decompress(raw)


DECODERS: dict[str, Callable[[bytes], bytes]] = {
    "gzip": gzip.decompress,
    "x-gzip": gzip.decompress,
    "deflate": _inflate,
    "br": _brotli,
    "zstd": _zstd,
}


def decode_body(raw: bytes, content_encoding: str) -> bytes:
    """Undo Content-Encoding (applied in order, so undone in reverse).

    A cassette may keep the header but hold the body already decoded (vcrpy's older httpx form
    stored the decoded content); such a text body is taken as it is.
    """
    codings = [c.strip().lower() for c in content_encoding.split(",") if c.strip()]
    for coding in reversed(codings):
        if coding == "identity" or not raw:
            continue
        decoder = DECODERS.get(coding)
        if decoder is None:
            raise ValueError(f"response Content-Encoding {coding!r} is not supported")
        if coding in ("gzip", "x-gzip") and not raw.startswith(b"\x1f\x8b") and _is_text(raw):
            continue
        try:
            raw = decoder(raw)
        except MissingCodec:
            raise
        except Exception:  # each codec has its own error type (OSError, EOFError, zlib.error, ...)
            if _is_text(raw):
                continue
            raise ValueError(f"response body says Content-Encoding: {coding} but does not decode") from None
    return raw


_LOOPBACK = re.compile(r"localhost|127(?:\.[0-9]+){3}|\[?::1\]?", re.IGNORECASE)


def provider_of(host: str, path: str) -> str | None:
    """The provider a request went to: by host, for a provider API host the guard blocks (the registry
    names it: not cdn.openai.com or storage.googleapis.com, where a test fetches a file); by path for a
    proxy or gateway on loopback; None for any other host, which is not a provider attest replays."""
    if is_blocked_host(host):
        named = provider_of_host(host)
        # google-genai can send Vertex AI's paths to the Gemini host: the path tells them apart.
        return route(named, path)[0] if named is not None else None
    if _LOOPBACK.fullmatch(host):
        return provider_for(path)
    return None


_SSE_START = re.compile(rb"\s*(?:event|data|id|retry)?:")


def _guess_content_type(request_body: bytes, body: bytes) -> str:
    """The content type of a response recorded without headers: SSE when the request asked for a
    stream and the body is a stream of events, else JSON (what the providers answer)."""
    if re.search(rb'"stream"\s*:\s*true', request_body) and _SSE_START.match(body):
        return "text/event-stream"
    return "application/json"


def exchange_of(interaction: Any) -> Entry:
    """Convert one cassette interaction; ValueError names the missing or malformed field."""
    request = _field(interaction, "request", "interaction", dict)
    response = _field(interaction, "response", "interaction", dict)
    method = _field(request, "method", "request", str).upper()
    uri = _field(request, "uri", "request", str)
    parts = urlsplit(uri)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("request `uri` is not an http(s) URL")  # not echoed: a query may hold a key
    headers = _headers(response.get("headers"))
    body = decode_body(_response_raw(response), _header(headers, "content-encoding"))
    request_body = _request_body(request)
    if not _header(headers, "content-type"):
        headers.append(("content-type", _guess_content_type(request_body, body)))
    provider = provider_of(parts.hostname, unquote(parts.path) or "/")
    exchange = Exchange(
        method=method,
        # A model call's path as the proxy sees it, unescaped (boto3 escapes the `:` of a model id).
        path=(unquote(parts.path) if provider is not None else parts.path) or "/",
        query=parts.query,
        request_body=request_body,
        status=_status(response),
        response_headers=headers,
        response_body=body,
    )
    return Entry(exchange, provider, parts.hostname, uri)


def entries_of(path: str | Path) -> list[Entry]:
    """Every interaction of one cassette, converted; errors name the file and the interaction."""
    entries = []
    for number, interaction in enumerate(read_cassette(path), start=1):
        try:
            entries.append(exchange_of(interaction))
        except ValueError as exc:
            raise CassetteError(f"interaction {number}: {exc}", path) from None
    return entries


# --- the import -----------------------------------------------------------------------------------


def build_fixture(
    name: str,
    cassettes: Sequence[str | Path],
    entries: Sequence[Entry],
    secrets: Secrets,
    root: Path,
    progress: Progress | None = None,
) -> fx.Fixture:
    """One fixture from the cassettes' `entries`, in order, through one Templater so ids stay
    consistent; entries with hosts that are not providers go to the plain HTTP channel (see `plain`).
    `source.imported_from` names the cassettes relative to `root` (the repository)."""
    kept = [(entry.exchange, entry.provider) for entry in entries if entry.provider is not None]
    plain = [_plain(entry, secrets) for entry in entries if entry.provider is None]
    templater = Templater(secrets, verbatim=True)  # the recorded ids, as the tests assert them
    interactions = []
    for done, (exchange, provider) in enumerate(kept, start=1):
        interactions.append(templater.record(exchange, provider))
        if progress is not None:
            progress(done, len(kept))
    shown = ", ".join(_provenance(Path(c), root) for c in cassettes)
    source = {**fx.new_source([]), "imported_from": shown}
    return fx.new_fixture(name, source, interactions, plain=[item for item in plain if item is not None])


def _provenance(cassette: Path, root: Path) -> str:
    """A cassette as `source.imported_from` names it: relative to the repository (`root`), or, when it
    lies outside, by its directory and file name: never a machine's absolute path or a `../` chain."""
    shown = relative_to_root(cassette, root)
    return (
        Path(cassette.resolve().parent.name, cassette.name).as_posix() if shown.startswith("../") else shown
    )


def _plain(entry: Entry, secrets: Secrets) -> dict | None:
    ex = entry.exchange
    return plain_http.interaction(
        ex.method, entry.url, ex.status, ex.response_headers, ex.response_body, secrets
    )


def plain_hosts(entries: Sequence[Entry]) -> dict[str, int]:
    """Interactions with hosts that are not model providers, by host: kept as plain HTTP."""
    return dict(sorted(Counter(e.host for e in entries if e.provider is None).items()))


def import_cassettes(
    cassettes: Sequence[str | Path],
    name: str,
    fixtures_dir: str | Path | None = None,
    *,
    force: bool = False,
    secrets: Secrets | None = None,
    progress: Progress | None = None,
) -> Imported:
    """Import vcrpy cassettes into `<fixtures_dir>/<name>.attest.json` (scanned, atomic, 0600)."""
    if not cassettes:
        raise UsageError("name at least one cassette to import")
    target = fx.fixture_path(name, fixtures_dir)
    if target.exists() and not force:
        raise UsageError("fixture exists; pass --force to overwrite it", target)
    secrets = secrets if secrets is not None else environment_secrets()
    entries = [entry for cassette in cassettes for entry in entries_of(cassette)]
    doc = build_fixture(name, cassettes, entries, secrets, fixtures_root(target.parent), progress)
    count = len(fx.model_interactions(doc))
    others = plain_hosts(entries)
    if count == 0 and not others:
        raise UsageError("the cassettes hold no interactions; nothing to import", cassettes[0])
    fx.write_fixture(target, doc, secrets)
    return Imported(target, count, len(cassettes), others)


# --- a whole tree of cassettes --------------------------------------------------------------------

# Called before each cassette of a tree with (done, total, the cassette as shown).
TreeProgress = Callable[[int, int, str], None]


@dataclass(frozen=True)
class TreeRow:
    """One cassette of a tree: imported (as `imported`) or skipped (and `skipped` says why)."""

    cassette: str
    name: str | None
    imported: Imported | None = None
    skipped: str | None = None


def cassettes_under(tree: Path) -> list[Path]:
    """Every YAML or JSON file in a `cassettes` directory at, above or under `tree` (pytest-recording's
    layout: `tests/cassettes/test_chat/test_hello.yaml`; `tree` may be any of those directories)."""
    inside = "cassettes" in tree.resolve().parts
    found = []
    for path in sorted(tree.rglob("*")):
        folders = path.relative_to(tree).parts[:-1]
        if path.suffix.lower() in CASSETTE_SUFFIXES and (inside or "cassettes" in folders) and path.is_file():
            found.append(path)
    return found


def import_tree(
    tree: str | Path,
    fixtures_dir: str | Path | None = None,
    *,
    base: Path | None = None,
    force: bool = False,
    secrets: Secrets | None = None,
    progress: TreeProgress | None = None,
) -> list[TreeRow]:
    """Import each cassette under `tree` into its own fixture, named by its path relative to `base`
    (the directory pytest runs in, by default the current one) as the vcr marker looks it up
    (`layout_name`). A cassette that cannot be imported is skipped, with why, and the rest go on."""
    tree = Path(tree)
    if not tree.is_dir():
        raise UsageError("not a directory of cassettes", tree)
    cassettes = cassettes_under(tree)
    if not cassettes:
        raise UsageError("no cassettes (YAML or JSON files in a `cassettes` directory) under it", tree)
    base = base or Path.cwd()
    secrets = secrets if secrets is not None else environment_secrets()
    taken: dict[str, str] = {}
    rows = []
    for done, cassette in enumerate(cassettes):
        shown = relative_to_root(cassette, base)
        if progress is not None:
            progress(done, len(cassettes), shown)
        rows.append(_import_one(cassette, shown, fixtures_dir, force, secrets, taken))
    return rows


def _import_one(
    cassette: Path, shown: str, fixtures_dir: str | Path | None, force: bool, secrets: Secrets, taken: dict
) -> TreeRow:
    if shown.startswith("../"):
        return TreeRow(
            shown, None, skipped="outside the directory the import runs in (run it where pytest runs)"
        )
    name = layout_name(PurePath(shown))
    if name in taken:
        return TreeRow(shown, name, skipped=f"the same fixture name as {taken[name]}")
    taken[name] = shown
    try:
        imported = import_cassettes([cassette], name, fixtures_dir, force=force, secrets=secrets)
    except AttestError as exc:
        return TreeRow(shown, name, skipped=str(exc).removeprefix(f"{exc.path}: "))
    return TreeRow(shown, name, imported=imported)
