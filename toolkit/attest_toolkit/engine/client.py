"""A client for an engine in another process (`attest-engine serve`), used by test-runner helpers.

One engine process serves a whole test session: each test opens and closes a session with two
loopback HTTP calls, so a test pays milliseconds, not a process start. The engine exits when the
process that started it closes its stdin, so it never outlives the test run.
"""

from __future__ import annotations

import http.client
import json
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ..errors import AttestError
from .server import CONTROL_HEADER


class EngineProcess:
    def __init__(self, engine_path: str | None = None, env: dict[str, str] | None = None) -> None:
        argv = (
            [engine_path, "serve"]
            if engine_path
            else [sys.executable, "-m", "attest_toolkit.cli.engine", "serve"]
        )
        try:
            self.proc = subprocess.Popen(
                argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, text=True, bufsize=1
            )
        except OSError as exc:
            raise AttestError(f"cannot start the replay engine: {exc.strerror}", argv[0]) from None
        # The ready line is read on first use, so the engine starts while the runner collects tests.
        self._what = argv[0]
        self.url = self.token = ""
        self._conn: http.client.HTTPConnection | None = None
        self._lock = threading.Lock()

    def _ensure_ready(self) -> None:
        if self.url:
            return
        ready = self._read_ready(self._what)
        self.url, self.token = ready["url"], ready["token"]
        parts = urlsplit(self.url)
        self._host, self._port = parts.hostname or "127.0.0.1", parts.port or 80

    def _read_ready(self, what: str) -> dict[str, Any]:
        line = self.proc.stdout.readline() if self.proc.stdout else ""
        try:
            return json.loads(line)["ready"]
        except (ValueError, KeyError, TypeError):
            self.proc.kill()
            raise AttestError("the replay engine did not start (no ready line)", what) from None

    def _call(self, method: str, path: str, body: dict | None = None) -> dict[str, Any]:
        payload = json.dumps(body).encode() if body is not None else None
        with self._lock:
            self._ensure_ready()
            headers = {CONTROL_HEADER: self.token, "content-type": "application/json"}
            for attempt in (1, 2):  # a kept-alive connection the server closed is retried once
                if self._conn is None:
                    self._conn = http.client.HTTPConnection(self._host, self._port, timeout=60)
                try:
                    self._conn.request(method, path, body=payload, headers=headers)
                    response = self._conn.getresponse()
                    data = json.loads(response.read() or b"{}")
                    break
                except (ConnectionError, http.client.HTTPException):
                    self._conn.close()
                    self._conn = None
                    if attempt == 2:
                        raise AttestError("lost the connection to the replay engine") from None
        if "error" in data:
            raise AttestError(data["error"])
        return data

    def open_session(
        self, fixtures: list[str | Path], mode: str, no_live: bool
    ) -> tuple[str, dict[str, str]]:
        data = self._call(
            "POST",
            "/_attest/sessions",
            {"fixtures": [str(f) for f in fixtures], "mode": mode, "no_live": no_live},
        )
        return data["id"], data["env"]

    def close_session(self, sid: str) -> dict[str, Any]:
        return self._call("DELETE", f"/_attest/sessions/{sid}")["summary"]

    def stop(self) -> None:
        if self._conn is not None:
            self._conn.close()
        if self.proc.stdin:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self.proc.stdout:
            self.proc.stdout.close()
