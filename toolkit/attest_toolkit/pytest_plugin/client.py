"""A client for an engine in another process (`attest-engine serve`), used by test-runner helpers.

One engine process serves a whole test session: each test opens and closes a session with one JSON
line each way on the engine's own pipes, so a test pays a fraction of a millisecond, not a process
start. The engine exits when the process that started it closes its stdin, so it never outlives the
test run.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..credentials.scan import environment_secrets
from ..errors import AttestError
from ..replay.lane import FD_VAR, Lane


class EngineProcess:
    def __init__(self, engine_path: str | None = None, env: dict[str, str] | None = None) -> None:
        argv = (
            [engine_path, "serve"]
            if engine_path
            else [sys.executable, "-m", "attest_toolkit.replay", "serve"]
        )
        # The engine reads `.env` where it starts, which is here and now: the lane keys with the same.
        self.lane, theirs = Lane.pair(environment_secrets())
        env = {**(os.environ if env is None else env), FD_VAR: str(theirs.fileno())}
        try:
            self.proc = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                env=env,
                text=True,
                bufsize=1,
                pass_fds=(theirs.fileno(),),
            )
        except OSError as exc:
            self.lane.close()
            raise AttestError(f"cannot start the replay engine: {exc.strerror}", argv[0]) from None
        finally:
            theirs.close()  # the engine holds its end now; ours must not keep it open
        # The ready line is read on first use, so the engine starts while the runner collects tests.
        self._what = argv[0]
        self.url = ""
        self._lock = threading.Lock()

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def _died(self, doing: str) -> AttestError:
        """The engine is gone: reap it, so the next test gets a fresh one (see `alive`)."""
        self.proc.kill()
        self.proc.wait()
        return AttestError(f"the replay engine exited while {doing}; the next test gets a new engine")

    def _line(self, doing: str) -> dict[str, Any]:
        line = self.proc.stdout.readline() if self.proc.stdout else ""
        try:
            reply = json.loads(line)
        except ValueError:
            reply = None
        if not isinstance(reply, dict):
            raise self._died(doing)
        return reply

    def _started(self) -> None:
        """Read the ready line, once."""
        if self.url:
            return
        ready = self._line("starting").get("ready", {})
        self.url = ready.get("url", "")
        if not self.url:
            raise AttestError("the replay engine did not start (no ready line)", self._what)
        if ready.get("lane") is not True:  # an engine that does not serve it would never read it
            self.lane.close()

    def _call(self, request: dict[str, Any], doing: str) -> dict[str, Any]:
        with self._lock:
            self._started()
            assert self.proc.stdin is not None
            try:
                self.proc.stdin.write(json.dumps(request) + "\n")
                self.proc.stdin.flush()
            except OSError:  # a broken pipe: it exited
                raise self._died(doing) from None
            reply = self._line(doing)
        if "error" in reply:
            raise AttestError(reply["error"])
        return reply

    def open_session(
        self,
        fixtures: Sequence[str | Path],
        mode: str,
        no_live: bool,
        match: str = "strict",
        ignore: Sequence[str] = (),
        test: str | None = None,
        faults: Sequence[str] = (),
    ) -> tuple[str, dict[str, str]]:
        """`test`: the pytest node id replaying, which a miss names in its re-record hint; `faults`:
        the SPECs its model requests meet (replay.faults)."""
        spec: dict[str, Any] = {"fixtures": [str(f) for f in fixtures], "mode": mode, "no_live": no_live}
        if match != "strict":
            spec["match"] = match
        if ignore:
            spec["ignore"] = list(ignore)
        if test:
            spec["test"] = test
        if faults:
            spec["faults"] = list(faults)
        with self._lock:
            self._started()  # whether the engine reads the lane
        wanted = self.lane.wanted(spec["fixtures"])
        if wanted is not None:
            spec["lane"] = wanted
        reply = self._call({"open": spec}, "opening this replay")
        if "table" in reply:
            self.lane.hold(reply["id"], spec["fixtures"], reply["table"])
        return reply["id"], reply["env"]

    def close_session(self, sid: str) -> dict[str, Any]:
        request: dict[str, Any] = {"close": sid}
        answered = self.lane.release(sid)
        if answered is not None:  # the engine checks that it counted every one
            request["answered"] = answered
        return self._call(request, "serving this replay")["summary"]

    def end(self) -> None:
        """Tell the engine to exit (the end of its input), without waiting for it: it exits while the
        run writes its summary, and `stop` finds it gone."""
        self.lane.close()
        if self.proc.stdin and not self.proc.stdin.closed:
            with contextlib.suppress(OSError):  # it may have exited already
                self.proc.stdin.close()

    def stop(self) -> None:
        self.end()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self.proc.stdout:
            self.proc.stdout.close()
