"""The summary's sections: each one class rendering its markdown, text and JSON, in `SECTIONS` order,
from one `View` of the report; links to the code come from the forge that publishes (`Links`)."""

from __future__ import annotations

import html
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from ...credentials.scan import Secrets
from ...fixtures.catalog import age_days
from ...fixtures.document import name_of
from ...fixtures.sequence import Marked, label, mermaid, missed_at
from ...progress import counted
from ...replay.repeat import base_id
from ..build import FAILED_OUTCOMES, OUTCOMES, Report, Test, fault_words, miss_of, replay_of
from .cells import BLOCK_CHARS, cell, code, columns, fence, flat, limit_words, tests_cell, where
from .line import LINE_PREFIX, report_summary_line
from .verdict import blocking_rules, verdict_rows

EGRESS_WORDS = {
    "none": "network namespace with only loopback",
    "guard": "in-process egress guard, best effort",
    "off": "no egress control",
}


@dataclass(frozen=True)
class Links:
    """Where the forge that publishes shows a file of the change (markdown only), built by that forge's
    package; this package names no forge. `blob` is the URL a file's path is added to, quoted, then
    `line_anchor`; none: locations are shown, never linked."""

    blob: str | None = None
    line_anchor: str = "#L{line}"

    def url(self, file: str, line: int | None) -> str | None:
        if not (self.blob and file):
            return None
        anchor = self.line_anchor.format(line=line) if line else ""
        return f"{self.blob}{quote(file, safe='/')}{anchor}"

    def location(self, file: str, line: int | None, *, in_table: bool = True) -> str:
        text = code(where(file, line), in_table=in_table) if file else "—"
        url = self.url(file, line)
        return f"[{text}]({url})" if url else text


NO_LINKS = Links()  # no forge: a location is shown, never linked


@dataclass
class View:
    """The rows a summary shows, picked from the report once for every section and format."""

    report: Report
    misses: list[Test]
    failures: list[Test]
    not_evaluated: list[Test]
    verdict: dict[str, Any] | None
    fixture_changes: list[dict[str, Any]]
    secrets: Secrets
    links: Links = NO_LINKS

    @classmethod
    def of(
        cls,
        report: Report,
        verdict: Any,
        changes: list[dict[str, Any]],
        secrets: Secrets,
        links: Links = NO_LINKS,
    ) -> View:
        tests = report["tests"]
        return cls(
            report=report,
            misses=[t for t in tests if replay_of(t).get("misses", 0) > 0 or replay_of(t).get("miss")],
            failures=[t for t in tests if t["outcome"] in FAILED_OUTCOMES],
            not_evaluated=[t for t in tests if t["outcome"] == "not_evaluated"],
            verdict=verdict.to_dict() if hasattr(verdict, "to_dict") else verdict,
            fixture_changes=changes,
            secrets=secrets,
            links=links,
        )

    def clean(self, text: str | None) -> str:
        return self.secrets.redact(text) if text else ""


@dataclass
class Block:
    """A titled block of rows below the head; trimming drops whole rows, the last blocks' first."""

    title: str
    rows: list[str]
    header: list[str] = field(default_factory=list)

    def opening(self) -> str:
        return "\n".join(["", self.title, *self.header]) + "\n"


@dataclass
class Part:
    """What a section adds to one rendering: lines under the summary line, and a block further down."""

    head: list[str] = field(default_factory=list)
    block: Block | None = None


class Section:
    """One part of the summary, written once for its three renderings: markdown (the pull-request
    comment), text (the terminal) and JSON (`--format json`, the HTML page). A section shows nothing
    in a rendering it does not override."""

    def __init__(self, view: View) -> None:
        self.view = view
        self.report = view.report

    def markdown(self) -> Part:
        return Part()

    def text(self) -> Part:
        return Part()

    def json(self) -> dict[str, Any]:
        return {}

    def where_row(self, where: tuple[str, int | None], test_id: str, words: str) -> str:
        """A markdown table row: where, linked on the forge, the test, and what happened there."""
        return f"| {self.view.links.location(*where)} | {code(test_id)} | {code(words)} |"


