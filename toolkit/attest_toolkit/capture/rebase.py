"""Rebasing a fixture: the code's requests changed, the conversation it has did not.

`pytest --attest-record=rebase` and `attest fixture rebase NAME -- CMD` serve a fixture's calls by
position (the Nth call gets the Nth recording, lenient matching) and keep what the code sends now.
When the run's calls are the recorded sequence (as many calls, each to the recorded provider and
endpoint, each answering the tool calls its recording answered), every drifted request is rewritten
to the one sent, templated and redacted as capture stores it, with its hashes and the digest
recomputed as `attest fixture seal` does; every response stays byte for byte and no call reaches a
provider. Anything else is a structural change: the fixture stays as it was, and one line says why.
The drift is shown per interaction, by component and path, never by value.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiohttp import web

from ..credentials.scan import Secrets
from ..errors import AttestError, UsageError, escape
from ..fixtures.document import Fixture, Interaction, dumps, fixture_path, locked, write_fixture
from ..fixtures.verify import model_hashes
from ..normalize import COMPONENTS, Exchange, Templater, request_content
from ..normalize.paths import shown
from ..normalize.served import key_as_sent
from ..normalize.walk import literal_key
from ..progress import counted
from ..providers import COUNTED
from ..proxy import listeners
from ..proxy.background import BackgroundServer
from ..proxy.http import MAX_REQUEST_BYTES
from ..replay.answers import miss_response, sent_of, serve_recording
from ..replay.diagnose import Miss, MissKind, what_of
from ..replay.index import Recording
from ..repo_root import cwd_relative
from .only_misses import ReplayFirst
from .proxy import header_credentials, offline_env
from .run import CaptureFailed, capture_secrets, describe_exit, run_child

# Where a tool result names the call it answers: Anthropic's tool_result, chat's tool message, and
# the Responses API's function_call_output.
ANSWER_ID_KEYS = ("tool_use_id", "tool_call_id", "call_id")
EXIT_OK, EXIT_COMMAND_FAILED, EXIT_REFUSED = 0, 1, 2


@dataclass(frozen=True)
class Drift:
    """One changed component of one call: what the table shows."""

    call: int  # from 1
    component: str
    paths: str  # as a miss line names them; empty when the component changed as a whole


def answered(item: Interaction) -> list[str]:
    """The ids of the tool calls a stored request answers, in order."""
    ids: list[str] = []
    stack: list[Any] = [item["request"].get("json")]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(reversed(node))
        elif isinstance(node, dict):
            if literal_key(node) is not None:
                ids += [node[k] for k in ANSWER_ID_KEYS if isinstance(node.get(k), str)][:1]
                continue
            stack.extend(reversed(list(node.values())))
    return ids


class Rebaser:
    """Serves a fixture by position and keeps the run's requests (touched only from the server's loop)."""

    def __init__(self, path: Path, secrets: Secrets) -> None:
        self.path = path
        self.secrets = secrets
        self.base = ReplayFirst(path, secrets, match="lenient")
        # An imported fixture holds the cassette's ids as recorded (see importer): a rebased request
        # keeps the ones it echoes alike, so it answers the same tool calls its recording did.
        imported = bool(self.base.doc.get("source", {}).get("imported_from"))
        self.templater = Templater(secrets, verbatim=imported)
        self.templater.reserve(dumps(self.base.doc))  # a new value never takes an existing number
        self.interactions: list[Interaction] = []  # the run's calls as the fixture will store them
        self.drifts: list[Drift] = []
        self.refusal: str | None = None
        self.credentials: set[str] = set()
        self.gate = listeners.Gate()

    @property
    def name(self) -> str:
        return str(self.base.doc["name"])

    @property
    def recorded(self) -> int:
        return len(self.base.session.recordings)

    @property
    def shown(self) -> Path:
        """The fixture's path as the lines name it."""
        return cwd_relative(self.path)

    def build(self) -> web.Application:
        app = web.Application(client_max_size=MAX_REQUEST_BYTES)
        app.router.add_route("*", "/{provider}/{tail:.*}", self.handle)
        return self.gate.app(app, MAX_REQUEST_BYTES)

    async def handle(self, request: web.Request) -> web.StreamResponse:
        provider = request.match_info["provider"]
        raw = await request.read()
        if provider in COUNTED:  # traces are accepted and dropped, as replay does
            return web.json_response({})
        self.credentials |= header_credentials(request)
        self.templater.learn(self.credentials)
        sent = sent_of(request, provider, "/" + request.match_info["tail"], raw)
        rk, path = key_as_sent(sent, self.base.session.served, self.secrets)
        call = len(self.interactions) + 1
        found = self.base.session.lookup(
            rk.key, rk.hashes, rk.model, f"{request.method} {path}", rk.parts, rk.components
        )
        if isinstance(found, Recording) and found.provider != provider:
            what = f"replay miss: provider changed ({found.provider}→{escape(provider)})"
            found = Miss(what, MissKind.ENDPOINT, self.name)
        if isinstance(found, Miss):  # the test fails with it, as a replay's miss fails it
            self.refuse(f"call {call}: {what_of(found)}")
            self.base.session.record_miss(found, not_evaluated=False)
            return miss_response(provider, found.message)
        recorded = self.base.interaction(found)
        item = recorded if rk.key == found.key else self._rebased(recorded, found, sent, rk.hashes)
        if answered(item) != answered(recorded):
            self.refuse(f"call {call}: answers other tool calls than its recording did")
        self.interactions.append(item)
        self.base.session.counters.replayed += 1
        return await serve_recording(request, found)

    def refuse(self, why: str) -> None:
        self.refusal = self.refusal or why  # the first structural change is the one that says why

    def _rebased(
        self, recorded: Interaction, found: Recording, sent: Any, hashes: dict[str, str]
    ) -> Interaction:
        """The recorded interaction with the request as sent now, stored as capture stores one."""
        content = request_content(sent.raw, sent.content_encoding)
        exchange = self.base.restore(Exchange(sent.method, sent.path, sent.query, content, 0, [], b""))
        _path, query, request = self.templater.request(exchange)
        item = {k: v for k, v in recorded.items() if k != "query"}
        item["request"] = request
        if query:
            item["query"] = query
        item["hashes"] = model_hashes(item, self.secrets)
        self._note(len(self.interactions) + 1, found.hashes, hashes)
        return item

    def _note(self, call: int, before: dict[str, str], after: dict[str, str]) -> None:
        drifts = self.base.session.counters.drifts
        paths = list(drifts[-1]["paths"]) if drifts and drifts[-1]["at"] == call - 1 else []
        for component in COMPONENTS:
            if before.get(component) != after.get(component):
                own = [p for p in paths if p == component or p.startswith((component + ".", component + "["))]
                mine = [p for p in own if p != component]
                self.drifts.append(Drift(call, component, escape(shown(component, mine)) if mine else ""))

    # --- the outcome -------------------------------------------------------------------------------

    def problem(self) -> str | None:
        """Why the run's calls cannot rebase the fixture (a structural change), or None."""
        if self.refusal:
            return self.refusal
        if len(self.interactions) != self.recorded:
            made = counted(len(self.interactions), "model call")
            return f"the code made {made}, the fixture records {self.recorded}"
        return None

    def rebased(self) -> Fixture:
        doc = self.base.doc
        return {**doc, "channels": {**doc["channels"], "model": self.interactions}}

    def summary(self, mode: str) -> dict[str, Any]:
        """The block's counts, in the shape of a replay session's summary (see `replay.session`); its
        drift is in the table, not repeated as drift lines."""
        misses = self.base.session.counters.misses
        return {
            "mode": mode,
            "replayed": self.base.replayed,
            "live": 0,
            "live_cost_usd": 0.0,
            "unpriced": 0,
            "unused": 0,
            "misses": len(misses),
            "miss_list": list(misses),
        }


