"""Debian's Chromium, driven by Playwright: one launch recipe for every browser test.

No browser download exists on this network, so the tests use ``/usr/bin/chromium`` (``make
browser`` installs it) with the flags that keep it off the network it cannot reach.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
ARTIFACTS = Path(__file__).resolve().parents[1] / "test-artifacts"  # screenshots, gitignored


@contextmanager
def chromium() -> Iterator[Any]:
    """A headless Chromium browser, closed afterwards; a missing binary fails the test."""
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} missing: run `make browser` (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            yield browser
        finally:
            browser.close()
