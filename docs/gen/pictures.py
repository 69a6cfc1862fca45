"""The documentation's pictures, taken in Chromium (Playwright, Debian's chromium: no browser download)
from what the code renders today: `make docs-pictures` runs this file.

- docs/img/node-suite.png: the Node suite's benchmark chart, bench/results/node-suite.svg;
- docs/img/benchmarks.png: the chart of the Python suite's rows of the Benchmarks page, drawn from the
  page's table by bench/chart.py;
- docs/img/pr-comment.png: the pull-request comment `attest github publish` posts for the sample run
  (docs/gen/pictures/report.json: the bundled example replayed by pytest in `attest sandbox --network
  none`, one test passing and one missing), with the bundled fixture re-recorded since the base, as
  GitHub renders it: the comment's markdown rendered by markdown-it-py into a GitHub-like stylesheet;
- docs/img/path-diagram.png: the agent's path of that re-recorded fixture, the Mermaid diagram the
  comment carries, drawn by Mermaid as GitHub draws it;
- docs/img/html-report.png: `attest report html` of the same run.

The sample run is recorded again with `python docs/gen/pictures.py --record-report` (then take the
pictures again). Each PNG keeps, in a text chunk, the SHA-256 of what it was taken from (the SVG, the markdown, the
Mermaid source, the HTML page); tests/unit/test_docs_site.py renders them again and fails naming each
picture whose source changed since it was taken.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib
from collections.abc import Callable
from html import escape
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
IMG = REPO / "docs" / "img"
SAMPLE_REPORT = Path(__file__).resolve().parent / "pictures" / "report.json"
EXAMPLE_FIXTURE = REPO / "examples" / "fixtures" / "example.attest.json"
FIXTURE_PATH = "tests/attest/fixtures/example.attest.json"  # where the sample run's tests found it
NODE_CHART = REPO / "bench" / "results" / "node-suite.svg"
BENCHMARKS_PAGE = REPO / "docs" / "benchmarks.md"
CHROMIUM = os.environ.get("CHROMIUM", shutil.which("chromium") or "/usr/bin/chromium")
# Mermaid's browser build, from the npm package `make docs-pictures` installs (GitHub draws with Mermaid too).
MERMAID_JS = REPO / ".venv" / "docs-mermaid" / "node_modules" / "mermaid" / "dist" / "mermaid.min.js"
SOURCE_KEY = b"attest-source-sha256"
REPO_NAME, HEAD_SHA = "attest-toolkit/attest-toolkit", "4f2c9e1d8b7a6c5e4f3a2b1c0d9e8f7a6b5c4d3e"


# --- the sample run ------------------------------------------------------------------------------------

SAMPLE_TESTS = """import agent


def test_refund(attest_replay):
    with attest_replay("example"):
        assert "O-1042" in agent.run("Was order O-1042 refunded twice?")


def test_refund_in_french(attest_replay):
    with attest_replay("example"):
        agent.run("La commande O-1042 a-t-elle été remboursée deux fois ?")
"""


def record_report() -> int:
    """Replay the bundled example in a project of two tests, with the network off as the action runs
    them (one passes, one misses: its question changed), and keep the report as the sample run's."""
    bin_dir = Path(sys.executable).parent
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        (root / FIXTURE_PATH).parent.mkdir(parents=True)
        shutil.copy(EXAMPLE_FIXTURE, root / FIXTURE_PATH)
        shutil.copy(REPO / "examples" / "agent.py", root / "tests" / "agent.py")
        (root / "tests" / "test_refund.py").write_text(SAMPLE_TESTS, encoding="utf-8")
        env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")} | {"CI": "true"}
        pytest = [str(bin_dir / "python"), "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"]
        command = [str(bin_dir / "attest"), "sandbox", "--network", "none", "--", *pytest]
        subprocess.run([*command, "--attest-report", "attest-report.json"], cwd=root, env=env, check=False)
        report = json.loads((root / "attest-report.json").read_text(encoding="utf-8"))
    SAMPLE_REPORT.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {SAMPLE_REPORT.relative_to(REPO)}")
    return 0


# --- what each picture is taken from -----------------------------------------------------------------


def sample_report() -> dict[str, Any]:
    from attest_toolkit.report.build import validate_report

    report = json.loads(SAMPLE_REPORT.read_text(encoding="utf-8"))
    validate_report(report)
    return report


def fixture_change() -> dict[str, Any]:
    """The bundled fixture as re-recorded in the sample pull request: its base recording asked the
    model once (the answer without looking the order up), the head's is the fixture as bundled."""
    from attest_toolkit.fixtures.diff import fixture_changes

    head = json.loads(EXAMPLE_FIXTURE.read_text(encoding="utf-8"))
    base = copy.deepcopy(head)
    base["channels"]["model"] = base["channels"]["model"][1:]
    base["channels"]["tool"] = []
    return fixture_changes(base, head, "example")


