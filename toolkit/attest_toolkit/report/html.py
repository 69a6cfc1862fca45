"""`attest report html`: one self-contained page a reviewer opens from disk or from the run's artifacts.

It shows what the comment shows (the summary line, misses with their component, failures, which tests
ran with which injected faults, the policy verdict, what re-recorded fixtures changed) plus every test
with its duration and verdict and each fixture's calls in order. The facts come from the same view as
the comment (`report.summary.facts`), so the page never says something the comment does not, and
failure text is redacted there. It loads nothing: no script, font or style from the network, so it
works offline and no report string can fetch one.
Every string from the report or a fixture is HTML-escaped.
"""

from __future__ import annotations

from html import escape
from pathlib import Path
from typing import Any

from .. import __version__
from ..errors import AttestError
from ..fixtures import document as fx
from ..fixtures.sequence import Marked, Step, sequence
from ..progress import counted
from .build import Report, replay_of
from .summary import facts, limit_words

STYLE = """
:root { color-scheme: light dark; --line: #8884; --mark: #d97706; --bad: #dc2626; --good: #16a34a; }
body { font: 15px/1.5 system-ui, sans-serif; margin: 0 auto; max-width: 72rem; padding: 1rem; }
h1 { font-size: 1.4rem; } h2 { font-size: 1.15rem; margin-top: 2rem; }
code, .line { font-family: ui-monospace, monospace; overflow-wrap: anywhere; }
.line { font-size: 1.05rem; padding: .5rem .75rem; border: 1px solid var(--line); border-radius: 6px; }
.scroll { overflow-x: auto; } .scroll:focus { outline: 2px solid var(--mark); }
table { border-collapse: collapse; width: 100%; } th, td { text-align: left; padding: .3rem .5rem;
  border-bottom: 1px solid var(--line); vertical-align: top; overflow-wrap: break-word; }
th { white-space: nowrap; }
.failed, .error, .removed, .dropped { color: var(--bad); } .passed, .added { color: var(--good); }
.changed, .not_evaluated { color: var(--mark); }
a:focus, summary:focus { outline: 2px solid var(--mark); }
.skip { position: absolute; left: -10000px; } .skip:focus { position: static; }
ol.path li { margin: .2rem 0; overflow-wrap: anywhere; }
"""


def render_html(
    report: Report,
    *,
    root: Path | None = None,
    verdict: Any = None,
    fixture_changes: list[dict[str, Any]] | None = None,
) -> str:
    """The page. `root`: the repository the report's fixture paths are relative to, to show each
    fixture's calls (None: not shown)."""
    view = facts(report, verdict=verdict, fixture_changes=fixture_changes)
    sections = [
        _misses(view),
        _failures(view),
        _not_evaluated(view),
        _faults(view),
        _tests(report),
        _policy(view),
        _changes(view),
        _fixtures(report, root),
    ]
    shown = [s for s in sections if s]
    toc = "".join(f'<li><a href="#{sid}">{escape(title)}</a></li>' for sid, title, _ in shown)
    body = "".join(
        f'<section id="{sid}" aria-labelledby="{sid}-h"><h2 id="{sid}-h">{escape(title)}</h2>{html}</section>'
        for sid, title, html in shown
    )
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        "<title>attest report</title>"
        # No request may leave the page: a report string cannot load anything even if it got through.
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">"
        f"<style>{STYLE}</style></head><body>"
        '<a class="skip" href="#main">Skip to the results</a>'
        f'<header><h1>attest report</h1><p class="line">{escape(view["summary_line"])}</p>'
        f'{_head(view)}<nav aria-label="Sections"><ul>{toc}</ul></nav></header>'
        f'<main id="main" tabindex="-1">{body}</main>'
        f"<footer><p>attest-toolkit {escape(__version__)}{_commit(report)}</p></footer>"
        "</body></html>\n"
    )


