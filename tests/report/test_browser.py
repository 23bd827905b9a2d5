"""A real headless Chromium opens the index and reports from file:// and from a local HTTP server.

The pages are read as a reader takes them in (issue 28): at a desktop's 1280 px and a phone's
390 px nothing scrolls sideways, the verdict and the failing checks are in the first screen, the
curves come before the checks table; in dark mode and in print too. Their screenshots go to
$WORKBOOK_SCREENSHOTS, else the test's tmp dir.

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
from glance import (
    WIDTHS,
    first_screen_problems,
    overflow,
    plots_before_checks,
    screenshot_dir,
    top,
)
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


def _report(site: Path, verdict: str) -> Path:
    return next(p for p in site.glob("*/*/report.html") if verdict[:6] in p.parent.name)


@pytest.fixture(scope="module")
def shots(tmp_path_factory) -> Path:
    return screenshot_dir(tmp_path_factory.mktemp("screenshots"))


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("verdict", ["passed", "regressed", "failed"])
def test_a_report_fits_the_width_and_shows_verdict_and_failures_first(
        browser, site, shots, verdict, width):
    w, h = WIDTHS[width]
    page = browser.new_page(viewport={"width": w, "height": h})
    page.goto(_report(site, verdict).as_uri(), wait_until="load")
    page.screenshot(path=str(shots / f"report-{verdict}-{w}.png"))

    assert overflow(page)[0] <= overflow(page)[1]
    assert first_screen_problems(page, verdict) == []
    assert plots_before_checks(page)
    assert page.locator("a.anchor-link").count() == 0  # no pilcrow beside the headings
    page.close()


@pytest.mark.parametrize("width", WIDTHS)
def test_the_index_fits_the_width_with_the_scenarios_first(browser, site, shots, width):
    w, h = WIDTHS[width]
    page = browser.new_page(viewport={"width": w, "height": h})
    page.goto((site / "index.html").as_uri(), wait_until="load")
    page.screenshot(path=str(shots / f"index-{w}.png"), full_page=True)

    assert overflow(page)[0] <= overflow(page)[1]
    assert top(page, "#nightly") < top(page, "#runs")
    assert top(page, "#nightly") < h  # the dashboard starts in the first screen
    row = page.locator("#nightly tbody tr").first
    # the ledger was stored when the regressed night's report first read it; write_run does not
    # add nights to it as the pipeline's judge step does, so it ends at the regressed night
    assert row.locator(".badge").inner_text() == "regressed"
    assert row.locator("[data-red-since]").count() == 1
    assert row.locator("svg.wb-spark circle").count() == 2  # one dot per night with numbers
    page.close()


def test_a_runs_reason_is_one_line_until_opened(browser, site):
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    page.goto((site / "index.html").as_uri(), wait_until="load")
    reason = page.locator('#runs tr[data-verdict="failed"] td.reason summary')
    closed = reason.bounding_box()
    reason.click()
    opened = reason.bounding_box()

    assert closed is not None and opened is not None
    assert closed["height"] < 30 < opened["height"]  # one line, then the whole text
    page.close()


def test_the_passing_checks_are_a_count_that_opens(browser, site):
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    page.goto(_report(site, "regressed").as_uri(), wait_until="load")
    rest = page.locator("details.wb-rest")
    assert rest.locator("> summary").inner_text() == "3 passed"
    assert not rest.locator("tr[data-check]").first.is_visible()
    rest.locator("> summary").click()
    assert rest.locator("tr[data-check]").first.is_visible()
    page.close()


def test_dark_mode_swaps_the_colours_and_keeps_text_readable(browser, site, shots):
    page = browser.new_page(viewport={"width": 1280, "height": 800}, color_scheme="dark")
    page.goto(_report(site, "regressed").as_uri(), wait_until="load")
    page.screenshot(path=str(shots / "report-regressed-dark.png"))
    colours = page.evaluate("""() => {
        const css = e => getComputedStyle(document.querySelector(e));
        return [css('body').backgroundColor, css('body').color,
                css('#verdict-banner').backgroundColor, css('#verdict-banner').color];
    }""")

    def light(rgb: str) -> float:
        r, g, b = (int(x) for x in rgb[rgb.index("(") + 1:rgb.index(")")].split(",")[:3])
        return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255

    body_bg, body_fg, banner_bg, banner_fg = (light(c) for c in colours)
    assert body_bg < 0.2 < 0.7 < body_fg
    assert banner_bg < 0.3 < 0.7 < banner_fg
    page.close()


def test_printing_opens_every_disclosure(browser, site):
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    page.goto(_report(site, "regressed").as_uri(), wait_until="load")
    passing = page.locator("details.wb-rest tr[data-check]").first
    assert not passing.is_visible()
    page.emulate_media(media="print")
    assert passing.is_visible()
    page.close()


@pytest.fixture(scope="module")
def other_pages(site: Path, tmp_path_factory) -> dict[str, Path]:
    """A bisect page and a comparison of the site's passed and regressed runs."""
    from tests.bisect.test_page import state
    from workbook.bisect.page import write_bisect_page
    from workbook.cli import main

    folder = tmp_path_factory.mktemp("pages")
    bisect = write_bisect_page(folder / "bisect.html", state(folder), folder)
    out = folder / "cmp"
    assert main(["compare", str(_report(site, "passed").parent),
                 str(_report(site, "regressed").parent), "--out", str(out)]) == 0
    return {"bisect": bisect, "comparison": out / "comparison.html"}


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("name", ["bisect", "comparison"])
def test_the_other_pages_share_the_style_and_fit_the_width(browser, other_pages, shots, name,
                                                           width):
    w, h = WIDTHS[width]
    page = browser.new_page(viewport={"width": w, "height": h})
    page.goto(other_pages[name].as_uri(), wait_until="load")
    page.screenshot(path=str(shots / f"{name}-{w}.png"), full_page=True)

    assert overflow(page)[0] <= overflow(page)[1]
    assert top(page, ".wb-banner, h1") < h
    assert page.evaluate("getComputedStyle(document.body).getPropertyValue('--fg')").strip()
    page.close()
