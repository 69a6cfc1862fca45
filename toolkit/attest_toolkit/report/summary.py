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
from ..replay.pricing import price_note
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
from .progress import counted

__all__ = [
    "changes_between_dirs",
    "facts",
    "fixture_changes",
    "render",
    "render_verdict",
    "summary_line",
]


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
    return "attest replay: " + summary_line(
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
    view = _View.of(redact_report(report, secrets), verdict, fixture_changes or [], secrets)
    if fmt == "json":
        return json.dumps(view.as_json(), indent=2, ensure_ascii=False) + "\n"
    if fmt == "markdown":
        head, sections = _markdown(view, _Links(server_url.rstrip("/"), repo, sha))
    else:
        head, sections = _text(view, None)
    bullet = "- " if fmt == "markdown" else ""
    head[1:1] = [f"{bullet}{note}" for note in notes or []]
    return _assemble(head, sections, max_chars)


def facts(
    report: Report, *, verdict: Any = None, fixture_changes: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """What the summary shows, as data (`--format json`), messages redacted: for other renderings."""
    return _View.of(report, verdict, fixture_changes or [], run_secrets()).as_json()


# --- what is shown -------------------------------------------------------------------------------


@dataclass
class _View:
    """The rows a summary shows, picked from the report once for every format."""

    report: Report
    misses: list[Test]
    failures: list[Test]
    not_evaluated: list[Test]
    verdict: dict[str, Any] | None
    fixture_changes: list[dict[str, Any]]
    secrets: Secrets

    @classmethod
    def of(cls, report: Report, verdict: Any, changes: list[dict[str, Any]], secrets: Secrets) -> _View:
        tests = report["tests"]
        return cls(
            report=report,
            misses=[t for t in tests if replay_of(t).get("misses", 0) > 0 or replay_of(t).get("miss")],
            failures=[t for t in tests if t["outcome"] in FAILED_OUTCOMES],
            not_evaluated=[t for t in tests if t["outcome"] == "not_evaluated"],
            verdict=verdict.to_dict() if hasattr(verdict, "to_dict") else verdict,
            fixture_changes=changes,
            secrets=secrets,
        )

    def clean(self, text: str | None) -> str:
        return self.secrets.redact(text) if text else ""

    def as_json(self) -> dict[str, Any]:
        summary = self.report["summary"]
        return {
            "summary_line": report_summary_line(self.report),
            "tests": summary["tests"],
            "outcomes": {k: v for k, v in summary["outcomes"].items() if v},
            "replay": summary["replay"],
            "egress": summary["egress"],
            "misses": [self._miss_json(t) for t in self.misses],
            "failures": [self._test_json(t, self.clean(t.get("message"))) for t in self.failures],
            "not_evaluated": [self._test_json(t, self.clean(t.get("reason"))) for t in self.not_evaluated],
            "verdict": self.verdict,
            "fixture_changes": self.fixture_changes,
            "fixtures": summary.get("fixtures") or {},
            "flaky": _flaky(self.report),
        }

    def _test_json(self, test: Test, text: str) -> dict[str, Any]:
        return {
            "id": test["id"],
            "file": test["file"],
            "line": test["line"],
            "outcome": test["outcome"],
            "text": text,
        }

    def _miss_json(self, test: Test) -> dict[str, Any]:
        file, line = miss_location(test)
        miss = miss_of(test)
        return {
            "id": test["id"],
            "file": file,
            "line": line,
            "component": miss.get("component"),
            "message": self.clean(miss.get("message")),
            "paths": [self.clean(p) for p in miss.get("paths", [])],
        }


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


def _blocking_rules(verdict: dict[str, Any]) -> str:
    names = sorted({r["rule"] for r in verdict["rules"] if r["status"] != "ok"})
    return f" ({', '.join(names)})" if names else ""


def _fmt_limit(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def _component_words(row: dict[str, Any]) -> str:
    return ", ".join(row["components"]) if row["components"] else "—"


# --- assembling and trimming ---------------------------------------------------------------------


@dataclass
class _Section:
    title: str
    rows: list[str]
    header: list[str] = field(default_factory=list)

    def opening(self) -> str:
        return "\n".join(["", self.title, *self.header]) + "\n"


def _notice(count: int) -> str:
    return f"… {count} more rows not shown; see the job summary/artifact"


def _assemble(head: list[str], sections: list[_Section], max_chars: int | None) -> str:
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


def _pieces(sections: list[_Section]) -> list[str]:
    """Each row as it is printed, the first row of a section carrying the section's opening."""
    return [(s.opening() if i == 0 else "") + row + "\n" for s in sections for i, row in enumerate(s.rows)]


def _fit_head(head: list[str], limit: int) -> str:
    """The head lines that fit in `limit`, dropping from the end; the summary line always stays."""
    lines = list(head)
    while len(lines) > 1 and len("\n".join(lines)) + 1 > limit:
        lines.pop()
    return "\n".join(lines) + "\n"


# --- markdown ------------------------------------------------------------------------------------


@dataclass
class _Links:
    server_url: str
    repo: str | None
    sha: str | None

    def location(self, file: str, line: int | None, *, in_table: bool = True) -> str:
        text = _code(_where(file, line), in_table=in_table) if file else "—"
        if not (self.repo and self.sha and file):
            return text
        anchor = f"#L{line}" if line else ""
        return f"[{text}]({self.server_url}/{self.repo}/blob/{self.sha}/{quote(file, safe='/')}{anchor})"


# Every string a report carries (ids, messages, paths, fixture names) comes from the pull request, so
# it is shown only as an inline code span or inside a fenced block, where markdown, HTML, links,
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


def _drift_words(report: Report) -> list[str]:
    """A warning when lenient matching served changed model requests (model_request_drift)."""
    count = report["summary"]["replay"].get("drift", 0)
    if not count:
        return []
    replays = [replay_of(t) for t in report["tests"]]
    first = next((r["drift_message"] for r in replays if r.get("drift_message")), "")
    line = f"{count} model request(s) changed and were served from the recording (model_request_drift)"
    return [f"{line}; first: {first}" if first else line]


def _markdown(view: _View, links: _Links) -> tuple[list[str], list[_Section]]:
    report = view.report
    head = [
        report_summary_line(report),
        "",
        f"- Tests: {_outcome_counts(report)}",
        f"- Egress: {_egress_words(report)}",
        *(f"- Drift: {line}" for line in _drift_words(report)),
    ]
    if view.verdict:
        v = view.verdict
        head.append(
            f"- Policy: **{v['verdict'].replace('_', ' ')}**{_blocking_rules(v)} · {_code(v['policy'], in_table=False)}"
        )
    if not view.misses and not view.failures:
        head.append("- No replay misses and no failures.")
    sections = [
        _md_misses(view, links),
        _md_flaky(view),
        _md_failures(view, links),
        _md_not_evaluated(view, links),
        _md_policy(view),
        _md_fixtures(view),
        _md_paths(view),
        _md_freshness(view),
    ]
    return head, [s for s in sections if s.rows]


def _md_misses(view: _View, links: _Links) -> _Section:
    rows = []
    for test in view.misses:
        miss = miss_of(test)
        message = view.clean(miss.get("message")) or f"{test['replay']['misses']} replay miss(es)"
        rows.append(f"| {links.location(*miss_location(test))} | {_code(test['id'])} | {_code(message)} |")
    header = ["", "| Where | Test | Miss |", "|---|---|---|"]
    return _Section(f"### Replay misses ({len(rows)})", rows, header)


def _md_flaky(view: _View) -> _Section:
    """Tests whose repeated runs (`--attest-repeat`) sent different requests, once per test."""
    flaky = _flaky(view.report)
    rows = [f"| {_code(test)} | {_code(how)} |" for test, how in flaky.items()]
    header = ["", "Replayed several times, these sent different requests from run to run:", "",
              "| Test | How the runs differed |", "|---|---|"]  # fmt: skip
    return _Section(f"### Flaky agents ({len(rows)})", rows, header)


def _flaky(report: Report) -> dict[str, str]:
    found: dict[str, str] = {}
    for test in report["tests"]:
        how = replay_of(test).get("flaky")
        if how:
            found.setdefault(base_id(test["id"])[0], how)
    return found


def _md_failures(view: _View, links: _Links) -> _Section:
    rows = []
    for test in view.failures:
        where = links.location(test["file"], test["line"], in_table=False)
        title = f"- {where} {_code(test['id'], in_table=False)} ({test['outcome']})"
        message = view.clean(test.get("message"))
        if message:
            message = message if len(message) <= BLOCK_CHARS else message[: BLOCK_CHARS - 1] + "…"
            # A word joiner keeps a line of the message from reading as an HTML comment such as the
            # sticky marker to a program searching the body; the fence shows it as it was.
            message = message.replace("<!--", "<\u2060!--")
            opening, closing = _fence(message)
            rows.append(
                "\n".join([title, f"  {opening}", *(f"  {m}" for m in message.splitlines()), f"  {closing}"])
            )
        else:
            rows.append(title)
    return _Section(f"### Failures ({len(rows)})", rows, [""])


def _md_not_evaluated(view: _View, links: _Links) -> _Section:
    rows = [
        f"| {links.location(t['file'], t['line'])} | {_code(t['id'])} | {_code(view.clean(t.get('reason')))} |"
        for t in view.not_evaluated
    ]
    header = ["", "| Where | Test | Reason |", "|---|---|---|"]
    return _Section(f"### Not evaluated ({len(rows)})", rows, header)


def _tests_cell(ids: list[str], shown: int = 3) -> str:
    if not ids:
        return "—"
    more = f" +{len(ids) - shown} more" if len(ids) > shown else ""
    return ", ".join(_code(i) for i in ids[:shown]) + more


def _md_policy(view: _View) -> _Section:
    if not view.verdict:
        return _Section("", [])
    rows = []
    for r in view.verdict["rules"]:
        result = {"ok": "ok", "blocked": "**blocked**", "not_evaluated": "**not evaluated**"}[r["status"]]
        detail = f" ({_cell(r['detail'])})" if r.get("detail") else ""
        rows.append(
            f"| {r['rule']} | {_code(r['scope'])} | {_fmt_limit(r['limit'])} | {_fmt_limit(r['actual'])} "
            f"| {result}{detail} | {_tests_cell(r['tests'])} |"
        )
    header = ["", "| Rule | Scope | Limit | Actual | Result | Tests |", "|---|---|---|---|---|---|"]
    return _Section(f"### Policy: {view.verdict['verdict'].replace('_', ' ')}", rows, header)


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


def _md_fixtures(view: _View) -> _Section:
    rows = [f"| {' | '.join(cells)} |" for c in view.fixture_changes for cells in _fixture_rows(c, _code)]
    header = [
        "",
        "What the re-recorded fixtures in this change altered:",
        "",
        "| Fixture | Call | Change | Components | Response |",
        "|---|---|---|---|---|",
    ]
    return _Section(f"### Re-recorded fixtures ({len(view.fixture_changes)})", rows, header)


def _md_paths(view: _View) -> _Section:
    """Each re-recorded fixture's calls, base against head, and each missed fixture's recorded calls
    with the call that missed marked, as collapsed Mermaid diagrams. Labels keep an alphabet without
    backticks or markup (`fixtures.sequence.label`)."""
    rows = [
        _diagram(f"{label(c['name'])}: {label(c['status'])}", [Marked.of_json(r) for r in c["path"]])
        for c in view.fixture_changes
        if c.get("path")
    ]
    recorded = view.report["summary"].get("fixtures") or {}
    for test in view.misses:
        replay = test["replay"]
        miss = miss_of(test)
        facts = recorded.get(miss.get("fixture") or "")
        rows_of = facts.get("path") if facts else None
        if rows_of:
            where = f"model call {replay.get('replayed', 0) + 1}"
            title = f"{label(name_of(miss['fixture']))}: missed at {where} in {html.escape(test['id'])}"
            rows.append(
                _diagram(title, missed_at(rows_of, replay.get("replayed", 0), miss.get("component") or ""))
            )
    return _Section(f"### The agent's path ({len(rows)})", rows, [""])


def _diagram(title: str, marked: list[Marked]) -> str:
    return f"<details><summary>{title}</summary>\n\n```mermaid\n{mermaid(marked)}\n```\n\n</details>"


def _md_freshness(view: _View) -> _Section:
    """Each replayed fixture's age and the models that answered, the oldest first (what trimming
    keeps), so a reviewer sees what the replays stand in for."""
    recorded = view.report["summary"].get("fixtures") or {}
    aged = sorted(recorded.items(), key=lambda item: -(age_days(item[1]["recorded_at"]) or 0))
    rows = [
        f"| {_code(name_of(path))} | {_age_words(facts['recorded_at'])} | "
        f"{', '.join(_code(label(m, 80)) for m in facts['models']) or '—'} |"
        for path, facts in aged
    ]
    header = ["", "| Fixture | Recorded | Models (asked → answered) |", "|---|---|---|"]
    return _Section(f"### Fixtures replayed ({len(rows)})", rows, header)


def _age_words(recorded_at: str | None) -> str:
    age = age_days(recorded_at)
    return (
        "unknown" if age is None or recorded_at is None else f"{recorded_at[:10]} ({counted(age, 'day')} ago)"
    )


# --- text ----------------------------------------------------------------------------------------


def _flat(text: str | None, limit: int = CELL_CHARS) -> str:
    flat = " ".join((text or "").split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _text(view: _View, links: None) -> tuple[list[str], list[_Section]]:
    del links
    report = view.report
    head = [
        report_summary_line(report),
        f"tests: {_outcome_counts(report)}",
        f"egress: {_egress_words(report)}",
        *(f"drift: {line}" for line in _drift_words(report)),
    ]
    if view.verdict:
        head.append(
            f"policy: {view.verdict['verdict']}{_blocking_rules(view.verdict)} ({view.verdict['policy']})"
        )
    misses = []
    for t in view.misses:
        miss = miss_of(t)
        message = view.clean(miss.get("message")) or f"{t['replay']['misses']} replay miss(es)"
        misses.append(f"  {_where(*miss_location(t))}  {t['id']}\n    {_flat(message)}")
    failures = [
        f"  {_where(t['file'], t['line'])}  {t['id']} ({t['outcome']})"
        + (f"\n    {_flat(view.clean(t.get('message')), BLOCK_CHARS)}" if t.get("message") else "")
        for t in view.failures
    ]
    skipped = [
        f"  {_where(t['file'], t['line'])}  {t['id']}: {_flat(view.clean(t.get('reason'))) or 'not evaluated'}"
        for t in view.not_evaluated
    ]
    changes = [
        "  " + "  ".join(cells) for c in view.fixture_changes for cells in _fixture_rows(c, lambda s: s)
    ]
    sections = [
        _Section(f"replay misses ({len(misses)}):", misses),
        _Section(f"failures ({len(failures)}):", failures),
        _Section(f"not evaluated ({len(skipped)}):", skipped),
        _policy_text(view.verdict),
        _Section(f"re-recorded fixtures ({len(view.fixture_changes)}):", changes),
    ]
    return head, [s for s in sections if s.rows]


def _policy_text(verdict: dict[str, Any] | None) -> _Section:
    if not verdict:
        return _Section("", [])
    header, *rows = _verdict_rows(verdict)
    return _Section(f"policy: {verdict['verdict']}", rows, [header])


# --- the policy verdict on its own (`attest policy evaluate`) --------------------------------------

_VERDICT_COLUMNS = ("RULE", "SCOPE", "LIMIT", "ACTUAL", "RESULT", "TESTS")


def _verdict_cells(rule: dict[str, Any]) -> tuple[str, ...]:
    tests = rule["tests"]
    shown = ", ".join(tests[:3]) + (f" +{len(tests) - 3} more" if len(tests) > 3 else "")
    result = rule["status"].replace("_", " ") + (f" ({rule['detail']})" if rule.get("detail") else "")
    return (
        rule["rule"],
        rule["scope"],
        _fmt_limit(rule["limit"]),
        _fmt_limit(rule["actual"]),
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