def table(drifts: Sequence[Drift]) -> list[str]:
    """The drift for review: one row per changed component of each call."""
    rows = [("call", "component", "changed")] + [
        (str(d.call), d.component, d.paths or "(as a whole)") for d in drifts
    ]
    return [f"  {call:<5} {component:<10} {paths}" for call, component, paths in rows]


def conclude(rebaser: Rebaser) -> list[str]:
    """Rewrite the fixture when the run drifted but kept its structure; the lines that say what
    happened. A structural change raises Refused, and the file stays byte for byte."""
    path, name, shown = rebaser.path, rebaser.name, rebaser.shown
    problem = rebaser.problem()
    if problem is None and not rebaser.drifts:
        return [f"attest rebase: {name}: no drift in {counted(rebaser.recorded, 'call')}; {shown} unchanged"]
    with locked(path):
        if problem is None and not rebaser.base.still_on_disk():
            problem = "the fixture changed while the rebase ran"
        if problem is not None:
            raise Refused(f"attest rebase: {name}: refused: {problem}; {shown} unchanged")
        write_fixture(path, rebaser.rebased(), Secrets.of([*rebaser.secrets.values, *rebaser.credentials]))
    drifted = len({d.call for d in rebaser.drifts})
    head = f"attest rebase: {name}: {drifted} of {counted(rebaser.recorded, 'call')} drifted; rewrote {shown}"
    return [f"{head} (requests only, every response kept)", *table(rebaser.drifts)]