class Headline(Section):
    """The summary line, the first line of every rendering (notes go right under it); the JSON keeps
    it bare, for programs."""

    def markdown(self) -> Part:
        return Part([LINE_PREFIX + report_summary_line(self.report), ""])

    def text(self) -> Part:
        return Part([LINE_PREFIX + report_summary_line(self.report)])

    def json(self) -> dict[str, Any]:
        return {"summary_line": report_summary_line(self.report)}


class Labelled(Section):
    """Head lines that read `- Label: words` in markdown and `label: words` in text."""

    label = ""

    def lines(self) -> list[str]:
        return []

    def markdown(self) -> Part:
        return Part([f"- {self.label}: {line}" for line in self.lines()])

    def text(self) -> Part:
        return Part([f"{self.label.lower()}: {line}" for line in self.lines()])


class Counts(Labelled):
    """The tests by outcome, and (as data) the run's replay totals the summary line is made of."""

    label = "Tests"

    def lines(self) -> list[str]:
        return [_outcome_counts(self.report)]

    def json(self) -> dict[str, Any]:
        summary = self.report["summary"]
        outcomes = {k: v for k, v in summary["outcomes"].items() if v}
        return {"tests": summary["tests"], "outcomes": outcomes, "replay": summary["replay"]}


class Egress(Labelled):
    label = "Egress"

    def lines(self) -> list[str]:
        return [_egress_words(self.report)]

    def json(self) -> dict[str, Any]:
        return {"egress": self.report["summary"]["egress"]}


class Drift(Labelled):
    """A warning when lenient matching served changed model requests (model_request_drift); its
    count is in the replay totals."""

    label = "Drift"

    def lines(self) -> list[str]:
        return _drift_words(self.report)


class Faults(Labelled):
    """Which tests ran with which injected faults (`--fault`): a fault is not a miss, but a reviewer
    reads a pass under faults as the agent's recovery."""

    label = "Faults"

    def lines(self) -> list[str]:
        return [f"{test['id']}: {_faults_words(test)}" for test in self._faulted()]

    def json(self) -> dict[str, Any]:
        return {"faults": [_test_json(test, _faults_words(test)) for test in self._faulted()]}

    def _faulted(self) -> list[Test]:
        return [test for test in self.report["tests"] if replay_of(test).get("fault_list")]


def _faults_words(test: Test) -> str:
    return ", ".join(fault_words(f) for f in replay_of(test).get("fault_list") or [])


class Verdict(Section):
    """The policy's verdict in one line; its rules are the `PolicyRules` block."""

    def markdown(self) -> Part:
        v = self.view.verdict
        if not v:
            return Part()
        policy = code(v["policy"], in_table=False)
        return Part([f"- Policy: **{v['verdict'].replace('_', ' ')}**{blocking_rules(v)} · {policy}"])

    def text(self) -> Part:
        v = self.view.verdict
        return Part([f"policy: {v['verdict']}{blocking_rules(v)} ({v['policy']})"] if v else [])


class AllClear(Section):
    """Says so when there is nothing to look at, so an empty comment does not read as a broken one."""

    def markdown(self) -> Part:
        return Part([] if self.view.misses or self.view.failures else ["- No replay misses and no failures."])


class Misses(Section):
    def _message(self, test: Test) -> str:
        return self.view.clean(miss_of(test).get("message")) or f"{test['replay']['misses']} replay miss(es)"

    def markdown(self) -> Part:
        rows = [self.where_row(miss_location(t), t["id"], self._message(t)) for t in self.view.misses]
        return _table("### Replay misses", rows, "Where", "Test", "Miss")

    def text(self) -> Part:
        rows = [
            f"  {where(*miss_location(t))}  {t['id']}\n    {flat(self._message(t))}" for t in self.view.misses
        ]
        return Part(block=Block(f"replay misses ({len(rows)}):", rows))

    def json(self) -> dict[str, Any]:
        return {"misses": [self._json(t) for t in self.view.misses]}

    def _json(self, test: Test) -> dict[str, Any]:
        file, line = miss_location(test)
        miss = miss_of(test)
        return {
            "id": test["id"],
            "file": file,
            "line": line,
            "component": miss.get("component"),
            "message": self.view.clean(miss.get("message")),
            "paths": [self.view.clean(p) for p in miss.get("paths", [])],
        }


