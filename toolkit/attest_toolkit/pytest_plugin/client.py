"""A client for an engine in another process (`attest-engine serve`), used by test-runner helpers.

One engine process serves a whole test session: each test opens and closes a session with one JSON
line each way on the engine's own pipes, so a test pays a fraction of a millisecond, not a process
start; a test whose fixtures the engine told of does not wait for its open's answer (replay.loaded).
The engine exits when the process that started it closes its stdin, so it never outlives the test run.
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
from ..normalize.rules import parse_ignore
from ..replay.lane import FD_VAR, Lane
from ..replay.loaded import Told
from ..replay.modes import MATCHES, MODES


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
        self._lock = threading.Lock()  # one request and its answer at a time on the pipes
        self.told = Told()  # the fixtures the engine holds loaded (replay.loaded)
        # The opens not waited for, in the order sent: their fixtures and the variables the test got.
        self._opening: dict[str, tuple[list[str], dict[str, str]]] = {}
        self._failed: dict[str, str] = {}  # such an open's problem, said at its close
        self.lane.awaiting = self._awaited

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
            self._settle(doing)
            self._send(request, doing)
            reply = self._line(doing)
        self.told.learn(reply)
        if "error" in reply:
            raise AttestError(reply["error"])
        return reply

    def _send(self, request: dict[str, Any], doing: str) -> None:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(json.dumps(request) + "\n")
            self.proc.stdin.flush()
        except OSError:  # a broken pipe: it exited
            raise self._died(doing) from None

    def _settle(self, doing: str) -> None:
        """Read the answers of the opens sent without waiting, in the order sent (the lock held)."""
        while self._opening:
            sid = next(iter(self._opening))
            fixtures, env = self._opening.pop(sid)
            reply = self._line(doing)
            self.told.learn(reply)
            if "error" in reply:
                self._failed[sid] = reply["error"]
            elif reply.get("env") != env:
                self._failed[sid] = f"{fixtures[0]}: rewritten while this test opened it; run it again"
            elif "table" in reply and sid not in self.lane.held:
                self.lane.hold(sid, fixtures, reply["table"])

    def _awaited(self, sid: str) -> None:
        """A call of session `sid` wants its hit table: read its open's answer if it is still due."""
        if sid not in self._opening:
            return
        with self._lock, contextlib.suppress(AttestError):  # a dead engine: the close says so
            self._settle("opening this replay")

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
        spec["plain"] = True
        opened = self._open_without_waiting(spec, ignore, faults)
        if opened is not None:
            return opened
        reply = self._call({"open": spec}, "opening this replay")
        if "table" in reply:
            self.lane.hold(reply["id"], spec["fixtures"], reply["table"])
        return reply["id"], reply["env"]

    def _open_without_waiting(
        self, spec: dict[str, Any], ignore: Sequence[str], faults: Sequence[str]
    ) -> tuple[str, dict[str, str]] | None:
        """Open the session and go on, when its answer is known (replay.loaded): its fixtures are loaded
        in the engine as they are on disk, and nothing else in the open can fail there."""
        if faults or spec["mode"] not in MODES or spec.get("match", "strict") not in MATCHES:
            return None
        variables = self.told.variables(spec["fixtures"])
        if variables is None:
            return None
        try:
            parse_ignore(ignore, "the run's ignore rules")
        except AttestError:
            return None  # the engine's answer says what is wrong with them
        sid = os.urandom(8).hex()  # as random as the engine's own ids
        env = variables(sid)
        with self._lock:
            self._send({"open": {**spec, "id": sid}}, "opening this replay")
            self._opening[sid] = (spec["fixtures"], env)
        wanted = spec.get("lane") or {}
        if "have" in wanted:  # the table of this very load (the same stamp): its answer names it
            self.lane.hold(sid, spec["fixtures"], {"token": wanted["have"]})
        return sid, env

    def close_session(self, sid: str) -> dict[str, Any]:
        with self._lock:
            self._settle("serving this replay")
        failed = self._failed.pop(sid, None)
        request: dict[str, Any] = {"close": sid, "plain": True}
        answered = self.lane.release(sid)
        if answered is not None:  # the engine checks that it counted every one
            request["answered"] = answered
        if failed is not None:
            with contextlib.suppress(AttestError):  # the engine may hold it: end it there too
                self._call(request, "serving this replay")
            raise AttestError(failed)
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
