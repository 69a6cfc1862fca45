"""Running things against the engine: a command under replay, the `--serve` protocol, control mode."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import select
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from ..errors import AttestError, UsageError
from ..fixtures.document import fixture_path
from ..proxy.background import BackgroundServer
from . import bypass, lane
from .fastpath import answer_call
from .modes import Mode, default_mode, spelled, word_of
from .server import Engine, ReplayApp, dumps_line

STOP_LINES = frozenset({"stop", "quit", "exit"})
# `attest replay`'s verdict, ctxmesh's: pass, the command (or container) failed, replay diverged, could not run.
EXIT_PASS, EXIT_COMMAND_FAILED, EXIT_DIVERGED, EXIT_COULD_NOT_RUN = 0, 1, 2, 3


@dataclass(frozen=True)
class ReplayRun:
    returncode: int | None  # the command's exit code; None when it could not start
    summary: dict[str, Any]

    @property
    def diverged(self) -> bool:
        return self.summary["misses"] > 0


def exit_code(run: ReplayRun) -> int:
    """A divergence wins over the command's own failure: the behaviour changed, whatever came after."""
    if run.returncode is None:
        return EXIT_COULD_NOT_RUN
    if run.diverged:
        return EXIT_DIVERGED
    return EXIT_COMMAND_FAILED if run.returncode != 0 else EXIT_PASS


def run_command(
    argv: Sequence[str],
    fixtures: Sequence[str | Path],
    mode: Mode,
    no_live: bool,
    env: Mapping[str, str] | None = None,
    match: str = "strict",
    faults: Sequence[str] = (),
) -> ReplayRun:
    """Run `argv` with the provider base URLs pointed at a replay session whose model requests meet
    `faults` (replay.faults); return its exit and summary."""
    if not argv:
        raise UsageError("no command given; put it after `--`")
    base_env = dict(os.environ if env is None else env)
    with Engine(base_env) as engine:
        sid, session_env = engine.open_session(list(fixtures), mode, no_live, match, (), faults)
        try:
            proc = subprocess.run(list(argv), env={**base_env, **session_env}, check=False)
            returncode: int | None = proc.returncode
        except OSError as exc:
            print(f"attest replay: cannot run {argv[0]!r}: {exc.strerror}", file=sys.stderr)
            returncode = None
        summary = engine.close_session(sid)
    return ReplayRun(returncode, summary)


def resolve_fixtures(
    names: Sequence[str], paths: Sequence[str | Path], fixtures_dir: str | Path | None
) -> list[Path]:
    """The fixtures named by --name (in `fixtures_dir`) and --fixture; at least one."""
    found = [fixture_path(n, fixtures_dir) for n in names]
    found += [Path(p) for p in paths]
    if not found:
        raise UsageError("name a fixture with --name (or --fixture PATH)")
    return found


def resolve_mode(mode: str | None) -> Mode:
    """--mode, else ATTEST_REPLAY (as pytest and Vitest read it), else the default for CI or not."""
    from_env = os.environ.get("ATTEST_REPLAY")
    chosen = mode or from_env or default_mode()
    found = word_of(Mode, chosen)
    if found is None:
        where = "--mode" if mode else "ATTEST_REPLAY"
        raise UsageError(f"{where} must be {spelled(Mode)}, not {chosen!r}")
    return found


def serve(
    fixtures: Sequence[str | Path],
    mode: Mode,
    no_live: bool,
    stdin: IO[str] = sys.stdin,
    stdout: IO[str] = sys.stdout,
) -> dict[str, Any]:
    """The seed's `--serve` protocol: print {"env": ...}, serve until a stop line or end of input,
    then print {"summary": ...}."""
    with Engine() as engine:
        sid, env = engine.open_session(list(fixtures), mode, no_live)
        stdout.write(dumps_line({"env": env}) + "\n")
        stdout.flush()
        for line in stdin:
            if line.strip().lower() in STOP_LINES:
                break
        summary = engine.close_session(sid)
        # Before the server shuts down: the helper's stop returns as soon as the summary arrives.
        stdout.write(dumps_line({"summary": summary}) + "\n")
        stdout.flush()
    return summary


