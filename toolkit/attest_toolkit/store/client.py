"""The object store as ctxmesh configures it, and every request attest makes to it (minio-py).

ctxmesh's recorders and its `download-fixture` read the store from `OBJECT_STORE_ADDR` (host:port),
`OBJECT_STORE_ACCESS_KEY` and `OBJECT_STORE_SECRET_KEY`; attest reads the same variables, plus
`OBJECT_STORE_BUCKET` (default ctxmesh's bucket) and `OBJECT_STORE_SECURE` (https). Every store
failure becomes one line that names the store and the problem, never a credential.
"""

from __future__ import annotations

import io
import os
import re
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TypeVar

import urllib3
from minio import Minio
from minio.error import MinioException, S3Error

from ..errors import AttestError, UsageError
from ..secrets import Secrets

DEFAULT_BUCKET = "agent-engine-knowledge"  # ctxmesh's fixture bucket
ADDR, ACCESS, SECRET = "OBJECT_STORE_ADDR", "OBJECT_STORE_ACCESS_KEY", "OBJECT_STORE_SECRET_KEY"
BUCKET, SECURE, REGION = "OBJECT_STORE_BUCKET", "OBJECT_STORE_SECURE", "OBJECT_STORE_REGION"
_HOST_PORT = re.compile(r"^[A-Za-z0-9.\-]+:[0-9]{1,5}$|^\[[0-9A-Fa-f:.]+\]:[0-9]{1,5}$")
_TRUE, _FALSE = ("1", "true", "yes", "on"), ("", "0", "false", "no", "off")
# Store errors in our words: the server's own message may quote request details.
_CODES = {
    "InvalidAccessKeyId": "the store does not know OBJECT_STORE_ACCESS_KEY",
    "SignatureDoesNotMatch": "the store refused the signature: check OBJECT_STORE_SECRET_KEY",
    "AccessDenied": "access denied: the keys may not read or write this bucket",
    "NoSuchBucket": "no such bucket",
    "InvalidBucketName": "not a valid bucket name",
}


class StoreError(AttestError):
    """The store could not be reached or refused, or what it holds cannot be used (nothing written)."""

    exit_code = 2


class StoreUsageError(AttestError):
    """The store is not configured, or the command line cannot be used as given."""

    exit_code = 1


T = TypeVar("T")


def usage(call: Callable[..., T], *args: object) -> T:
    """`call`, with its usage problems (a bad name, a malformed lock) exiting 1 like the store's."""
    try:
        return call(*args)
    except UsageError as exc:
        raise StoreUsageError(str(exc)) from None


def stored(call: Callable[..., T], *args: object) -> T:
    """`call`, with any other problem (an invalid fixture, a credential, a write) exiting 2."""
    try:
        return call(*args)
    except (StoreError, StoreUsageError):
        raise
    except AttestError as exc:
        raise StoreError(str(exc)) from None


@dataclass(frozen=True)
class StoreConfig:
    addr: str
    access_key: str
    secret_key: str = ""
    bucket: str = DEFAULT_BUCKET
    secure: bool = False
    region: str | None = None

    @property
    def where(self) -> str:
        return f"{'https' if self.secure else 'http'}://{self.addr}/{self.bucket}"


def configured(env: Mapping[str, str] | None = None) -> bool:
    return bool((os.environ if env is None else env).get(ADDR, "").strip())


def config_from_env(env: Mapping[str, str] | None = None) -> StoreConfig:
    """The store from ctxmesh's variables, or a one-line usage error (exit 1) saying what is missing."""
    env = os.environ if env is None else env
    addr = env.get(ADDR, "").strip()
    if not addr:
        raise StoreUsageError(f"no object store configured: set {ADDR} (host:port), {ACCESS} and {SECRET}")
    if not _HOST_PORT.match(addr):
        raise StoreUsageError(
            f"{ADDR} must be host:port (e.g. minio.internal:9000), not a URL or a bare host"
        )
    secure = env.get(SECURE, "").strip().lower()
    if secure not in _TRUE + _FALSE:
        raise StoreUsageError(f"{SECURE} must be true or false")
    bucket = env.get(BUCKET, "").strip() or DEFAULT_BUCKET
    return StoreConfig(
        addr, env.get(ACCESS, ""), env.get(SECRET, ""), bucket, secure in _TRUE, env.get(REGION) or None
    )


class ObjectStore:
    """One bucket of an S3-compatible store. Every method raises StoreError on one line."""

    def __init__(self, config: StoreConfig) -> None:
        self.config = config
        # Few, quick retries: a wrong address must fail in seconds, not after minutes of backoff.
        http = urllib3.PoolManager(
            timeout=urllib3.Timeout(connect=10, read=120),
            retries=urllib3.Retry(total=2, backoff_factor=0.2, status_forcelist=(500, 502, 503, 504)),
        )
        self._client = Minio(
            config.addr,
            access_key=config.access_key or None,
            secret_key=config.secret_key or None,
            secure=config.secure,
            region=config.region,
            http_client=http,
        )
        self._secrets = Secrets.of(v for v in (config.access_key, config.secret_key) if v)

    def keys(self, prefix: str) -> list[str]:
        """Every key under `prefix`, recursively, sorted."""
        with self._errors(prefix):
            return sorted(o.object_name for o in self._client.list_objects(self.config.bucket, prefix, True))

    def get(self, key: str, limit: int) -> bytes:
        """An object's bytes, refused past `limit` bytes (read no further than that)."""
        with self._errors(key):
            response = self._client.get_object(self.config.bucket, key)
            try:
                data = response.read(limit + 1)
            finally:
                response.close()
                response.release_conn()
        if len(data) > limit:
            raise StoreError(f"larger than the {limit // (1024 * 1024)} MiB a fixture may be", self.url(key))
        return data

    def exists(self, key: str) -> bool:
        try:
            with self._errors(key):
                self._client.stat_object(self.config.bucket, key)
        except _Missing:
            return False
        return True

    def put(self, key: str, data: bytes, content_type: str = "application/json") -> None:
        with self._errors(key):
            self._client.put_object(self.config.bucket, key, io.BytesIO(data), len(data), content_type)

    def url(self, key: str) -> str:
        return f"{self.config.where}/{key}"

    @contextmanager
    def _errors(self, key: str) -> Iterator[None]:
        """The client's exceptions as StoreError lines naming the store and the object."""
        where = self.url(key)
        try:
            yield
        except S3Error as exc:
            if exc.code in ("NoSuchKey", "NoSuchObject"):
                raise _Missing("no such object", where) from None
            said = _CODES.get(exc.code or "") or f"{exc.code}: {exc.message}"
            raise StoreError(self._secrets.redact(said), where) from None
        except (MinioException, urllib3.exceptions.HTTPError, OSError, ValueError) as exc:
            said = self._secrets.redact(_transport_words(exc))
            raise StoreError(f"cannot reach the object store ({said})", where) from None


class _Missing(StoreError):
    """An object that is not there (caught where a caller asked whether it exists)."""


def _transport_words(exc: BaseException) -> str:
    reason = getattr(exc, "reason", None) or exc
    text = str(reason)
    if "Connection refused" in text or "Errno 111" in text:
        return "connection refused"
    if "timed out" in text.lower():
        return "timed out"
    if "Name or service not known" in text or "nodename nor servname" in text or "Errno -2" in text:
        return "cannot resolve the host"
    return " ".join(text.split())[:200]
