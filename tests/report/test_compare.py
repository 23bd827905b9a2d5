"""Comparison pages: any runs side by side through the real compare notebook (papermill, nbconvert)."""

from __future__ import annotations

import re
from datetime import datetime, timezone

import report_assertions as ra

from workbook.cli import main
from workbook.report.render import render_report


def test_compare_two_runs_renders_one_page_with_rows_curves_and_links(make_run, tmp_path, capsys):
    first = make_run("passed", started=datetime(2026, 11, 29, tzinfo=timezone.utc))
    second = make_run("regressed", started=datetime(2026, 11, 30, tzinfo=timezone.utc))
    for run in (first, second):
        render_report(run)
    out = tmp_path / "cmp"

    assert main(["compare", str(first), str(second), "--out", str(out)]) == 0

    page_path = capsys.readouterr().out.strip().splitlines()[-1]
    assert page_path == str(out / "comparison.html")
    page = (out / "comparison.html").read_text()
    rows = re.findall(r'<tr data-run="([^"]+)">', page)
    assert rows == [first.name, second.name]
    assert {"compare:actor/pg_clipfrac", "compare:actor/pg_loss", "compare:timing_s/step"} <= (
        ra.panels(page))
    assert page.count('href="../runs/gspo-tiny-1n1cpu-fsdp2-vllm/') == 2  # links to reports
    assert 'src="http' not in page and "papermill" not in page


def test_compare_needs_two_runs_or_a_sweep(make_run, capsys):
    assert main(["compare", str(make_run("passed"))]) == 2
    assert "two or more run directories" in capsys.readouterr().err


def test_the_index_lists_comparisons(make_run, tmp_path):
    from workbook.report.index import write_index

    runs = tmp_path / "runs"
    a, b = make_run("passed"), make_run("ppo", run_id="20261130T000000Z-ppo000")
    assert main(["compare", str(a), str(b), "--out", str(runs / "comparisons" / "c1")]) == 0

    page = write_index(runs).read_text()

    assert 'data-comparison="comparisons/c1"' in page
    assert 'href="comparisons/c1/comparison.html"' in page
