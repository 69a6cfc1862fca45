"""A real browser for what renders: Debian's Chromium driven by Playwright (no browser download).

Without Chromium a test using the `browser` fixture skips with one reason; `.ci/run` installs it and
sets ATTEST_REQUIRE_BROWSER=1, so there it fails instead. Test modules load this with
`pytest_plugins = ["browser"]`.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


@pytest.fixture(scope="module")
def browser() -> Iterator:
    if not Path(CHROMIUM).exists():
        if os.environ.get("ATTEST_REQUIRE_BROWSER") == "1":
            pytest.fail("Chromium is not installed (ATTEST_REQUIRE_BROWSER=1)", pytrace=False)
        pytest.skip("needs Chromium (Debian's chromium package) to open the page in a real browser")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as playwright:
        flags = [
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
        ]
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=flags)
        yield chromium
        chromium.close()
