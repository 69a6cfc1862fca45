"""Renderers: the one-line replay summary, and the pull-request summary built from report-v2."""

from __future__ import annotations

import html
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import quote

from ..credentials.scan import Secrets
from ..fixtures.catalog import age_days
from ..fixtures.diff import changes_between_dirs, fixture_changes
from ..fixtures.document import name_of
from ..fixtures.sequence import Marked, label, mermaid, missed_at
from ..pricing.cost import price_note
from ..progress import counted
from ..replay.repeat import base_id
from .build import (
    FAILED_OUTCOMES,
    OUTCOMES,
    Report,
    Row,
    Test,
    miss_of,
    redact_report,
    replay_of,
    run_secrets,
)

__all__ = [
    "changes_between_dirs",
    "facts",
    "fixture_changes",
    "limit_words",
    "render",
    "render_verdict",
    "summary_line",
]


# What the summary line opens with wherever a person reads it (a terminal, the comment, the job summary).
LINE_PREFIX = "attest replay: "


def summary_line(
    replayed: int,
    live: int,
    live_cost_usd: float,
    unpriced: int = 0,
    tools: tuple[int, int] = (0, 0),
    unused: int = 0,
    missed: int = 0,
    failed: int = 0,
) -> str:
    """`4 replayed · 0 live model calls · $0.00`, with `(+N unpriced)` when some live calls had no price,
    `· N missed` and `· N failed` when a request matched no recording or a test (the command) failed,
    `· 3 tool calls replayed · 0 live tool calls` when the run had a tool channel, and
    `· N recordings unused` when the agent did not make every recorded call (a call that went around
    the proxy, to a provider directly, leaves its recording unused). Callers pass `unused` only for a
    replay without misses: a miss already says why a recording went unused."""
    # The wording is fixed, "1 live model calls" included, so that logs and checks can match it.
    line = f"{replayed} replayed · {live} live model calls · {money(live_cost_usd)}"
    line = f"{line} (+{unpriced} unpriced)" if unpriced else line
    line += f" · {missed} missed" if missed else ""
    line += f" · {failed} failed" if failed else ""
    if any(tools):
        line += f" · {tools[0]} tool calls replayed · {tools[1]} live tool calls"
    return f"{line} · {counted(unused, 'recording')} unused" if unused else line


def money(usd: float) -> str:
    """Dollars as every line shows them: to the cent (`$0.00`, `$0.03`)."""
    return f"${usd:.2f}"


def call_cost(usd: float | None) -> str:
    """A cost that may be a fraction of a cent, to the millionth of a dollar without trailing zeros
    (`$0.0012`, `$0.000042`, `$0.75`, `$0.00`), or `unpriced`."""
    if usd is None:
        return "unpriced"
    digits = f"{usd:.6f}".rstrip("0")
    whole, _, cents = digits.partition(".")
    return f"${whole}.{cents.ljust(2, '0')}"


def tool_counts(counts: Mapping[str, Any]) -> tuple[int, int]:
    return int(counts.get("tool_replayed", 0)), int(counts.get("tool_live", 0))


def replay_line(counts: Mapping[str, Any], failed: int = 0) -> str:
    """`attest replay: 4 replayed · 0 live model calls · $0.00`, from a replay's counts."""
    return LINE_PREFIX + summary_line(
        counts["replayed"],
        counts["live"],
        counts["live_cost_usd"],
        counts["unpriced"],
        tool_counts(counts),
        _unused(counts),
        int(counts.get("misses", 0)),
        failed,
    )


def run_end_lines(
    tests: Iterable[Test | Row], totals: Mapping[str, Any], skip_reasons: bool = True
) -> list[str]:
    """What a test run ends with, in pytest and Vitest alike: why each not-evaluated test was not
    evaluated (unless the runner already prints skip reasons), each call that went live, the price
    table when there were some, then the summary line with the run's misses and failed tests."""
    tests = list(tests)
    lines = [f"not evaluated: {t['id']}: {_miss_text(t)}" for t in tests if t["outcome"] == "not_evaluated"]
    lines = lines if skip_reasons else []
    for test in tests:
        for call in replay_of(test).get("live_calls", []):
            lines.append(
                f"went live: {test['id']} → {call['model'] or 'unknown model'}, {call_cost(call['cost_usd'])}"
            )
    if totals.get("live"):
        lines.append(price_note())
    failed = sum(1 for t in tests if t["outcome"] in FAILED_OUTCOMES)
    return [*lines, replay_line(totals, failed)]


def _miss_text(test: Test | Row) -> str:
    miss = replay_of(test).get("miss")
    return str(miss["message"]) if miss else str(test.get("message") or "replay_miss")