class Flaky(Section):
    """Tests whose repeated runs (`--attest-repeat`) sent different requests, once per test."""

    def markdown(self) -> Part:
        rows = [f"| {code(test)} | {code(how)} |" for test, how in _flaky(self.report).items()]
        header = ["", "Replayed several times, these sent different requests from run to run:", ""]
        header += columns("Test", "How the runs differed")
        return Part(block=Block(f"### Flaky agents ({len(rows)})", rows, header))

    def json(self) -> dict[str, Any]:
        return {"flaky": _flaky(self.report)}


def _flaky(report: Report) -> dict[str, str]:
    found: dict[str, str] = {}
    for test in report["tests"]:
        how = replay_of(test).get("flaky")
        if how:
            found.setdefault(base_id(test["id"])[0], how)
    return found


def _test_json(test: Test, text: str) -> dict[str, Any]:
    return {
        "id": test["id"],
        "file": test["file"],
        "line": test["line"],
        "outcome": test["outcome"],
        "text": text,
    }


class Failures(Section):
    def markdown(self) -> Part:
        rows = [self._markdown_row(t) for t in self.view.failures]
        return Part(block=Block(f"### Failures ({len(rows)})", rows, [""]))

    def _markdown_row(self, test: Test) -> str:
        where = self.view.links.location(test["file"], test["line"], in_table=False)
        title = f"- {where} {code(test['id'], in_table=False)} ({test['outcome']})"
        message = self.view.clean(test.get("message"))
        if not message:
            return title
        message = message if len(message) <= BLOCK_CHARS else message[: BLOCK_CHARS - 1] + "…"
        # A word joiner keeps a line of the message from reading as an HTML comment such as the
        # sticky marker to a program searching the body; the fence shows it as it was.
        message = message.replace("<!--", "<\u2060!--")
        opening, closing = fence(message)
        return "\n".join([title, f"  {opening}", *(f"  {m}" for m in message.splitlines()), f"  {closing}"])

    def text(self) -> Part:
        rows = [
            f"  {where(t['file'], t['line'])}  {t['id']} ({t['outcome']})"
            + (f"\n    {flat(self.view.clean(t.get('message')), BLOCK_CHARS)}" if t.get("message") else "")
            for t in self.view.failures
        ]
        return Part(block=Block(f"failures ({len(rows)}):", rows))

    def json(self) -> dict[str, Any]:
        return {"failures": [_test_json(t, self.view.clean(t.get("message"))) for t in self.view.failures]}


class NotEvaluated(Section):
    def markdown(self) -> Part:
        tests = self.view.not_evaluated
        rows = [
            self.where_row((t["file"], t["line"]), t["id"], self.view.clean(t.get("reason"))) for t in tests
        ]
        return _table("### Not evaluated", rows, "Where", "Test", "Reason")

    def text(self) -> Part:
        rows = [
            f"  {where(t['file'], t['line'])}  {t['id']}: "
            f"{flat(self.view.clean(t.get('reason'))) or 'not evaluated'}"
            for t in self.view.not_evaluated
        ]
        return Part(block=Block(f"not evaluated ({len(rows)}):", rows))

    def json(self) -> dict[str, Any]:
        tests = self.view.not_evaluated
        return {"not_evaluated": [_test_json(t, self.view.clean(t.get("reason"))) for t in tests]}


