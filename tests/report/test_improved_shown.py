"""``improved`` is shown wherever a verdict is: the banner, the checks table, the stylesheet and
the index, in its own blue-green (not the pass green), readable on the page."""

from __future__ import annotations

import html
import json
import re
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
import report_assertions as ra
from report_fixtures import write_run

from workbook.report import sections
from workbook.report.index import write_index
from workbook.report.page import page
from workbook.report.palette import STATUS_COLOURS, VERDICT_COLOURS, banner_style, status_style

T0 = datetime(2026, 11, 20, 2, 0, tzinfo=timezone.utc)
REASON = ("1 metric improved beyond its band: propose a baseline refresh: workbook baseline "
          "propose gspo-tiny-1n1cpu-fsdp2-vllm; improved: timing_s/step; all 3 checks passed or "
          "improved")
MESSAGE = ("mean over steps 2-4: 5, -1 (-16.67%) vs baseline 6; improved by 0.7 beyond 5.7 (the "
           "band's edge 6.3 mirrored about the baseline)")


def improved_run(root: Path, started: datetime | None = None) -> Path:
    """A passed hand-made run whose step-time row is judged improved, as checks.json says."""
    run = write_run(root, "passed", started=started)
    checks = json.loads((run / "checks.json").read_text())
    row = next(r for r in checks["rows"] if r["name"] == "timing_s/step vs baseline")
    row.update(status="improved", improved_beyond=5.7, message=MESSAGE)
    verdict = {"status": "improved", "reason": REASON, "exit_code": 0}
    checks["verdict"] = verdict
    (run / "checks.json").write_text(json.dumps(checks))
    info = json.loads((run / "run.json").read_text())
    (run / "run.json").write_text(json.dumps({**info, "verdict": verdict}))
    return run


def contrast(first: str, second: str) -> float:
    """The WCAG contrast ratio of two ``#rrggbb`` colours."""
    def luminance(colour: str) -> float:
        channels = [int(colour[i:i + 2], 16) / 255 for i in (1, 3, 5)]
        r, g, b = (c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels)
        return 0.2126 * r + 0.7152 * g + 0.0722 * b

    high, low = sorted((luminance(first), luminance(second)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def test_the_banner_says_improved_in_its_own_colour_with_the_reason(tmp_path: Path) -> None:
    shown = sections.banner(improved_run(tmp_path / "runs"))

    found = ra.banner(f"<body>{shown.html}")
    assert (found["verdict"], found["reason"]) == ("improved", REASON)
    assert 'class="wb-banner wb-improved"' in shown.html and ">IMPROVED</div>" in shown.html
    assert f'style="{html.escape(banner_style("improved"))}"' in shown.html


def test_the_checks_table_shows_the_improved_row_and_its_margin(tmp_path: Path) -> None:
    shown = sections.checks(improved_run(tmp_path / "runs"))

    assert ra.check_rows(f"<body>{shown.html}") == {
        "run completed": "pass", "actor/pg_loss finite": "pass",
        "timing_s/step vs baseline": "improved"}
    row = re.search(r'<tr class="wb-row-improved".*?</tr>', shown.html, re.DOTALL)
    assert row is not None
    assert f'style="{status_style("improved")}">IMPROVED</td>' in row.group(0)
    assert html.escape(MESSAGE) in row.group(0)
    assert "IMPROVED is a one-sided comparison" in shown.html
    assert not shown.data.figures  # only failed comparisons are drawn


def test_the_stylesheet_colours_the_improved_banner_and_status_cell() -> None:
    css = page("t", "")
    border, background = VERDICT_COLOURS["improved"]
    cell, text = STATUS_COLOURS["improved"]

    assert f".wb-improved{{border-color:{border};background:{background}}}" in css
    assert f".wb-row-improved td.wb-status{{background:{cell};color:{text};" in css


def test_improved_is_a_blue_green_apart_from_the_pass_green_and_readable() -> None:
    border, background = VERDICT_COLOURS["improved"]
    badge = re.search(r"\.b-improved\{background:(#[0-9a-fA-F]{6})\}", page("t", ""))

    assert VERDICT_COLOURS["improved"] != VERDICT_COLOURS["passed"]
    assert STATUS_COLOURS["improved"] != STATUS_COLOURS["pass"]
    red, green, blue = (int(border[i:i + 2], 16) for i in (1, 3, 5))
    assert red < green and red < blue and abs(green - blue) < 64  # a green-blue
    assert contrast(border, "#ffffff") >= 3  # the banner's edge on the page
    assert contrast("#1a1a1a", background) >= 7  # the banner's text on its background
    assert contrast(*STATUS_COLOURS["improved"]) >= 4.5  # the status cell
    assert badge is not None and contrast("#ffffff", badge.group(1)) >= 4.5  # the index badge


def test_the_index_filters_counts_and_badges_improved_runs_and_suite_entries(
        tmp_path: Path) -> None:
    root = tmp_path / "runs"
    improved_run(root, started=T0)
    write_run(root, "passed", started=T0 + timedelta(days=1))
    write_run(root, "regressed", started=T0 + timedelta(days=2))
    night = root / "suites" / "nightly" / "2026-11-22"
    night.mkdir(parents=True)
    (night / "suite.json").write_text(json.dumps({"suite": "nightly", "entries": [
        {"key": "01-a", "status": "improved", "exit_code": 0, "reason": REASON},
        {"key": "02-b", "status": "passed", "exit_code": 0, "reason": "all 3 checks passed"},
        {"key": "03-c", "status": "pending", "exit_code": None, "reason": ""}]}))

    index = write_index(root).read_text()

    verdicts = re.findall(r'<tr data-scenario="[^"]*" data-verdict="([^"]*)"', index)
    assert verdicts == ["regressed", "passed", "improved"]  # newest first
    options = re.search(r'<select id="f-verdict">(.*?)</select>', index, re.DOTALL)
    assert options is not None
    assert re.findall(r'value="([^"]+)"', options.group(1)) == ["passed", "improved", "regressed"]
    assert re.findall(r'data-count="([^"]+)">(\d+) ', index) == [
        ("passed", "1"), ("improved", "1"), ("regressed", "1")]
    assert index.count('<span class="badge b-improved">improved</span>') == 2  # run and entry
    assert "suite nightly · 2026-11-22 · exit 0" in index  # an improved night is green
    assert '<span class="badge b-pending">pending</span>' in index  # other words as before
    assert html.escape(REASON) in index


@pytest.mark.parametrize("word", ["passed", "regressed", "failed", "stopped", "running"])
def test_the_other_verdicts_keep_their_colours(word: str) -> None:
    assert VERDICT_COLOURS[word] != VERDICT_COLOURS["improved"]
    assert f".b-{word}{{background:" in page("t", "")
