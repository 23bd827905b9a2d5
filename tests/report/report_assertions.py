"""Assertions on a rendered report, as functions any test can call on a run directory.

The report tests use them on hand-made run directories; the end-to-end tests call them on real
runs (passed, regressed, failed). Each reads ``report.html`` as plain text: the page is static,
so what is in the file is what a reader sees.
"""

from __future__ import annotations

import html
import re
from pathlib import Path

PANELS_ALWAYS = ("policy_loss", "clip_fraction", "rollout_timing")


def report_html(run_dir: Path) -> str:
    return (Path(run_dir) / "report.html").read_text(encoding="utf-8")


def banner(page: str) -> dict[str, str]:
    """The verdict, its reason and the banner's facts (scenario, date, duration, ...)."""
    block = re.search(
        r'<section\b([^>]*\bid="verdict-banner"[^>]*)>(.*?)</section>', page, re.DOTALL
    )
    assert block, "no verdict banner in the report"
    verdict = re.search(r'data-verdict="([^"]+)"', block.group(1))
    facts = {
        k: html.unescape(v)
        for k, v in re.findall(r'<dd data-fact="([^"]+)">(.*?)</dd>', block.group(2))
    }
    reason = re.search(r'<div class="wb-reason"[^>]*>(.*?)</div>', block.group(2), re.DOTALL)
    facts["verdict"] = verdict.group(1) if verdict else ""
    facts["reason"] = html.unescape(reason.group(1)) if reason else ""
    return facts


def banner_comes_first(page: str) -> bool:
    """No figure, table or section precedes the banner (readable without scrolling)."""
    body = page.split("<body>", 1)[1]
    before = body.split('id="verdict-banner"', 1)[0]
    return not re.search(r"<(img|table|figure|pre|details)\b|data-section=", before)


def check_rows(page: str) -> dict[str, str]:
    """Check name -> status (pass/fail/error) as shown in the checks table."""
    rows = {}
    for attrs in re.findall(r"<tr\b([^>]*\bclass=\"wb-row-[^>]*)>", page):
        status = re.search(r'class="wb-row-([a-z_]+)"', attrs)
        # the attribute is single-quoted when the check's name holds a double quote
        name = re.search(r"data-check=([\"'])(.*?)\1", attrs)
        if status and name:
            rows[html.unescape(name.group(2))] = status.group(1)
    return rows


def panels(page: str) -> set[str]:
    """Keys of the plot panels in the report (regression plots included, as ``regression:<metric>``)."""
    return set(re.findall(r'<figure\b[^>]*\bdata-panel="([^"]+)"', page))


def panel_metrics(page: str, key: str) -> list[str]:
    found = re.search(
        rf'<figure\b[^>]*data-panel="{re.escape(key)}"[^>]*>.*?data-metrics="([^"]*)"',
        page,
        re.DOTALL,
    )
    assert found, f"no panel {key}"
    return found.group(1).split()


def has_failure_section(page: str) -> bool:
    return 'data-section="failure"' in page


def log_tail(page: str) -> list[str]:
    found = re.search(r"<pre data-log-tail[^>]*>(.*?)</pre>", page, re.DOTALL)
    return html.unescape(found.group(1)).splitlines() if found else []


def assert_self_contained(page: str) -> None:
    """Nothing fetched from the network: no external script, stylesheet or image."""
    lowered = page.lower()
    for needle in (
        'src="http',
        "src='http",
        '<link href="http',
        'href="http',
        "@import",
        "url(http",
    ):
        assert needle not in lowered, f"external resource in report: {needle}"
    assert not re.search(r"<script[^>]*\bsrc=", lowered), "a script is loaded from a file"


def assert_report(run_dir: Path, *, verdict: str, has_metrics: bool = True) -> dict[str, str]:
    """The common contract: banner first with the verdict, self-contained, failure section iff failed."""
    page = report_html(run_dir)
    facts = banner(page)
    assert facts["verdict"] == verdict, facts
    assert facts["reason"].strip(), "the banner gives no reason"
    assert banner_comes_first(page)
    assert_self_contained(page)
    assert has_failure_section(page) == (verdict == "failed")
    if has_metrics:
        assert set(PANELS_ALWAYS) <= panels(page), panels(page)
    return facts