def _head(view: dict[str, Any]) -> str:
    outcomes = ", ".join(f"{n} {o.replace('_', ' ')}" for o, n in view["outcomes"].items())
    egress = view["egress"]
    verified = "isolation verified" if egress.get("isolation_verified") else "isolation not verified"
    items = [
        f"Tests: {view['tests']}" + (f" ({outcomes})" if outcomes else ""),
        f"Egress: {egress['mode']}, {verified}",
    ]
    if view.get("verdict"):
        items.append(f"Policy: {view['verdict']['verdict'].replace('_', ' ')}")
    return "<ul>" + "".join(f"<li>{escape(i)}</li>" for i in items) + "</ul>"


def _commit(report: Report) -> str:
    commit = (report["summary"].get("environment") or {}).get("commit")
    return f" · commit <code>{escape(str(commit))}</code>" if commit else ""


def _table(caption: str, header: list[str], rows: list[list[str]]) -> str:
    """A table in a region that scrolls sideways on a narrow screen and can be scrolled by keyboard."""
    head = "".join(f'<th scope="col">{escape(h)}</th>' for h in header)
    body = "".join("<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>" for row in rows)
    return (
        f'<div class="scroll" tabindex="0" role="region" aria-label="{escape(caption)}">'
        f'<table><caption class="skip">{escape(caption)}</caption><thead><tr>{head}</tr></thead>'
        f"<tbody>{body}</tbody></table></div>"
    )


def _where(file: str, line: int | None) -> str:
    return f"<code>{escape(file)}{f':{line}' if line else ''}</code>"


def _misses(view: dict[str, Any]) -> tuple[str, str, str] | None:
    rows = [
        [
            _where(m["file"], m["line"]),
            f"<code>{escape(m['id'])}</code>",
            escape(m.get("component") or ""),
            escape(", ".join(m.get("paths") or [])),
            f"<code>{escape(m.get('message') or '')}</code>",
        ]
        for m in view["misses"]
    ]
    if not rows:
        return None
    return (
        "misses",
        f"Replay misses ({len(rows)})",
        _table("Replay misses", ["Where", "Test", "Component", "Paths", "Miss"], rows),
    )


def _failures(view: dict[str, Any]) -> tuple[str, str, str] | None:
    rows = [
        [
            _where(t["file"], t["line"]),
            f"<code>{escape(t['id'])}</code>",
            f'<span class="{t["outcome"]}">{escape(t["outcome"])}</span>',
            f"<code>{escape(t.get('text') or '')}</code>",
        ]
        for t in view["failures"]
    ]
    return (
        (
            "failures",
            f"Failures ({len(rows)})",
            _table("Failures", ["Where", "Test", "Outcome", "Message"], rows),
        )
        if rows
        else None
    )


def _not_evaluated(view: dict[str, Any]) -> tuple[str, str, str] | None:
    rows = [
        [_where(t["file"], t["line"]), f"<code>{escape(t['id'])}</code>", escape(t.get("text") or "")]
        for t in view["not_evaluated"]
    ]
    if not rows:
        return None
    return (
        "not-evaluated",
        f"Not evaluated ({len(rows)})",
        _table("Not evaluated", ["Where", "Test", "Reason"], rows),
    )


def _faults(view: dict[str, Any]) -> tuple[str, str, str] | None:
    """Which tests ran with which injected faults, as the comment's Faults line: a pass here is the
    agent's recovery."""
    rows = [
        [
            _where(t["file"], t["line"]),
            f"<code>{escape(t['id'])}</code>",
            f'<span class="{escape(t["outcome"])}">{escape(t["outcome"].replace("_", " "))}</span>',
            f"<code>{escape(t['text'])}</code>",
        ]
        for t in view["faults"]
    ]
    if not rows:
        return None
    header = ["Where", "Test", "Verdict", "Faults (the request each met)"]
    return "faults", f"Tests run with faults ({len(rows)})", _table("Tests run with faults", header, rows)


