"""Fixtures in an S3-compatible object store: ctxmesh runs downloaded as fixtures, and attest fixtures
pinned by digest in `fixtures.lock` with their bytes in the store.

`client` is the only module that talks to the store (minio-py); `lock` reads and writes the lock file
and imports nothing that does I/O, so `attest select` and the comment's fixture table can read it
without the store's client.
"""
