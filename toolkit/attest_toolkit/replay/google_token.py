"""Replay with no Google credentials at all, not even application default credentials.

google-genai asks for an OAuth token before every Vertex AI call, whatever its base URL. When the user
has no credentials configured, a replay session hands the command a credentials file
(GOOGLE_APPLICATION_CREDENTIALS) whose token endpoint is the engine's own loopback route, which answers
with a placeholder token. The file is of google-auth's `external_account_authorized_user` type, the
one whose token endpoint the file names (an `authorized_user` file's is always Google's). The token
goes nowhere: a Vertex AI call is only ever answered from a recording. Credentials the user did
configure are left alone.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path

from ..fixtures.document import atomic_write

CREDENTIALS_VAR = "GOOGLE_APPLICATION_CREDENTIALS"
_SEGMENT = "google-token"
ROUTE = "/r/{sid}/" + _SEGMENT
TOKEN = "attest-replay-no-token"
_PLACEHOLDER = "attest-replay"  # the audience, client id, secret and refresh token: google-auth wants all


def configured(env: Mapping[str, str]) -> bool:
    """True when google-auth would find credentials of the user's: the variable, or gcloud's file."""
    if env.get(CREDENTIALS_VAR, "").strip():
        return True
    config = env.get("CLOUDSDK_CONFIG", "").strip()
    if config:
        folder = Path(config)
    elif os.name == "nt":
        folder = Path(env.get("APPDATA", "")) / "gcloud"
    else:
        folder = Path(env.get("HOME") or Path.home()) / ".config" / "gcloud"
    return (folder / "application_default_credentials.json").is_file()


class CredentialFiles:
    """One credentials file per session, in a private folder removed when the engine stops."""

    def __init__(self) -> None:
        self._folder: Path | None = None

    def write(self, sid: str, prefix: str) -> str:
        """The file for session `sid`, reached under `prefix` (`<engine>/r/<sid>`)."""
        if self._folder is None:
            import tempfile  # only a Vertex AI session's engine writes token files

            self._folder = Path(tempfile.mkdtemp(prefix="attest-google-"))
        path = self._folder / f"{sid}.json"
        info = {
            "type": "external_account_authorized_user",
            "audience": _PLACEHOLDER,
            "client_id": _PLACEHOLDER,
            "client_secret": _PLACEHOLDER,
            "refresh_token": _PLACEHOLDER,
            "token_url": f"{prefix}/{_SEGMENT}",
        }
        atomic_write(path, json.dumps(info))
        return str(path)

    def remove(self, sid: str) -> None:
        if self._folder is not None:
            (self._folder / f"{sid}.json").unlink(missing_ok=True)

    def close(self) -> None:
        if self._folder is not None:
            import shutil

            shutil.rmtree(self._folder, ignore_errors=True)
            self._folder = None