def serve_control(stdin: IO[str] = sys.stdin, stdout: IO[str] = sys.stdout) -> None:
    """Many sessions for a test runner in another process, controlled over this process's own pipes:
    print {"ready": ...}, then answer one JSON line per request line ({"open": {...}} or
    {"close": id}) until a stop line or end of input, so the engine dies with its runner. The pipes
    are private to the runner: no other process can open or end a session. A runner that passed a
    socket (engine.lane) gets its own calls answered there too."""
    lane_fd = os.environ.pop(lane.FD_VAR, "")  # before the engine copies the environment for its children
    with Engine() as engine:
        has_lane = serve_lane(engine.app, engine.server.loop, lane_fd)
        stdout.write(_ready_line(engine, has_lane))
        stdout.flush()
        ControlPipe(engine.app, stdin.fileno(), stdout.fileno()).run(engine.server)


def serve_claimed(
    listener: socket.socket, path: str, stdin: IO[str] = sys.stdin, stdout: IO[str] = sys.stdout
) -> None:
    """`serve --socket PATH`: an engine a test runner starts before it has a worker to give it to
    (Vitest's attestReplay() starts one as the run starts). It prints {"ready": ...}, then serves
    `serve`'s control lines to the first connection to the Unix socket PATH, and to no other: the
    socket is removed once claimed, and the runner makes it in a directory only its user can enter.
    It ends when that connection ends, or when its own input ends (its runner ended), claimed or not.
    `listener` is bound to PATH and listening (replay.__main__.serve_socket)."""
    with Engine() as engine, listener:
        stdout.write(_ready_line(engine, False))
        stdout.flush()
        conn = _claim(listener, stdin.fileno())
        with contextlib.suppress(OSError):
            os.unlink(path)
        listener.close()  # whoever else is waiting in the backlog is refused: they start their own
        if conn is None:
            return
        with conn:
            conn.sendall(_ready_line(engine, False).encode("utf-8"))  # the claimant reads what `serve` prints
            pipe = ControlPipe(engine.app, conn.fileno(), conn.fileno())
            threading.Thread(target=_until_end, args=(stdin.fileno(), pipe.end), daemon=True).start()
            pipe.run(engine.server)


def _ready_line(engine: Engine, has_lane: bool) -> str:
    return dumps_line({"ready": {"url": engine.base_url, "lane": has_lane}}) + "\n"


def _claim(listener: socket.socket, fd_in: int) -> socket.socket | None:
    """The first connection to `listener`; None when the input `fd_in` ends first."""
    while True:
        readable, _, _ = select.select([listener.fileno(), fd_in], [], [])
        if listener.fileno() in readable:
            return listener.accept()[0]
        if not os.read(fd_in, 1 << 16):
            return None


def _until_end(fd_in: int, then: Callable[[], None]) -> None:
    """Read `fd_in` to its end, then call `then`."""
    with contextlib.suppress(OSError):
        while os.read(fd_in, 1 << 16):
            pass
    then()