def comment_markdown() -> str:
    from attest_toolkit.github.links import blob_links
    from attest_toolkit.report.policy import evaluate
    from attest_toolkit.report.summary import render

    report = sample_report()
    change = fixture_change()
    links = blob_links(REPO_NAME, HEAD_SHA)
    return render(report, "markdown", links=links, verdict=evaluate(report), fixture_changes=[change])


def path_mermaid() -> str:
    """The Mermaid source of the re-recorded fixture's diagram, as the comment carries it."""
    text = comment_markdown()
    start = text.index("```mermaid\n") + len("```mermaid\n")
    return text[start : text.index("\n```", start)] + "\n"


def report_html() -> str:
    from attest_toolkit.report.html import render_html
    from attest_toolkit.report.policy import evaluate

    report = sample_report()
    with tempfile.TemporaryDirectory() as root:
        (Path(root) / FIXTURE_PATH).parent.mkdir(parents=True)
        shutil.copy(EXAMPLE_FIXTURE, Path(root) / FIXTURE_PATH)
        return render_html(
            report, root=Path(root), verdict=evaluate(report), fixture_changes=[fixture_change()]
        )


def python_suite_chart() -> str:
    """bench/chart.py's drawing of the Benchmarks page's rows but the Node suite's (which has its own)."""
    sys.path.insert(0, str(REPO / "bench"))  # bench/ is no package: its modules import each other by name
    try:
        import chart
    finally:
        sys.path.remove(str(REPO / "bench"))
    rows = chart.table_rows(BENCHMARKS_PAGE.read_text(encoding="utf-8"))
    return str(chart.svg([row for row in rows if row.benchmark != "node"]))


def sources() -> dict[str, Callable[[], str]]:
    """Each picture and the text it is taken from."""
    return {
        "node-suite.png": lambda: NODE_CHART.read_text(encoding="utf-8"),
        "benchmarks.png": python_suite_chart,
        "pr-comment.png": comment_markdown,
        "path-diagram.png": path_mermaid,
        "html-report.png": report_html,
    }


def digest(text: str) -> str:
    # A fixture's age is counted from today: read as N days, so a picture is stale when the code changes,
    # not when a day passes.
    steady = re.sub(r"\b\d+ (days?) ago\b", r"N \1 ago", text)
    return hashlib.sha256(steady.encode("utf-8")).hexdigest()


# --- the source's digest, kept in the PNG --------------------------------------------------------------


def with_source(png: bytes, text: str) -> bytes:
    """`png` with a tEXt chunk holding the digest of `text`, right after its header chunk."""
    data = SOURCE_KEY + b"\0" + digest(text).encode("ascii")
    chunk = struct.pack(">I", len(data)) + b"tEXt" + data + struct.pack(">I", zlib.crc32(b"tEXt" + data))
    header_end = 8 + 8 + 13 + 4  # the signature, then IHDR: length and type, 13 bytes of data, its CRC
    return png[:header_end] + chunk + png[header_end:]


def source_of(png: bytes) -> str | None:
    """The source digest a picture was taken from, or None when it carries none."""
    at = 8
    while at < len(png):
        length, kind = struct.unpack(">I4s", png[at : at + 8])
        data = png[at + 8 : at + 8 + length]
        if kind == b"tEXt" and data.startswith(SOURCE_KEY + b"\0"):
            return data[len(SOURCE_KEY) + 1 :].decode("ascii")
        at += 12 + length
    return None


def stale() -> list[str]:
    """The pictures under docs/img/ whose source changed since they were taken (or that are missing)."""
    out = []
    for name, make in sources().items():
        path = IMG / name
        if not path.exists() or source_of(path.read_bytes()) != digest(make()):
            out.append(f"docs/img/{name}")
    return out


# --- taking them ---------------------------------------------------------------------------------------

# GitHub's comment look, in the few rules a comment's markdown needs (its fonts, tables, code, details).
GITHUB_CSS = """
body { margin: 0; background: #fff; }
.comment { box-sizing: border-box; width: 900px; padding: 16px 24px; border: 1px solid #d0d7de;
  border-radius: 6px; margin: 12px; color: #1f2328; background: #fff;
  font: 14px/1.5 -apple-system, BlinkMacSystemFont, "Segoe UI", "Noto Sans", Helvetica, Arial, sans-serif; }
.author { margin: -16px -24px 16px; padding: 8px 16px; background: #f6f8fa; border-bottom: 1px solid #d0d7de;
  border-radius: 6px 6px 0 0; color: #59636e; }
.author b { color: #1f2328; }
h1, h2, h3, h4 { margin: 24px 0 16px; font-weight: 600; line-height: 1.25; }
h2 { font-size: 1.5em; padding-bottom: .3em; border-bottom: 1px solid #d1d9e0b3; }
h3 { font-size: 1.25em; } h4 { font-size: 1em; }
p, ul, ol, table, pre, details { margin: 0 0 16px; }
ul { padding-left: 2em; }
a { color: #0969da; text-decoration: none; }
code { padding: .2em .4em; font-size: 85%; background: #818b981f; border-radius: 6px;
  font-family: ui-monospace, SFMono-Regular, "SF Mono", Menlo, Consolas, "Liberation Mono", monospace; }
pre { padding: 16px; overflow: auto; font-size: 85%; background: #f6f8fa; border-radius: 6px; }
pre code { padding: 0; background: none; font-size: 100%; }
table { border-collapse: collapse; display: block; width: max-content; max-width: 100%; overflow: auto; }
th, td { padding: 6px 13px; border: 1px solid #d1d9e0; }
th { font-weight: 600; } tr:nth-child(2n) { background: #f6f8fa; }
summary { cursor: pointer; } .mermaid { background: #fff; }
"""


