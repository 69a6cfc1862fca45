"""The request-body schemas of the GitHub REST operations attest uses, from GitHub's OpenAPI description.

`python tests/github_openapi.py [DIR]` fetches the `@octokit/openapi` npm package (GitHub's published
OpenAPI description of api.github.com) into DIR (default `.venv/github-openapi`) with `npm pack`, and
extracts from it, into `DIR/requests.json`, the request-body schema of each operation in OPERATIONS.
The multi-megabyte description is never copied into the repository; the Makefile runs this script
before the tests, and tests/fake_github.py validates every request body it receives against the result.

Limits GitHub documents only in prose are made machine-checkable on the way, from the schema's own
descriptions: "The maximum size is N KB" becomes `x-max-bytes: N*1024` and "The maximum size is N
characters" becomes `maxLength: N`; and every `maxLength` of the check run operations also gets
`x-max-bytes`, because GitHub counts those in UTF-8 bytes (a check run summary of 65,535 characters
but more bytes is refused). tests/fake_github.py checks `x-max-bytes` on top of JSON Schema.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Any

PACKAGE = "@octokit/openapi@23.0.2"
SPEC_MEMBER = "package/generated/api.github.com.deref.json"  # every $ref resolved in place
OPERATIONS = (
    "issues/create-comment",
    "issues/update-comment",
    "checks/create",
    "checks/update",
)
DEFAULT_DIR = Path(__file__).resolve().parent.parent / ".venv" / "github-openapi"
_KB = re.compile(r"maximum size is (\d+) KB", re.IGNORECASE)
_CHARS = re.compile(r"maximum size is (\d+) characters", re.IGNORECASE)


# Resolved once, on import, before any test changes the working directory.
_SCHEMAS = (Path(os.environ.get("ATTEST_GITHUB_OPENAPI_DIR") or DEFAULT_DIR) / "requests.json").resolve()


def schemas_path() -> Path:
    return _SCHEMAS


def load() -> dict[str, dict[str, Any]]:
    """{operationId: {"method", "path", "schema"}}; a clear error when the extract was never made."""
    path = schemas_path()
    if not path.is_file():
        raise RuntimeError(
            f"{path} is missing: run `python tests/github_openapi.py` (make test does) to fetch {PACKAGE}"
        )
    return json.loads(path.read_text(encoding="utf-8"))


def _with_limits(schema: Any, bytes_for_max_length: bool) -> Any:
    """The schema with GitHub's prose limits as keywords, recursively."""
    if isinstance(schema, list):
        return [_with_limits(s, bytes_for_max_length) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: _with_limits(v, bytes_for_max_length) for k, v in schema.items()}
    description = schema.get("description") if isinstance(schema.get("description"), str) else ""
    if schema.get("type") == "string":
        if kb := _KB.search(description):
            out["x-max-bytes"] = int(kb.group(1)) * 1024
        if chars := _CHARS.search(description):
            out.setdefault("maxLength", int(chars.group(1)))
        elif "maxLength" in schema and bytes_for_max_length:
            out["x-max-bytes"] = schema["maxLength"]
    return out


def extract(spec: dict[str, Any]) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    for path, item in spec["paths"].items():
        for method, operation in item.items():
            if isinstance(operation, dict) and operation.get("operationId") in OPERATIONS:
                body = operation["requestBody"]["content"]["application/json"]["schema"]
                found[operation["operationId"]] = {
                    "method": method.upper(),
                    "path": path,
                    "schema": _with_limits(body, operation["operationId"].startswith("checks/")),
                }
    missing = sorted(set(OPERATIONS) - set(found))
    if missing:
        raise SystemExit(f"{PACKAGE} has no operation {', '.join(missing)}")
    return found


def fetch(directory: Path) -> Path:
    """The package tarball in `directory`, packed by npm once."""
    directory.mkdir(parents=True, exist_ok=True)
    existing = sorted(directory.glob("octokit-openapi-*.tgz"))
    if existing:
        return existing[-1]
    with tempfile.TemporaryDirectory(dir=directory) as tmp:
        done = subprocess.run(
            ["npm", "pack", "--silent", PACKAGE], cwd=tmp, capture_output=True, text=True, check=False
        )
        if done.returncode != 0:
            raise SystemExit(f"npm pack {PACKAGE} failed: {done.stderr.strip()}")
        [tarball] = Path(tmp).glob("*.tgz")
        return tarball.rename(directory / tarball.name)


def main(argv: list[str]) -> int:
    directory = Path(argv[0]) if argv else schemas_path().parent
    target = directory / "requests.json"
    if target.is_file():
        return 0
    with tarfile.open(fetch(directory)) as archive:
        member = archive.extractfile(SPEC_MEMBER)
        assert member is not None, SPEC_MEMBER
        spec = json.load(member)
    target.write_text(json.dumps(extract(spec), indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"{target}: request schemas of {len(OPERATIONS)} operations from {PACKAGE}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