class ControlPipe:
    """The control lines, read and answered on the engine's own loop thread.

    Every test opens and closes a session: reading the pipe in the loop (rather than in another
    thread that hands each line over) makes a round trip one wake-up of the engine instead of three.
    A runner that already knows a session's variables (they differ only by the id) sends the open
    with an id of its own and makes its calls without waiting for the answer; a call naming that id
    reads the pipe first (SessionTable), so it never overtakes the open."""

    def __init__(self, app: ReplayApp, fd_in: int, fd_out: int) -> None:
        self.app, self.fd_in, self.fd_out = app, fd_in, fd_out
        self._pending = b""
        self._done = threading.Event()
        self._reading = False

    def run(self, server: BackgroundServer) -> None:
        """Serve control lines until a stop line or the end of input."""
        os.set_blocking(self.fd_in, False)  # read what is there; the loop says when there is more
        if self.fd_out != self.fd_in:  # a socket both ways stays non-blocking: see _reply
            os.set_blocking(self.fd_out, True)  # a reply is a short line that the runner reads at once
        self.app.sessions.read_pending = self._readable
        try:
            server.call(server.loop.add_reader, self.fd_in, self._readable)
        except PermissionError:  # a file or /dev/null: epoll refuses it, and reading it never waits
            while not self._done.is_set():
                server.call(self._readable)
        else:
            self._done.wait()
            server.call(server.loop.remove_reader, self.fd_in)
        self.app.sessions.read_pending = None

    def _readable(self) -> None:
        # A call sent on this link (fastpath.answer_call) looks its session up while its own line is
        # answered: the lines after it wait for the loop's next turn, so answers keep the order asked.
        if self._done.is_set() or self._reading:
            return
        self._reading = True
        try:
            self._read()
        finally:
            self._reading = False

    def _read(self) -> None:
        try:
            data = os.read(self.fd_in, 1 << 16)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self._done.set()
            return
        lines = (self._pending + data).split(b"\n")
        self._pending = lines.pop()
        for line in lines:
            text = line.decode("utf-8", "replace")
            if text.strip().lower() in STOP_LINES:
                self._done.set()
                return
            self._reply((dumps_line(control(self.app, text)) + "\n").encode("utf-8"))

    def end(self) -> None:
        """Stop serving, from any thread, as the end of input does."""
        self._done.set()

    def _reply(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            try:
                view = view[os.write(self.fd_out, view) :]
            except BlockingIOError:
                select.select([], [self.fd_out], [])
            except OSError:  # the runner is gone: nobody is left to answer
                self._done.set()
                return


class LaneEnd(asyncio.Protocol):
    """The engine's end of the lane (engine.lane): each request answered on the loop, in the order
    sent, with the next recording for its key when the fast path could serve it, else NOT_HERE."""

    def __init__(self, app: ReplayApp) -> None:
        self.app = app
        self.buffer = bytearray()
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while (request := lane.take_request(self.buffer)) is not None and self.transport is not None:
            self.transport.write(self._answer(*request))

    def _answer(self, sid: str, key: str) -> bytes:
        session = self.app.serving(sid)
        found = self.app.take(session, key) if session is not None else None
        return lane.answer_frame(found) if found is not None else lane.NOT_HERE


def serve_lane(app: ReplayApp, loop: asyncio.AbstractEventLoop, fd: str) -> bool:
    """Serve the lane whose socket the runner passed (its number, from lane.FD_VAR); False when there
    is none, and the runner then uses HTTP alone."""
    if not fd.isdigit():
        return False
    try:
        sock = socket.socket(fileno=int(fd))
    except OSError:  # not an open socket
        return False
    serving = loop.connect_accepted_socket(lambda: LaneEnd(app), sock)
    asyncio.run_coroutine_threadsafe(serving, loop).result()
    return True


def control(app: ReplayApp, line: str) -> dict[str, Any]:
    """One control request, run on the engine's loop thread."""
    try:
        request = json.loads(line)
        if "open" in request:
            spec = request["open"]
            arguments = {
                "fixtures": spec["fixtures"],
                "mode": spec.get("mode", "strict"),
                "no_live": bool(spec.get("no_live")),
                "match": spec.get("match", "strict"),
                "ignore": spec.get("ignore", ()),
                "faults": spec.get("faults", ()),
            }
            test = spec.get("test") if isinstance(spec.get("test"), str) else None
            sid, env = app.open(**arguments, sid=spec.get("id"), test=test)
            reply: dict[str, Any] = {"id": sid, "env": env}
            offer = app.aheads.offer(arguments, sid, env) if spec.get("ahead") else None
            if offer is not None:  # the runner opens the next ones like it itself (engine.ahead)
                reply["ahead"] = offer
            session = app.serving(sid) if spec.get("lane") else None
            if session is not None:  # what the runner needs to key its own calls for the lane
                reply["served"] = session.served
            return reply
        if "call" in request:  # a runner's own HTTP call, sent on this link (fastpath.answer_call)
            return {"hit": answer_call(app, request["call"])}
        if "refusal" in request:
            return bypass.refusal(str(request["refusal"]["host"]), request["refusal"]["runner"])
        summary = closed(app, request)
        if request["close"] in app.rewritten:
            app.rewritten.discard(request["close"])
            return {"summary": summary, "rewritten": True}
        return {"summary": summary}
    except AttestError as exc:
        return {"error": str(exc), "exit_code": exc.exit_code}
    except (ValueError, KeyError, TypeError):
        return {"error": "not a control request: " + line.strip()[:200], "exit_code": 3}
    except Exception as exc:  # whatever one session hits is its own failure, never the engine's
        problem = f"the replay engine could not open this session: {type(exc).__name__}: {exc}"
        return {"error": problem, "exit_code": 3}


def closed(app: ReplayApp, request: dict[str, Any]) -> dict[str, Any]:
    """The session's summary, with what the runner saw go around it (see `replay.bypass.reported`)."""
    watch = bypass.reported(request["bypass"]) if request.get("bypass") else None  # read before it closes
    summary = app.close(request["close"])
    if watch is not None:
        watch.add_to(summary)
    return summary
