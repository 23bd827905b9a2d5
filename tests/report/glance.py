"""What a reader sees of a page in a real browser, at a width: the checks of issue 28.

Shared by the browser tests on hand-made runs (tests/report/test_browser.py) and on the real
runs of the smoke suite (tests/e2e/test_published_site.py). Each function takes a Playwright
page already open at its viewport and returns what it measured, so a failing assertion says
which element was where.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

WIDTHS = {"desktop": (1280, 800), "phone": (390, 844)}  # name -> viewport (width, height)


def screenshot_dir(fallback: Path) -> Path:
    """Where screenshots go: $WORKBOOK_SCREENSHOTS when set (CI keeps it), else ``fallback``
    (the test's pytest tmp dir)."""
    folder = Path(os.environ.get("WORKBOOK_SCREENSHOTS") or fallback)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def overflow(page: Any) -> tuple[int, int]:
    """(the document's scroll width, the viewport's width): the first is never larger."""
    width, inner = page.evaluate("[document.scrollingElement.scrollWidth, window.innerWidth]")
    return int(width), int(inner)


def bottom(page: Any, selector: str) -> float:
    """Where the first element matching ``selector`` ends, from the top of the document."""
    box = page.locator(selector).first.bounding_box()
    assert box is not None, f"{selector} is not shown"
    return float(box["y"] + box["height"])


def top(page: Any, selector: str) -> float:
    box = page.locator(selector).first.bounding_box()
    assert box is not None, f"{selector} is not shown"
    return float(box["y"])


def first_screen_problems(page: Any, verdict: str, fit: int | None = None) -> list[str]:
    """What a report's first viewport lacks: the verdict, and on a red run each failing check
    (the first ``fit`` of them when given: a phone's screen holds a few lines of a night that
    failed nine checks; the rest must still come before the curves)."""
    height = page.viewport_size["height"]
    problems = []
    if bottom(page, "#verdict-banner .wb-verdict") > height:
        problems.append("the verdict is below the first screen")
    if verdict in ("regressed", "failed"):
        rows = page.locator("[data-failing-check]")
        if rows.count() == 0 and not (verdict == "failed" and page.locator("[data-diagnosis]")
                                      .count() and bottom(page, "[data-diagnosis]") <= height):
            problems.append("no failing check (nor, for a failed run, its diagnosis) in the "
                            "first screen")
        for i in range(rows.count() if fit is None else min(fit, rows.count())):
            box = rows.nth(i).bounding_box()
            if box is None or box["y"] + box["height"] > height:
                problems.append(f"failing check {rows.nth(i).get_attribute('data-failing-check')}"
                                " is below the first screen")
        plots = (top(page, '[data-section="plots"]')
                 if page.locator('[data-section="plots"]').count() else None)
        for i in range(rows.count() if plots is not None else 0):
            box = rows.nth(i).bounding_box()
            if box is None or box["y"] > plots:
                problems.append(f"failing check {rows.nth(i).get_attribute('data-failing-check')}"
                                " comes after the curves")
    return problems


def plots_before_checks(page: Any) -> bool:
    """The curves start above the full checks table."""
    return top(page, '[data-section="plots"]') < top(page, '[data-section="checks"]')