def _tests(report: Report) -> tuple[str, str, str] | None:
    rows = []
    for t in report["tests"]:
        replay = replay_of(t)
        counts = (
            f"{replay.get('replayed', 0)} replayed · {replay.get('live', 0)} live · {replay.get('misses', 0)} missed"
            if replay
            else ""
        )
        rows.append(
            [
                f"<code>{escape(t['id'])}</code>",
                _where(t["file"], t["line"]),
                f'<span class="{escape(t["outcome"])}">{escape(t["outcome"].replace("_", " "))}</span>',
                f"{t['duration']:.2f} s",
                escape(counts),
                escape(", ".join(replay.get("fixtures") or [])),
            ]
        )
    if not rows:
        return None
    header = ["Test", "Where", "Verdict", "Duration", "Replay", "Fixtures"]
    return "tests", f"Tests ({len(rows)})", _table("Tests", header, rows)


def _policy(view: dict[str, Any]) -> tuple[str, str, str] | None:
    verdict = view.get("verdict")
    if not verdict:
        return None
    rows = [
        [
            escape(r["rule"]),
            escape(limit_words(r.get("limit"))),
            escape(limit_words(r.get("actual"))),
            f'<span class="{"passed" if r["status"] == "ok" else "failed"}">{escape(r["status"])}</span>',
        ]
        for r in verdict["rules"]
    ]
    title = f"Policy: {verdict['verdict'].replace('_', ' ')}"
    return "policy", title, _table("Policy rules", ["Rule", "Limit", "Actual", "Result"], rows)


def _changes(view: dict[str, Any]) -> tuple[str, str, str] | None:
    changes = view["fixture_changes"]
    if not changes:
        return None
    parts = []
    for change in changes:
        rows = [
            [
                escape(r["change"]),
                escape(f"{r['method']} {r['path']}"),
                escape(", ".join(r["components"]) or "-"),
                "yes" if r["response_changed"] else "no",
            ]
            for r in change["interactions"]
        ]
        path = _path_list([Marked.of_json(r) for r in change.get("path") or []])
        parts.append(
            f"<h3><code>{escape(change['name'])}</code>: {escape(change['status'])}</h3>"
            + (
                _table(
                    f"Calls of {change['name']} that changed",
                    ["Change", "Call", "Components", "Response changed"],
                    rows,
                )
                if rows
                else ""
            )
            + path
        )
    return "changes", f"Re-recorded fixtures ({len(changes)})", "".join(parts)


def _fixtures(report: Report, root: Path | None) -> tuple[str, str, str] | None:
    """Each fixture the tests replayed (report paths are repository-relative) with its calls."""
    paths = sorted({p for t in report["tests"] for p in replay_of(t).get("fixtures") or []})
    if not paths or root is None:
        return None
    parts = []
    for path in paths:
        doc = _read(root, path)
        steps = sequence(doc) if doc else []
        inner = _path_list([Marked(s, "same") for s in steps]) if doc else "<p>Not readable here.</p>"
        calls = counted(len(steps), "call") if doc else "not found"
        parts.append(
            f"<details><summary><code>{escape(fx.name_of(path))}</code> · {calls}</summary>{inner}</details>"
        )
    return "fixtures", f"Fixtures ({len(paths)})", "".join(parts)


def _read(root: Path, path: str) -> fx.Fixture | None:
    """The fixture at `path` under `root`; only a relative path inside it (a report is input too)."""
    relative = Path(path)
    if relative.is_absolute() or ".." in relative.parts:
        return None
    try:
        return fx.read_fixture(root / relative)
    except AttestError:
        return None


def _path_list(marked: list[Marked]) -> str:
    items = "".join(f'<li class="{m.change}">{_step_words(m.step)}{_mark(m)}</li>' for m in marked)
    return f'<ol class="path">{items}</ol>'


def _step_words(step: Step) -> str:
    reply = f" → {escape(step.reply())}" if step.reply() else ""
    return f"<strong>{escape(step.actor)}</strong>: {escape(step.text())}{reply}"


def _mark(m: Marked) -> str:
    if m.change == "same":
        return ""
    return f" <em>({escape(m.change)}{': ' + escape(m.note) if m.note else ''})</em>"
