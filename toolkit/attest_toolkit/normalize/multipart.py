"""multipart/form-data request bodies (OpenAI Files, Anthropic Files): parsed into their parts.

Each upload carries a random boundary, so its bytes never match a recording; its parts do. A part is
kept as its field name, file name and content type, with the value of a plain text field, or a hash
and the size of a file's content, so a fixture stays readable and never stores the uploaded file.
The boundary is read from the body's first line, so a body recorded without its headers parses too.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

_BOUNDARY = re.compile(rb"--([0-9A-Za-z'()+_,./:=?-]{1,70})\r\n")
_MAX_FIELD = 4096  # a plain field longer than this is stored by its hash, like a file


def boundary_of(raw: bytes) -> bytes | None:
    """The boundary of a multipart body: its first line, if the body also ends with it."""
    m = _BOUNDARY.match(raw)
    if m is None or b"\r\n--" + m.group(1) + b"--" not in raw[-len(m.group(1)) - 8 :]:
        return None
    return m.group(1)


def _part(part: Any) -> dict[str, Any]:
    content: bytes = part.get_payload(decode=True) or b""
    out: dict[str, Any] = {"name": part.get_param("name", header="content-disposition")}
    filename = part.get_filename()
    if filename is not None:
        out["filename"] = filename
    if part.get("content-type"):
        out["content_type"] = part.get_content_type()
    if filename is None and len(content) <= _MAX_FIELD:
        try:
            out["value"] = content.decode("utf-8")
            return out
        except UnicodeDecodeError:
            pass
    out["sha256"] = hashlib.sha256(content).hexdigest()
    out["size"] = len(content)
    return out


def parse_multipart(raw: bytes) -> list[dict[str, Any]] | None:
    """The parts of a multipart/form-data body, in order, or None if `raw` is not one."""
    boundary = boundary_of(raw)
    if boundary is None:
        return None
    # Here, not at the top: the email package is a tenth of the engine's start, and only uploads need it.
    import email.parser
    import email.policy

    head = b'Content-Type: multipart/form-data; boundary="' + boundary + b'"\r\n\r\n'
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(head + raw)
    if not message.is_multipart():
        return None
    return [_part(part) for part in message.iter_parts()]