class PolicyRules(Section):
    """Each rule of the policy's verdict: its scope, limit, what the run did, and the tests involved."""

    def markdown(self) -> Part:
        verdict = self.view.verdict
        if not verdict:
            return Part()
        rows = [self._markdown_row(r) for r in verdict["rules"]]
        header = ["", *columns("Rule", "Scope", "Limit", "Actual", "Result", "Tests")]
        return Part(block=Block(f"### Policy: {verdict['verdict'].replace('_', ' ')}", rows, header))

    @staticmethod
    def _markdown_row(r: dict[str, Any]) -> str:
        result = {"ok": "ok", "blocked": "**blocked**", "not_evaluated": "**not evaluated**"}[r["status"]]
        detail = f" ({cell(r['detail'])})" if r.get("detail") else ""
        return (
            f"| {r['rule']} | {code(r['scope'])} | {limit_words(r['limit'])} | {limit_words(r['actual'])} "
            f"| {result}{detail} | {tests_cell(r['tests'])} |"
        )

    def text(self) -> Part:
        verdict = self.view.verdict
        if not verdict:
            return Part()
        header, *rows = verdict_rows(verdict)
        return Part(block=Block(f"policy: {verdict['verdict']}", rows, [header]))

    def json(self) -> dict[str, Any]:
        return {"verdict": self.view.verdict}


class FixtureChanges(Section):
    """What the re-recorded fixtures in the change altered, call by call."""

    def markdown(self) -> Part:
        changes = self.view.fixture_changes
        rows = [f"| {' | '.join(cells)} |" for c in changes for cells in _fixture_rows(c, code)]
        header = [
            "",
            "What the re-recorded fixtures in this change altered:",
            "",
            *columns("Fixture", "Call", "Change", "Components", "Response"),
        ]
        return Part(block=Block(f"### Re-recorded fixtures ({len(changes)})", rows, header))

    def text(self) -> Part:
        changes = self.view.fixture_changes
        rows = ["  " + "  ".join(cells) for c in changes for cells in _fixture_rows(c, lambda s: s)]
        return Part(block=Block(f"re-recorded fixtures ({len(changes)}):", rows))

    def json(self) -> dict[str, Any]:
        return {"fixture_changes": self.view.fixture_changes}


class Paths(Section):
    """Each re-recorded fixture's calls, base against head, and each missed fixture's recorded calls
    with the call that missed marked, as collapsed Mermaid diagrams (markdown only). Labels keep an
    alphabet without backticks or markup (`fixtures.sequence.label`)."""

    def markdown(self) -> Part:
        rows = [
            _diagram(f"{label(c['name'])}: {label(c['status'])}", [Marked.of_json(r) for r in c["path"]])
            for c in self.view.fixture_changes
            if c.get("path")
        ]
        rows += [row for row in map(self._missed, self.view.misses) if row]
        return Part(block=Block(f"### The agent's path ({len(rows)})", rows, [""]))

    def _missed(self, test: Test) -> str | None:
        recorded = self.report["summary"].get("fixtures") or {}
        replayed, miss = replay_of(test).get("replayed", 0), miss_of(test)
        facts = recorded.get(miss.get("fixture") or "")
        path = facts.get("path") if facts else None
        if not path:
            return None
        where = f"model call {replayed + 1}"
        title = f"{label(name_of(miss['fixture']))}: missed at {where} in {html.escape(test['id'])}"
        return _diagram(title, missed_at(path, replayed, miss.get("component") or ""))


def _diagram(title: str, marked: list[Marked]) -> str:
    return f"<details><summary>{title}</summary>\n\n```mermaid\n{mermaid(marked)}\n```\n\n</details>"


class Freshness(Section):
    """Each replayed fixture's age and the models that answered, the oldest first (what trimming
    keeps), so a reviewer sees what the replays stand in for."""

    def markdown(self) -> Part:
        recorded = self.report["summary"].get("fixtures") or {}
        aged = sorted(recorded.items(), key=lambda item: -(age_days(item[1]["recorded_at"]) or 0))
        rows = [
            f"| {code(name_of(path))} | {_age_words(facts['recorded_at'])} | "
            f"{', '.join(code(label(m, 80)) for m in facts['models']) or '—'} |"
            for path, facts in aged
        ]
        return _table("### Fixtures replayed", rows, "Fixture", "Recorded", "Models (asked → answered)")

    def json(self) -> dict[str, Any]:
        return {"fixtures": self.report["summary"].get("fixtures") or {}}


