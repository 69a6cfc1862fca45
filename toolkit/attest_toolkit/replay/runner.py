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
from typing import IO, Any, Protocol

from ..errors import AttestError, UsageError
from ..fixtures.document import fixture_path, prepare_reading
from ..proxy.background import BackgroundServer
from . import lane
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
        lane_end = serve_lane(engine.app, engine.server, lane_fd)
        _ready(engine, stdout, lane_end is not None)
        ControlPipe(engine.app, stdin.fileno(), stdout.fileno(), lane_end).run(engine.server)


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
        _ready(engine, stdout, False)
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


def _ready(engine: Engine, stdout: IO[str], has_lane: bool) -> None:
    """Say the engine is ready, then prepare what a first open needs while the runner still collects its
    tests, not in its first test's open (a line that comes meanwhile is read after it)."""
    stdout.write(_ready_line(engine, has_lane))
    stdout.flush()
    engine.server.loop.call_soon_threadsafe(prepare_reading)


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


class Holder(Protocol):
    """The runner's end that answers sessions' hits itself (replay.lane): told of what is taken here."""

    def teller(self, sid: str) -> Callable[[int], None]: ...

    def settle(self) -> None:
        """Apply what the runner has told of so far."""
        ...


class ControlPipe:
    """The control lines, read and answered on the engine's own loop thread.

    Every test opens and closes a session: reading the pipe in the loop (rather than in another
    thread that hands each line over) makes a round trip one wake-up of the engine instead of three.
    A runner that already knows a session's variables (they differ only by the id) sends the open
    with an id of its own and makes its calls without waiting for the answer; a call naming that id
    reads the pipe first (SessionTable), so it never overtakes the open. Such a runner reads the
    open's answer when it needs it, so answers the pipe has no room for wait in memory, and the
    engine goes on serving (a session's call over HTTP must not wait behind its own hit table)."""

    def __init__(self, app: ReplayApp, fd_in: int, fd_out: int, lane_end: LaneEnd | None = None) -> None:
        self.app, self.fd_in, self.fd_out = app, fd_in, fd_out
        # Where the runner hears of the recordings taken here of sessions it answers itself: its lane
        # (the pytest helper), else this link (the Vitest helper, whose notes come here too).
        self.holder: Holder = lane_end if lane_end is not None else self
        self._pending = b""
        self._owed = bytearray()  # answers the runner had no room for yet
        self._done = threading.Event()
        self._reading = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._waiting = False  # for room to write what is owed

    def run(self, server: BackgroundServer) -> None:
        """Serve control lines until a stop line or the end of input."""
        os.set_blocking(self.fd_in, False)  # read what is there; the loop says when there is more
        os.set_blocking(self.fd_out, False)  # see _reply
        self._loop = server.loop
        self.app.sessions.read_pending = self._readable
        self.app.sessions.settle = self.holder.settle
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
            answer = control(self.app, text, self.holder)
            if answer is not None:  # a note (`took`) is not answered
                self._reply((dumps_line(answer) + "\n").encode("utf-8"))

    def end(self) -> None:
        """Stop serving, from any thread, as the end of input does."""
        self._done.set()

    def teller(self, sid: str) -> Callable[[int], None]:
        """Tells the runner on this link of each recording of `sid` taken here (a line it does not
        take for an answer: `{"taken": [id, position]}`)."""
        return lambda position: self._reply((dumps_line({"taken": [sid, position]}) + "\n").encode("utf-8"))

    def settle(self) -> None:
        self._readable()

    def _reply(self, data: bytes) -> None:
        """Write `data` after what is owed; what the runner has no room for is written as it reads."""
        if self._owed:
            self._owed += data
            return
        self._owed += data
        self._flush()
        if not self._owed:
            return
        try:
            assert self._loop is not None
            self._loop.add_writer(self.fd_out, self._flush)
            self._waiting = True
        except PermissionError:  # a file, which epoll refuses: writing it never waits
            while self._owed:
                select.select([], [self.fd_out], [])
                self._flush()

    def _flush(self) -> None:
        """Write what is owed, as much as there is room for."""
        while self._owed:
            try:
                del self._owed[: os.write(self.fd_out, self._owed)]
            except BlockingIOError:
                return
            except OSError:  # the runner is gone: nobody is left to answer
                self._owed.clear()
                self._done.set()
        if self._waiting and self._loop is not None:
            self._waiting = False
            self._loop.remove_writer(self.fd_out)


