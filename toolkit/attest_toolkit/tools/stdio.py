"""`attest tool stdio NAME -- SERVER_CMD`: a stdio MCP server, recorded, replayed, or just run.

The agent's MCP configuration runs this instead of the server. Which it does depends on the variables
`attest capture` and `attest replay` set:
- ATTEST_TOOL_REPLAY_URL: answer each message from the fixture through the engine; start nothing.
- ATTEST_TOOL_CAPTURE_URL: start the server, relay each line both ways, and post each request with
  its reply to the recording proxy before the reply reaches the agent (so the order is the agent's).
- neither: become the server (exec), unchanged.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from typing import IO, Any

from ..errors import AttestError
from .declare import CAPTURE_URL_VAR, REPLAY_URL_VAR
from .mcp import error_reply


def run(name: str, command: list[str]) -> int:
    replay_url, capture_url = os.environ.get(REPLAY_URL_VAR), os.environ.get(CAPTURE_URL_VAR)
    if replay_url:
        return replay(f"{replay_url}/{name}", sys.stdin.buffer, sys.stdout.buffer)
    if capture_url:
        return capture(f"{capture_url}/{name}", command, sys.stdin.buffer, sys.stdout.buffer)
    try:
        os.execvp(command[0], command)
    except OSError as exc:
        raise AttestError(f"cannot run {command[0]!r}: {exc.strerror or exc}") from None
    return 0  # not reached: exec replaced this process


def _post(url: str, body: bytes) -> tuple[int, bytes]:
    request = urllib.request.Request(url, data=body, headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def _message(line: bytes) -> Any:
    try:
        return json.loads(line)
    except ValueError:
        return None


def _write(out: IO[bytes], body: bytes) -> None:
    out.write(body.rstrip(b"\n") + b"\n")
    out.flush()


# --- replay ----------------------------------------------------------------------------------------


def replay(url: str, stdin: IO[bytes], stdout: IO[bytes]) -> int:
    for line in stdin:
        if not line.strip():
            continue
        try:
            status, body = _post(url, line)
        except OSError as exc:  # the engine is gone: answer so the agent does not hang
            message = _message(line)
            if isinstance(message, dict) and message.get("id") is not None:
                reply = error_reply(message["id"], f"attest replay: the replay engine is unreachable ({exc})")
                _write(stdout, json.dumps(reply).encode())
            continue
        if status == 200 and body:
            _write(stdout, body)
    return 0


# --- capture ---------------------------------------------------------------------------------------


class _Relay:
    def __init__(self, url: str, command: list[str]) -> None:
        self.url = url
        self.command = command
        self.pending: dict[str, Any] = {}
        self.lock = threading.Lock()

    def record(self, request: Any, response: Any) -> None:
        body = json.dumps({"request": request, "response": response, "command": self.command}).encode()
        _post(self.url, body)

    def to_server(self, stdin: IO[bytes], server: IO[bytes]) -> None:
        try:
            for line in stdin:
                message = _message(line)
                if isinstance(message, dict) and "method" in message:
                    if message.get("id") is None:
                        self.record(message, None)
                    else:
                        with self.lock:
                            self.pending[json.dumps(message["id"])] = message
                server.write(line)
                server.flush()
        except (BrokenPipeError, ValueError):
            pass  # the server exited
        finally:
            with contextlib.suppress(BrokenPipeError):
                server.close()

    def to_agent(self, server: IO[bytes], stdout: IO[bytes]) -> None:
        for line in server:
            message = _message(line)
            if isinstance(message, dict) and "method" not in message and "id" in message:
                with self.lock:
                    request = self.pending.pop(json.dumps(message["id"]), None)
                if request is not None:
                    self.record(request, message)
            stdout.write(line)
            stdout.flush()


def capture(url: str, command: list[str], stdin: IO[bytes], stdout: IO[bytes]) -> int:
    try:
        proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    except OSError as exc:
        raise AttestError(f"cannot run {command[0]!r}: {exc.strerror or exc}") from None
    assert proc.stdin is not None and proc.stdout is not None
    relay = _Relay(url, command)
    feeder = threading.Thread(target=relay.to_server, args=(stdin, proc.stdin), daemon=True)
    feeder.start()
    relay.to_agent(proc.stdout, stdout)
    return proc.wait()