def comment_page(markdown: str) -> str:
    from markdown_it import MarkdownIt

    # GitHub's dialect as the publisher's tests render it: CommonMark, GFM tables, strikethrough, autolinks.
    body = (
        MarkdownIt("commonmark", {"linkify": True})
        .enable(["table", "strikethrough", "linkify"])
        .render(markdown)
    )
    # GitHub draws a mermaid block in place, inside its <details>: Mermaid does the same here.
    body = re.sub(
        r'<pre><code class="language-mermaid">(.*?)</code></pre>',
        r'<pre class="mermaid">\1</pre>',
        body,
        flags=re.S,
    )
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><style>{GITHUB_CSS}</style></head><body>"
        "<div class='comment'><div class='author'><b>github-actions</b> <span>bot</span> commented</div>"
        f"{body}</div>{_mermaid_script()}</body></html>"
    )


def mermaid_page(source: str) -> str:
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><style>{GITHUB_CSS}</style></head><body>"
        f"<div class='comment'><pre class='mermaid'>{escape(source)}</pre></div>{_mermaid_script()}</body></html>"
    )


def _mermaid_script() -> str:
    return (
        f"<script>{MERMAID_JS.read_text(encoding='utf-8')}</script>"
        "<script>mermaid.initialize({startOnLoad: false, theme: 'default'});"
        "mermaid.run({querySelector: '.mermaid'}).then(() => { document.body.dataset.drawn = '1'; });</script>"
    )


def take(
    browser: Any, name: str, html: str | None = None, url: str | None = None, *, width: int = 960
) -> bytes:
    page = browser.new_page(viewport={"width": width, "height": 600}, device_scale_factor=1)
    if url is not None:
        page.goto(url)
    else:
        page.set_content(html or "")
    if html is not None and "mermaid.run" in html:
        page.wait_for_selector("body[data-drawn='1']")
        page.evaluate("document.querySelectorAll('details').forEach((d) => { d.open = true; })")
    target = (
        page.locator(".comment")
        if html is not None and "class='comment'" in html
        else page.locator("svg, body").first
    )
    png = (
        target.screenshot(type="png")
        if url is None or name != "html-report.png"
        else page.screenshot(full_page=True)
    )
    page.close()
    return png


def main() -> int:
    if not Path(CHROMIUM).exists():
        print(f"docs-pictures: no Chromium at {CHROMIUM} (apt-get install chromium)", file=sys.stderr)
        return 3
    if not MERMAID_JS.exists():
        print(f"docs-pictures: no Mermaid at {MERMAID_JS} (make docs-pictures installs it)", file=sys.stderr)
        return 3
    from playwright.sync_api import sync_playwright

    IMG.mkdir(parents=True, exist_ok=True)
    made = {name: make() for name, make in sources().items()}
    with sync_playwright() as playwright, tempfile.TemporaryDirectory() as scratch:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        page_file = Path(scratch) / "attest-report.html"
        page_file.write_text(made["html-report.png"], encoding="utf-8")
        python_chart = Path(scratch) / "benchmarks.svg"
        python_chart.write_text(made["benchmarks.png"], encoding="utf-8")
        shots = {
            "node-suite.png": take(browser, "node-suite.png", url=NODE_CHART.as_uri()),
            "benchmarks.png": take(browser, "benchmarks.png", url=python_chart.as_uri()),
            "pr-comment.png": take(browser, "pr-comment.png", html=comment_page(made["pr-comment.png"])),
            "path-diagram.png": take(
                browser, "path-diagram.png", html=mermaid_page(made["path-diagram.png"])
            ),
            "html-report.png": take(browser, "html-report.png", url=page_file.as_uri(), width=1100),
        }
        browser.close()
    for name, png in shots.items():
        (IMG / name).write_bytes(with_source(png, made[name]))
        print(f"wrote docs/img/{name}")
    return 0


if __name__ == "__main__":
    sys.exit(record_report() if sys.argv[1:] == ["--record-report"] else main())
