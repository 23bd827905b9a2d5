"""A real headless Chromium opens the index and reports from file:// and from a local HTTP server.

Debian's ``chromium`` (``make browser`` installs it) driven by Playwright. Screenshots land in
``test-artifacts/`` (gitignored) for people and CI to look at.
"""

from __future__ import annotations

import functools
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from report_fixtures import write_run

from tests.chromium import ARTIFACTS, chromium
from workbook.report.index import write_index
from workbook.report.render import render_report

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """Three runs (passed, regressed, failed) with reports, and their index."""
    root = tmp_path_factory.mktemp("site") / "runs"
    from datetime import datetime, timedelta, timezone

    t0 = datetime(2026, 11, 27, 2, 0, tzinfo=timezone.utc)
    for i, kind in enumerate(("passed", "regressed", "failed")):
        render_report(write_run(root, kind, started=t0 + timedelta(days=i)))
    write_index(root)
    return root


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    with chromium() as instance:
        yield instance


@pytest.fixture(scope="module")
def server(site: Path) -> Iterator[str]:
    """A static HTTP server on a free port, serving the runs root; stopped afterwards."""
    handler = functools.partial(_QuietHandler, directory=str(site))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()
    thread.join(timeout=5)


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


def _open(browser, url: str, allowed_prefix: str, shot: str):  # type: ignore[no-untyped-def]
    """Load a page; fail on console errors, page errors, failed or off-site requests."""
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    problems: list[str] = []
    page.on(
        "console",
        lambda m: problems.append(f"console {m.type}: {m.text}") if m.type == "error" else None,
    )
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    page.on("requestfailed", lambda r: problems.append(f"request failed: {r.url}"))
    page.on(
        "request",
        lambda r: (
            None
            if r.url.startswith((allowed_prefix, "data:"))
            else problems.append(f"off-site: {r.url}")
        ),
    )
    page.goto(url, wait_until="load")
    broken = page.evaluate(
        "Array.from(document.images).filter(i => !(i.complete && i.naturalWidth > 0)).length"
    )
    images = page.evaluate("document.images.length")
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / shot), full_page=False)
    return page, problems, images, broken


@pytest.mark.parametrize("kind", ["file", "http"])
def test_index_opens_cleanly_and_filters(browser, site, server, kind):
    url = (site / "index.html").as_uri() if kind == "file" else f"{server}/index.html"
    prefix = "file://" if kind == "file" else server
    page, problems, images, broken = _open(browser, url, prefix, f"index-{kind}.png")
    assert problems == [] and broken == 0 and images >= 1
    assert page.locator("#runs tbody tr").count() == 3
    page.select_option("#f-verdict", "failed")
    assert page.locator("#runs tbody tr:visible").count() == 1
    assert page.locator("#f-count").inner_text() == "1 shown"
    page.select_option("#f-verdict", "")
    page.locator("#runs a").first.click()  # the newest run's report, through a relative link
    page.wait_for_load_state("load")
    assert page.locator("#verdict-banner").is_visible()
    assert problems == []
    page.close()


@pytest.mark.parametrize("verdict", ["passed", "regressed", "failed"])
@pytest.mark.parametrize("kind", ["file", "http"])
def test_report_opens_cleanly_with_banner_in_view(browser, site, server, kind, verdict):
    report = next(p for p in site.glob("*/*/report.html") if verdict[:6] in p.parent.name)
    url = report.as_uri() if kind == "file" else f"{server}/{report.relative_to(site).as_posix()}"
    prefix = "file://" if kind == "file" else server
    page, problems, images, broken = _open(browser, url, prefix, f"report-{verdict}-{kind}.png")
    assert problems == [] and broken == 0
    assert images >= (0 if verdict == "failed" else 7)
    banner = page.locator("#verdict-banner")
    assert banner.is_visible() and verdict.upper() in banner.inner_text()
    box = banner.bounding_box()
    assert box is not None and box["y"] + box["height"] <= 800  # readable without scrolling
    page.close()


def test_screenshots_of_both_pages_were_saved(browser, site):
    for name in ("index-file.png", "report-regressed-file.png"):
        if not (ARTIFACTS / name).exists():  # run alone: take them now
            _open(browser, (site / "index.html").as_uri(), "file://", "index-file.png")[0].close()
            regressed = next(site.glob("*/*regres/report.html"))
            _open(browser, regressed.as_uri(), "file://", "report-regressed-file.png")[0].close()
        assert (ARTIFACTS / name).read_bytes().startswith(b"\x89PNG")
