"""`attest report html`, opened from disk in a real browser (Debian's Chromium driven by Playwright:
tests/browser.py)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import REPO, run_cli
from report_factory import FAULTS, make_miss, make_report, make_test, replay_facts

pytest_plugins = ["browser"]  # the browser fixture

FIXTURE = "tests/attest/fixtures/example.attest.json"
HOSTILE_ID = 'tests/test_x.py::test_y[<img src=x onerror="document.title=1">]'
SECRET = "sk-proj-" + "Zq9" * 16


@pytest.fixture(scope="module")
def page_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A report with a miss, a failure, a skip and a hostile test id, beside the fixture it replayed."""
    root = tmp_path_factory.mktemp("project")
    (root / FIXTURE).parent.mkdir(parents=True)
    shutil.copy(REPO / "examples" / "fixtures" / "example.attest.json", root / FIXTURE)
    miss = make_miss(component="params")
    tests = [
        make_test("tests/test_refund.py::test_refund", "passed", replay=replay_facts(2, fixtures=[FIXTURE])),
        make_test(
            "tests/test_refund.py::test_changed",
            "failed",
            message=miss["message"],
            replay=replay_facts(0, misses=1, miss=miss, fixtures=[FIXTURE]),
        ),
        make_test(HOSTILE_ID, "failed", message=f"boom: the key {SECRET} leaked"),
        make_test("tests/test_refund.py::test_auto", "not_evaluated", reason="replay_miss"),
    ]
    report = root / "attest-report.json"
    report.write_text(json.dumps(make_report(tests)), encoding="utf-8")
    out = root / "attest-report.html"
    done = run_cli(["report", "html", "--report", str(report), "-o", str(out)], cwd=root)
    assert done.returncode == 0, done.stderr
    return out


def open_page(browser, path: Path, width: int = 1200):
    page = browser.new_page(viewport={"width": width, "height": 900})
    errors: list[str] = []
    requests: list[str] = []
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("request", lambda request: requests.append(request.url))
    page.goto(path.as_uri())
    return page, errors, requests


def test_the_page_loads_from_disk_with_no_console_error_and_no_request(browser, page_file: Path):
    page, errors, requests = open_page(browser, page_file)
    assert errors == []
    assert requests == [page_file.as_uri()]
    assert page.title() == "attest report"
    assert (
        page.locator(".line").inner_text() == "2 replayed · 0 live model calls · $0.00 · 1 missed · 2 failed"
    )


def test_every_section_is_present_with_its_rows(browser, page_file: Path):
    page, _, _ = open_page(browser, page_file)
    headings = page.locator("main h2").all_inner_texts()
    assert headings == ["Replay misses (1)", "Failures (2)", "Not evaluated (1)", "Tests (4)", "Fixtures (1)"]
    assert page.locator("#misses td").nth(2).inner_text() == "params"
    assert "\tfailed\t0.25 s\t" in page.locator("#tests").inner_text()
    page.locator("#fixtures summary").click()
    calls = page.locator("#fixtures ol.path li").all_inner_texts()
    assert calls[0].startswith("model: chat/completions gpt-4o-mini → asks lookup_order (args ")
    assert "orders: tools/call lookup_order (args " in calls[2]


def test_report_strings_stay_text_and_secrets_are_redacted(browser, page_file: Path):
    page, _, _ = open_page(browser, page_file)
    assert page.locator("img").count() == 0
    assert page.title() == "attest report"
    assert HOSTILE_ID in page.locator("#tests").inner_text()
    assert SECRET not in page_file.read_text(encoding="utf-8")


def test_the_tests_that_ran_with_faults_are_shown_with_each_fault_and_the_request_it_met(
    browser, tmp_path: Path
):
    recovered = make_test("tests/test_refund.py::test_recovers", replay=replay_facts(2, faults=FAULTS))
    report = tmp_path / "attest-report.json"
    plain = make_test("tests/test_refund.py::test_refund", replay=replay_facts(1))
    report.write_text(json.dumps(make_report([recovered, plain])), encoding="utf-8")
    out = tmp_path / "attest-report.html"
    done = run_cli(["report", "html", "--report", str(report), "-o", str(out)], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    page, errors, _ = open_page(browser, out)
    assert errors == []
    assert page.locator(".line").inner_text().endswith(" · 2 faults injected")
    headings = ["Tests run with faults (1)", "Tests (2)", "Fixtures (1)"]
    assert page.locator("main h2").all_inner_texts() == headings
    assert "Tests run with faults (1)" in page.locator("nav").inner_text()
    assert page.locator("#faults tbody tr").count() == 1
    assert page.locator("#faults td").all_inner_texts() == [
        "tests/test_refund.py:10",
        "tests/test_refund.py::test_recovers",
        "passed",
        "status=429,retry-after=1 (request 1), every:pace=20 (request 3)",
    ]


def test_readable_at_400_px_wide(browser, page_file: Path):
    page, _, _ = open_page(browser, page_file, width=400)
    assert page.evaluate("document.documentElement.scrollWidth") <= 400
    for heading in page.locator("main h2").all():
        box = heading.bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 400
    size = page.evaluate("parseFloat(getComputedStyle(document.querySelector('td')).fontSize)")
    assert size >= 12


def test_usable_from_the_keyboard(browser, page_file: Path):
    page, _, _ = open_page(browser, page_file)
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.textContent") == "Skip to the results"
    page.keyboard.press("Enter")
    assert page.evaluate("document.activeElement.id") == "main"
    for _ in range(80):  # tab on to the fixture's collapsed calls and open them with Enter
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.tagName") == "SUMMARY":
            break
    else:
        pytest.fail("no collapsed section could be reached with Tab")
    page.keyboard.press("Enter")
    assert page.evaluate("document.activeElement.parentElement.open") is True
    # the wide tables scroll sideways from the keyboard: each is a focusable region with a name
    regions = page.locator("div.scroll[tabindex='0'][role='region'][aria-label]")
    assert regions.count() == 4