def _unused(counts: Mapping[str, Any]) -> int:
    return 0 if counts.get("misses") else int(counts.get("unused", 0))


Format = Literal["markdown", "text", "json"]
FORMATS = ("markdown", "text", "json")
EGRESS_WORDS = {
    "none": "network namespace with only loopback",
    "guard": "in-process egress guard, best effort",
    "off": "no egress control",
}
CELL_CHARS = 300  # a table cell longer than this is cut; the full text is in the report
BLOCK_CHARS = 1500  # the same for a failure message shown in a code block
MIN_CHARS = 200


def report_summary_line(report: Report) -> str:
    replay = report["summary"]["replay"]
    return summary_line(
        replay["replayed"],
        replay["live"],
        replay["live_cost_usd"],
        replay["unpriced"],
        tool_counts(replay),
        _unused(replay),
        replay["misses"],
        sum(report["summary"]["outcomes"].get(o, 0) for o in FAILED_OUTCOMES),
    )


def render(
    report: Report,
    fmt: Format = "markdown",
    *,
    repo: str | None = None,
    sha: str | None = None,
    server_url: str = "https://github.com",
    max_chars: int | None = None,
    verdict: Any = None,
    fixture_changes: list[dict[str, Any]] | None = None,
    notes: list[str] | None = None,
) -> str:
    """The pull-request summary of a report. The first line of markdown and text is the summary line.

    `verdict` is a policy Verdict (or its dict); `fixture_changes` a list of `fixture_changes()` results;
    `notes` are lines of our own (never report strings) shown right under the summary line.
    `max_chars` trims markdown and text to fit, keeping misses and failures first.
    """
    if fmt not in FORMATS:
        raise ValueError(f"unknown summary format {fmt!r}; use one of {', '.join(FORMATS)}")
    if max_chars is not None and max_chars < MIN_CHARS:
        raise ValueError(f"max_chars must be at least {MIN_CHARS}: the summary line and the notice must fit")
    # Redacted whole before any cell or block is cut: a cut first could leave most of a key behind.
    secrets = run_secrets()
    links = Links(server_url.rstrip("/"), repo, sha)
    view = View.of(redact_report(report, secrets), verdict, fixture_changes or [], secrets, links)
    if fmt == "json":
        return json.dumps(summary_json(view), indent=2, ensure_ascii=False) + "\n"
    parts = [s.markdown() if fmt == "markdown" else s.text() for s in sections(view)]
    head = [line for part in parts for line in part.head]
    bullet = "- " if fmt == "markdown" else ""
    head[1:1] = [f"{bullet}{note}" for note in notes or []]
    return _assemble(head, [p.block for p in parts if p.block and p.block.rows], max_chars)


