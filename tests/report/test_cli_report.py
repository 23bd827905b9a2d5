"""``workbook report|index|publish`` through the real CLI entry point."""

from __future__ import annotations

import shutil
from pathlib import Path

import report_assertions as ra

from workbook.cli import main

LOGS = Path("/work/shared/verl_logs")
DATA = Path(__file__).parent / "data"


def test_report_imports_a_console_log_and_prints_its_path_last(tmp_path, capsys):
    log = tmp_path / "nightly.log"
    shutil.copyfile(DATA / "failed-run.log", log)
    assert main(["report", str(log), "--out", str(tmp_path / "runs")]) == 3  # the verdict's code
    printed = Path(capsys.readouterr().out.strip().splitlines()[-1])
    assert printed.name == "report.html" and printed.parent.parent.name == "imported"
    assert (printed.parent / "run.log").read_text() == log.read_text()
    facts = ra.assert_report(printed.parent, verdict="failed", has_metrics=False)
    assert "Configuration error" in facts["reason"]


def test_report_imports_a_jsonl_file(tmp_path, capsys):
    assert main(["report", str(DATA / "gspo-metrics.jsonl"), "--out", str(tmp_path)]) == 0
    report = Path(capsys.readouterr().out.strip().splitlines()[-1])
    assert (report.parent / "metrics.jsonl").is_file()
    assert {"policy_loss", "clip_fraction"} <= ra.panels(ra.report_html(report.parent))


def test_report_on_a_run_directory_and_copy_to_out(make_run, tmp_path, capsys):
    run = make_run("regressed")
    assert main(["report", str(run), "--out", str(tmp_path / "copy")]) == 0
    assert capsys.readouterr().out.strip().splitlines()[-1] == str(
        tmp_path / "copy" / "report.html"
    )
    assert (run / "report.html").is_file()


def test_report_on_a_missing_path_exits_2(tmp_path, capsys):
    assert main(["report", str(tmp_path / "nope")]) == 2
    assert "no such file" in capsys.readouterr().err


def test_index_and_publish_commands(make_run, tmp_path, capsys):
    run = make_run("passed")
    root = run.parent.parent
    assert main(["index", str(root)]) == 0
    assert capsys.readouterr().out.strip() == str(root / "index.html")
    assert main(["publish", str(root), str(tmp_path / "pub")]) == 0
    assert Path(capsys.readouterr().out.strip()) == tmp_path / "pub" / "index.html"
    assert main(["publish", str(tmp_path / "empty"), str(tmp_path / "pub2")]) == 2