# The summary, in the order it reads: the head lines of every section first, then their blocks.
SECTIONS: tuple[type[Section], ...] = (
    Headline,
    Counts,
    Egress,
    Drift,
    Faults,
    Verdict,
    AllClear,
    Misses,
    Flaky,
    Failures,
    NotEvaluated,
    PolicyRules,
    FixtureChanges,
    Paths,
    Freshness,
)


def sections(view: View) -> list[Section]:
    return [section(view) for section in SECTIONS]


def miss_location(test: Test) -> tuple[str, int | None]:
    """Where the agent made the missed call, else where the test is."""
    location = miss_of(test).get("location")
    return (location["file"], location["line"]) if location else (test["file"], test["line"])


def _outcome_counts(report: Report) -> str:
    outcomes = report["summary"]["outcomes"]
    parts = [f"{outcomes[o]} {o.replace('_', ' ')}" for o in OUTCOMES if outcomes.get(o)]
    return " · ".join([counted(report["summary"]["tests"], "test"), *parts])


def _egress_words(report: Report) -> str:
    egress = report["summary"]["egress"]
    verified = "isolation verified" if egress["isolation_verified"] else "isolation not verified"
    return f"{egress['mode']} ({EGRESS_WORDS[egress['mode']]}), {verified}"


def _drift_words(report: Report) -> list[str]:
    count = report["summary"]["replay"].get("drift", 0)
    if not count:
        return []
    replays = [replay_of(t) for t in report["tests"]]
    first = next((r["drift_message"] for r in replays if r.get("drift_message")), "")
    line = f"{count} model request(s) changed and were served from the recording (model_request_drift)"
    return [f"{line}; first: {first}" if first else line]


def _component_words(row: dict[str, Any]) -> str:
    return ", ".join(row["components"]) if row["components"] else "—"


def _table(title: str, rows: list[str], *names: str) -> Part:
    """A block that is a markdown table, its row count in its title."""
    return Part(block=Block(f"{title} ({len(rows)})", rows, ["", *columns(*names)]))


def _fixture_rows(change: dict[str, Any], cell: Callable[[str], str]) -> list[tuple[str, ...]]:
    name = change["name"]
    if change.get("pin_only"):  # a pinned fixture, and no object store to read its versions from
        moved = f"{_short(change['base_digest'])}→{_short(change['head_digest'])}"
        return [
            (
                cell(name),
                "—",
                f"pin {change['status']} ({moved}); calls not compared: no object store",
                "—",
                "—",
            )
        ]
    if change["status"] in ("added", "removed"):
        return [
            (
                cell(name),
                "—",
                f"fixture {change['status']} ({counted(len(change['interactions']), 'call')})",
                "—",
                "—",
            )
        ]
    if not change["interactions"]:
        return [(cell(name), "—", "changed outside the model calls (command or another channel)", "—", "—")]
    rows: list[tuple[str, ...]] = []
    for row in change["interactions"]:
        index = row["head_index"] if row["head_index"] is not None else row["base_index"]
        call = f"#{index + 1} {row['method']} {row['path']}"
        response = "changed" if row["response_changed"] else ("—" if row["change"] != "changed" else "same")
        rows.append((cell(name), cell(call), row["change"], _component_words(row), response))
    return rows


def _short(digest: str | None) -> str:
    return digest.removeprefix("sha256:")[:7] if digest else "none"


def _age_words(recorded_at: str | None) -> str:
    age = age_days(recorded_at)
    return (
        "unknown" if age is None or recorded_at is None else f"{recorded_at[:10]} ({counted(age, 'day')} ago)"
    )