class LaneEnd:
    """The engine's end of the lane (replay.lane), read and written on the engine's loop: the runner's
    notes are applied as they arrive and whenever a session it holds is about to be served here (the
    session table's `settle`); notes to the runner wait in memory while its socket is full."""

    def __init__(self, app: ReplayApp, sock: socket.socket, loop: asyncio.AbstractEventLoop) -> None:
        self.app, self.sock, self.loop = app, sock, loop
        self.sock.setblocking(False)
        self.received = bytearray()
        self.owed = bytearray()  # notes for the runner its socket had no room for yet
        self.open = True
        loop.add_reader(sock.fileno(), self.settle)

    def teller(self, sid: str) -> Callable[[int], None]:
        return lambda position: self.tell(sid, position)

    def settle(self) -> None:
        """Apply every note the runner has sent so far."""
        while self.open:
            try:
                data = self.sock.recv(1 << 16)
            except BlockingIOError:
                break
            except OSError:
                data = b""
            if not data:  # the runner is gone: its sessions are served here alone from now on
                self._close()
                break
            self.received += data
        sessions = self.app.sessions
        for sid, position in lane.read_notes(self.received):
            session = dict.get(sessions, sid)  # not `get`, which settles
            if session is None and sessions.read_pending is not None:
                # An open the runner did not wait for (replay.loaded): sent before the note, and maybe
                # not read yet.
                sessions.read_pending()
                session = dict.get(sessions, sid)
            if session is not None:
                session.take_noted(position)

    def tell(self, sid: str, position: int) -> None:
        if not self.open:
            return
        if not self.owed:
            self.loop.add_writer(self.sock.fileno(), self._flush)
        self.owed += lane.note(sid, position)
        self._flush()

    def _flush(self) -> None:
        try:
            sent = self.sock.send(self.owed)
        except BlockingIOError:
            return
        except OSError:
            self._close()
            return
        del self.owed[:sent]
        if not self.owed:
            self.loop.remove_writer(self.sock.fileno())

    def _close(self) -> None:
        if not self.open:
            return
        self.open = False
        self.loop.remove_reader(self.sock.fileno())
        self.loop.remove_writer(self.sock.fileno())
        self.app.sessions.settle = None
        for session in self.app.sessions.values():
            session.tell = None
        self.sock.close()


def serve_lane(app: ReplayApp, server: BackgroundServer, fd: str) -> LaneEnd | None:
    """Serve the lane whose socket the runner passed (its number, from lane.FD_VAR); None when there
    is none, and the runner then uses HTTP alone."""
    if not fd.isdigit():
        return None
    try:
        sock = socket.socket(fileno=int(fd))
    except OSError:  # not an open socket
        return None
    return server.call(LaneEnd, app, sock, server.loop)


def _told(app: ReplayApp, asked: dict[str, Any], answer: dict[str, Any]) -> dict[str, Any]:
    """`answer`, with what a runner that asks is told of the plain fixtures loaded (replay.loaded)."""
    if asked.get("plain") is True:
        answer["plain"] = app.telling.tell(app.plain_env)
    return answer


def control(app: ReplayApp, line: str, holder: Holder | None = None) -> dict[str, Any] | None:
    """One control request, run on the engine's loop thread, and its answer (None for a note);
    `holder`: where the runner that sent it hears of what is taken here."""
    try:
        request = json.loads(line)
        if "open" in request:
            spec = request["open"]
            app.telling.asked = app.telling.asked or spec.get("plain") is True
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
            wanted = spec.get("lane")  # {} or {"have": token}: what the runner holds (replay.hits)
            table = None
            if holder is not None and isinstance(wanted, dict):
                table = app.hand(sid, wanted.get("have"), holder.teller(sid))
            if table is not None:  # the runner answers this session's hits itself (replay.lane)
                reply["table"] = table
            teller = holder.teller if holder is not None and table is not None else None
            offer = app.aheads.offer(arguments, sid, env, teller) if spec.get("ahead") else None
            if offer is not None:  # the runner opens the next ones like it itself (engine.ahead)
                reply["ahead"] = offer
            return _told(app, spec, reply)
        if "took" in request:  # the runner answered a call itself (replay.lane)
            took(app, *request["took"])
            return None
        if "call" in request:  # a runner's own HTTP call, sent on this link (fastpath.answer_call)
            return {"hit": answer_call(app, request["call"])}
        if "refusal" in request:
            from . import bypass  # a call around the replay: rare, and it loads the guard's host lists

            return bypass.refusal(str(request["refusal"]["host"]), request["refusal"]["runner"])
        summary = closed(app, request)
        if request["close"] in app.rewritten:
            app.rewritten.discard(request["close"])
            return {"summary": summary, "rewritten": True}
        return _told(app, request, {"summary": summary})
    except AttestError as exc:
        return {"error": str(exc), "exit_code": exc.exit_code}
    except (ValueError, KeyError, TypeError):
        return {"error": "not a control request: " + line.strip()[:200], "exit_code": 3}
    except Exception as exc:  # whatever one session hits is its own failure, never the engine's
        problem = f"the replay engine could not open this session: {type(exc).__name__}: {exc}"
        return {"error": problem, "exit_code": 3}


def took(app: ReplayApp, sid: str, position: int, token: str) -> None:
    """A runner answered a call of session `sid` with its recording at `position`, from the table of
    the loaded fixture `token`: counted, unless the session serves another load of it (its close
    then says how many were not)."""
    session = app.sessions.get(sid)  # a session made from a template opens here
    if session is not None and len(session.fixtures) == 1 and session.fixtures[0].token == token:
        session.take_noted(position)


def closed(app: ReplayApp, request: dict[str, Any]) -> dict[str, Any]:
    """The session's summary, with what the runner saw go around it (see `replay.bypass.reported`)."""
    watch = None
    if request.get("bypass"):  # read before it closes; only a Vitest runner that saw a call around it
        from . import bypass

        watch = bypass.reported(request["bypass"])
    answered = request.get("answered")
    summary = app.close(request["close"], answered if isinstance(answered, int) else None)
    if watch is not None:
        watch.add_to(summary)
    return summary