class Refused(AttestError):
    """A structural change: the fixture cannot be rebased and was left as it was."""

    exit_code = EXIT_REFUSED


def written(rebaser: Rebaser, passed: bool, error: str | None = None) -> tuple[list[str], str | None]:
    """After a pytest block: the lines to show, and the failure if the fixture could not be written.
    A refusal is shown, not a failure: the replay's own miss (if any) already failed the test. A test
    that failed otherwise failed first (`error`, what it failed with): its fewer calls are no refusal."""
    if not passed and rebaser.refusal is None:
        made = len(rebaser.interactions)
        first = " first" if made < rebaser.recorded else ""
        why = f" ({rebaser.templater.secrets.redact(error)})" if error else ""  # the keys it sent too
        return [
            f"attest rebase: {rebaser.name}: not rewritten: the test failed{first}{why}, after {made} of "
            f"{counted(rebaser.recorded, 'recorded call')}; {rebaser.shown} unchanged"
        ], None
    try:
        return conclude(rebaser), None
    except Refused as exc:
        return [str(exc)], None
    except AttestError as exc:  # a credential found, a full disk
        return [], str(exc)


def rebase_command(
    argv: Sequence[str],
    name: str,
    fixtures_dir: str | Path | None = None,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> list[str]:
    """Run `argv` against its fixture served by position and rebase the fixture (see the module).
    Raises CaptureFailed (exit 1) when the command failed, Refused (exit 2) on a structural change."""
    if not argv:
        raise UsageError("no command given; put it after `--`")
    env = dict(os.environ if env is None else env)
    path = fixture_path(name, fixtures_dir)
    rebaser = Rebaser(path, capture_secrets(env, cwd))
    server = BackgroundServer(rebaser.build, "attest-rebase", shutdown_timeout=5.0, auto_decompress=False)
    base_url = rebaser.gate.url(server.start())
    listeners.started(base_url)
    try:
        returncode = run_child(argv, {**env, **offline_env(base_url, env)}, cwd)
    finally:
        server.stop()
        listeners.stopped(base_url)
    if returncode != 0 and rebaser.refusal is None:  # a miss that made it fail is said as the refusal
        raise CaptureFailed(
            f"the command {describe_exit(returncode)}; nothing rewritten, the fixture is unchanged", path
        )
    return conclude(rebaser)