def facts(
    report: Report, *, verdict: Any = None, fixture_changes: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """What the summary shows, as data (`--format json`), messages redacted: for other renderings."""
    return summary_json(View.of(report, verdict, fixture_changes or [], run_secrets()))


def summary_json(view: View) -> dict[str, Any]:
    """Every section's keys in the sections' order; the flaky tests' key stays last, where it was
    before the summary had sections, so `--format json` readers see the same document."""
    shown = sections(view)
    ordered = [s for s in shown if not isinstance(s, Flaky)] + [s for s in shown if isinstance(s, Flaky)]
    return {key: value for section in ordered for key, value in section.json().items()}


# --- what is shown -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Links:
    """Where a file of the pull request is shown on the forge (markdown only)."""

    server_url: str
    repo: str | None
    sha: str | None

    def location(self, file: str, line: int | None, *, in_table: bool = True) -> str:
        text = _code(_where(file, line), in_table=in_table) if file else "—"
        if not (self.repo and self.sha and file):
            return text
        anchor = f"#L{line}" if line else ""
        return f"[{text}]({self.server_url}/{self.repo}/blob/{self.sha}/{quote(file, safe='/')}{anchor})"


NO_LINKS = Links("", None, None)  # no repository or commit: a location is shown, never linked


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
        return f"| {self.view.links.location(*where)} | {_code(test_id)} | {_code(words)} |"


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


class Verdict(Section):
    """The policy's verdict in one line; its rules are the `PolicyRules` block."""

    def markdown(self) -> Part:
        v = self.view.verdict
        if not v:
            return Part()
        policy = _code(v["policy"], in_table=False)
        return Part([f"- Policy: **{v['verdict'].replace('_', ' ')}**{_blocking_rules(v)} · {policy}"])

    def text(self) -> Part:
        v = self.view.verdict
        return Part([f"policy: {v['verdict']}{_blocking_rules(v)} ({v['policy']})"] if v else [])


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
            f"  {_where(*miss_location(t))}  {t['id']}\n    {_flat(self._message(t))}"
            for t in self.view.misses
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
        rows = [f"| {_code(test)} | {_code(how)} |" for test, how in _flaky(self.report).items()]
        header = ["", "Replayed several times, these sent different requests from run to run:", ""]
        header += _columns("Test", "How the runs differed")
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
        title = f"- {where} {_code(test['id'], in_table=False)} ({test['outcome']})"
        message = self.view.clean(test.get("message"))
        if not message:
            return title
        message = message if len(message) <= BLOCK_CHARS else message[: BLOCK_CHARS - 1] + "…"
        # A word joiner keeps a line of the message from reading as an HTML comment such as the
        # sticky marker to a program searching the body; the fence shows it as it was.
        message = message.replace("<!--", "<\u2060!--")
        opening, closing = _fence(message)
        return "\n".join([title, f"  {opening}", *(f"  {m}" for m in message.splitlines()), f"  {closing}"])

    def text(self) -> Part:
        rows = [
            f"  {_where(t['file'], t['line'])}  {t['id']} ({t['outcome']})"
            + (f"\n    {_flat(self.view.clean(t.get('message')), BLOCK_CHARS)}" if t.get("message") else "")
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
            f"  {_where(t['file'], t['line'])}  {t['id']}: "
            f"{_flat(self.view.clean(t.get('reason'))) or 'not evaluated'}"
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
        header = ["", *_columns("Rule", "Scope", "Limit", "Actual", "Result", "Tests")]
        return Part(block=Block(f"### Policy: {verdict['verdict'].replace('_', ' ')}", rows, header))

    @staticmethod
    def _markdown_row(r: dict[str, Any]) -> str:
        result = {"ok": "ok", "blocked": "**blocked**", "not_evaluated": "**not evaluated**"}[r["status"]]
        detail = f" ({_cell(r['detail'])})" if r.get("detail") else ""
        return (
            f"| {r['rule']} | {_code(r['scope'])} | {limit_words(r['limit'])} | {limit_words(r['actual'])} "
            f"| {result}{detail} | {_tests_cell(r['tests'])} |"
        )

    def text(self) -> Part:
        verdict = self.view.verdict
        if not verdict:
            return Part()
        header, *rows = _verdict_rows(verdict)
        return Part(block=Block(f"policy: {verdict['verdict']}", rows, [header]))

    def json(self) -> dict[str, Any]:
        return {"verdict": self.view.verdict}


class FixtureChanges(Section):
    """What the re-recorded fixtures in the change altered, call by call."""

    def markdown(self) -> Part:
        changes = self.view.fixture_changes
        rows = [f"| {' | '.join(cells)} |" for c in changes for cells in _fixture_rows(c, _code)]
        header = [
            "",
            "What the re-recorded fixtures in this change altered:",
            "",
            *_columns("Fixture", "Call", "Change", "Components", "Response"),
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
            f"| {_code(name_of(path))} | {_age_words(facts['recorded_at'])} | "
            f"{', '.join(_code(label(m, 80)) for m in facts['models']) or '—'} |"
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


def _where(file: str, line: int | None) -> str:
    return f"{file}:{line}" if line else file


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


def _blocking_rules(verdict: dict[str, Any]) -> str:
    names = sorted({r["rule"] for r in verdict["rules"] if r["status"] != "ok"})
    return f" ({', '.join(names)})" if names else ""


def limit_words(value: Any) -> str:
    """A policy rule's limit or actual value as every rendering shows it (never Python's None/False)."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def _component_words(row: dict[str, Any]) -> str:
    return ", ".join(row["components"]) if row["components"] else "—"


def _table(title: str, rows: list[str], *columns: str) -> Part:
    """A block that is a markdown table, its row count in its title."""
    return Part(block=Block(f"{title} ({len(rows)})", rows, ["", *_columns(*columns)]))


def _columns(*names: str) -> list[str]:
    """A markdown table's header row and the row under it."""
    return [f"| {' | '.join(names)} |", "|" + "---|" * len(names)]


def _tests_cell(ids: list[str], shown: int = 3) -> str:
    if not ids:
        return "—"
    more = f" +{len(ids) - shown} more" if len(ids) > shown else ""
    return ", ".join(_code(i) for i in ids[:shown]) + more


# --- assembling and trimming ---------------------------------------------------------------------


def _notice(count: int) -> str:
    return f"… {count} more rows not shown; see the job summary/artifact"


def _assemble(head: list[str], sections: list[Block], max_chars: int | None) -> str:
    """Head lines, then section rows in priority order until `max_chars` would be passed.

    Whole rows are dropped, never cut, so a row's code fence is always closed; once one row does not
    fit, every later row is dropped too, so what is shown is always the most important part.
    """
    total_rows = sum(len(s.rows) for s in sections)
    if max_chars is None:
        return "".join(["\n".join(head) + "\n", *_pieces(sections)])
    notice_chars = len("\n" + _notice(total_rows) + "\n")
    head_text = _fit_head(head, max_chars - notice_chars)
    budget = max_chars - notice_chars - len(head_text)
    parts = [head_text]
    for shown, piece in enumerate(_pieces(sections)):
        if len(piece) > budget:
            return "".join(parts) + "\n" + _notice(total_rows - shown) + "\n"
        parts.append(piece)
        budget -= len(piece)
    return "".join(parts)


def _pieces(sections: list[Block]) -> list[str]:
    """Each row as it is printed, the first row of a section carrying the section's opening."""
    return [(s.opening() if i == 0 else "") + row + "\n" for s in sections for i, row in enumerate(s.rows)]


def _fit_head(head: list[str], limit: int) -> str:
    """The head lines that fit in `limit`, dropping from the end; the summary line always stays."""
    lines = list(head)
    while len(lines) > 1 and len("\n".join(lines)) + 1 > limit:
        lines.pop()
    return "\n".join(lines) + "\n"


# --- markdown and text cells ---------------------------------------------------------------------


# autolinks and @mentions do not apply, on one line, with the table's pipes escaped.


def _cell(text: str | None, limit: int = CELL_CHARS) -> str:
    """Our own words in a table cell (numbers and fixed phrases), on one line."""
    flat = _flat(text, limit)
    return flat.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;") or "—"


def _code(text: str | None, limit: int = CELL_CHARS, *, in_table: bool = True) -> str:
    """`text` from a report as one inert inline code span, whatever backticks, pipes or breaks it holds.

    The delimiter is longer than any backtick run in the text, and spaces pad it when the text holds a
    backtick, so the text can neither close the span nor merge with it. Inside a table a pipe must be
    escaped even in a code span (GFM splits cells first), and `\\|` is read as a pipe in the code.
    """
    flat = _flat(text, limit)
    if not flat:
        return "—"
    delimiter = "`" * (_longest_run(flat, "`") + 1)
    pad = " " if "`" in flat else ""
    body = flat.replace("|", "\\|") if in_table else flat
    return f"{delimiter}{pad}{body}{pad}{delimiter}"


def _longest_run(text: str, char: str) -> int:
    longest, run = 0, 0
    for c in text:
        run = run + 1 if c == char else 0
        longest = max(longest, run)
    return longest


def _fence(text: str) -> tuple[str, str]:
    """A fence longer than any run of backticks in `text`, so the text cannot close it early."""
    fence = "`" * max(3, _longest_run(text, "`") + 1)
    return fence + "text", fence


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


def _flat(text: str | None, limit: int = CELL_CHARS) -> str:
    flat = " ".join((text or "").split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


# --- the policy verdict on its own (`attest policy evaluate`) --------------------------------------

_VERDICT_COLUMNS = ("RULE", "SCOPE", "LIMIT", "ACTUAL", "RESULT", "TESTS")


def _verdict_cells(rule: dict[str, Any]) -> tuple[str, ...]:
    tests = rule["tests"]
    shown = ", ".join(tests[:3]) + (f" +{len(tests) - 3} more" if len(tests) > 3 else "")
    result = rule["status"].replace("_", " ") + (f" ({rule['detail']})" if rule.get("detail") else "")
    return (
        rule["rule"],
        rule["scope"],
        limit_words(rule["limit"]),
        limit_words(rule["actual"]),
        result,
        shown or "-",
    )


def _verdict_rows(verdict: dict[str, Any]) -> list[str]:
    cells = [_VERDICT_COLUMNS, *(_verdict_cells(r) for r in verdict["rules"])]
    widths = [max(len(row[i]) for row in cells) for i in range(len(_VERDICT_COLUMNS) - 1)]
    return [
        "  " + "  ".join([*(c.ljust(w) for c, w in zip(row, widths, strict=False)), row[-1]]).rstrip()
        for row in cells
    ]


def render_verdict(verdict: Any, fmt: Literal["text", "json"] = "text") -> str:
    """The verdict as a readable table (the first line says pass, blocked or not_evaluated), or JSON."""
    data = verdict.to_dict() if hasattr(verdict, "to_dict") else verdict
    if fmt == "json":
        return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    lines = [
        f"attest policy: {data['verdict']}{_blocking_rules(data)} · policy: {data['policy']}",
        *_verdict_rows(data),
    ]
    return "\n".join(lines) + "\n"
