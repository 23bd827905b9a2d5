"""index.html: newest first, filters, runs without a report, trends, atomic concurrent writes; publish."""

from __future__ import annotations

import json
import multiprocessing
import re
import time
from datetime import datetime, timedelta, timezone
from html.parser import HTMLParser
from pathlib import Path

from report_fixtures import write_run

from workbook.report.index import write_index
from workbook.report.publish import publish
from workbook.report.render import render_report

T0 = datetime(2026, 11, 20, 2, 0, tzinfo=timezone.utc)


def _rows(page: str) -> list[dict[str, str]]:
    return [
        dict(re.findall(r'data-(scenario|verdict|run)="([^"]*)"', attrs))
        for attrs in re.findall(r"<tr (data-scenario[^>]*)>", page)
    ]


def _nights(root: Path) -> list[Path]:
    kinds = ["passed", "passed", "regressed", "failed", "passed"]
    runs = [write_run(root, kind, started=T0 + timedelta(days=i)) for i, kind in enumerate(kinds)]
    runs.append(
        write_run(
            root,
            "ppo",
            scenario="ppo-tiny-2n1cpu-fsdp2-vllm-ray",
            started=T0 + timedelta(days=2, hours=1),
        )
    )
    return runs


def test_index_lists_runs_newest_first_with_verdicts_and_links(tmp_path):
    root = tmp_path / "runs"
    runs = _nights(root)
    for run in runs[:3]:
        render_report(run)
    page = write_index(root).read_text()
    rows = _rows(page)
    assert [r["run"] for r in rows] == [
        p.name for p in sorted(runs, key=lambda p: p.name, reverse=True)
    ]
    assert [r["verdict"] for r in rows if r["scenario"].startswith("gspo")] == [
        "passed",
        "failed",
        "regressed",
        "passed",
        "passed",
    ]
    for run in runs[:3]:  # relative links to the reports that exist
        assert f'href="{run.relative_to(root).as_posix()}/report.html"' in page
    assert page.count("no report (") == 3  # the others are listed with their status


def test_index_filters_by_scenario_and_verdict(tmp_path):
    root = tmp_path / "runs"
    _nights(root)
    page = write_index(root).read_text()
    scenarios = re.search(r'<select id="f-scenario">(.*?)</select>', page, re.DOTALL).group(1)
    verdicts = re.search(r'<select id="f-verdict">(.*?)</select>', page, re.DOTALL).group(1)
    assert re.findall(r'value="([^"]+)"', scenarios) == [
        "gspo-tiny-1n1cpu-fsdp2-vllm",
        "ppo-tiny-2n1cpu-fsdp2-vllm-ray",
    ]
    assert re.findall(r'value="([^"]+)"', verdicts) == ["passed", "regressed", "failed"]
    assert "src=" not in re.sub(r'src="data:image/png;base64,[^"]+"', "", page)


def test_trend_chart_marks_first_run_out_of_band(tmp_path):
    root = tmp_path / "runs"
    runs = _nights(root)
    page = write_index(root).read_text()
    assert 'data-trend="gspo-tiny-1n1cpu-fsdp2-vllm"' in page
    assert 'data-trend="ppo-tiny-2n1cpu-fsdp2-vllm-ray"' not in page  # one run: no trend
    assert f"clip fraction first left its baseline band in run {runs[2].name}" in page


def test_run_without_any_result_file_is_listed_with_its_status(tmp_path):
    root = tmp_path / "runs"
    crashed = root / "gspo" / "20261129T010000Z-dead00"
    crashed.mkdir(parents=True)
    (crashed / "run.json").write_text('{"status": "running", "started_at": "2026-11-29T01:00:00Z"}')
    page = write_index(root, tmp_path / "site").read_text()
    assert _rows(page) == [
        {"scenario": "gspo", "verdict": "running", "run": "20261129T010000Z-dead00"}
    ]
    assert "no report (running)" in page
    assert (tmp_path / "site" / "index.html").is_file()


class _Checker(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)


def _writer(root: str, count: int) -> None:
    for _ in range(count):
        write_index(Path(root))


def test_concurrent_index_writers_never_leave_a_torn_file(tmp_path):
    root = tmp_path / "runs"
    _nights(root)
    index = write_index(root)
    procs = [
        multiprocessing.get_context("fork").Process(target=_writer, args=(str(root), 3))
        for _ in range(3)
    ]
    for proc in procs:
        proc.start()
    reads, added = 0, 0
    while any(p.is_alive() for p in procs):
        if added < 4:  # a run finishing while the index is rewritten
            write_run(root, "passed", started=T0 + timedelta(days=10 + added))
            added += 1
        page = index.read_text()
        assert page.rstrip().endswith("</html>")
        checker = _Checker()
        checker.feed(page)
        assert "table" in checker.tags and "script" in checker.tags
        reads += 1
        time.sleep(0.01)
    assert all(p.exitcode == 0 for p in procs)
    assert reads > 0
    assert not list(root.glob(".index.html.*"))  # no temp file left behind
    final = write_index(root).read_text()
    assert len(_rows(final)) == 6 + added


def test_publish_writes_relative_tree_with_redacted_logs(tmp_path):
    root = tmp_path / "runs"
    runs = _nights(root)
    render_report(runs[0])
    with (runs[0] / "run.log").open("a") as log:
        log.write("HF_TOKEN=hf_PublishPlantedToken99\n")
    dest = tmp_path / "public"
    index = publish(root, dest)
    page = index.read_text()
    target = dest / runs[0].relative_to(root)
    assert (target / "report.html").is_file()
    assert "hf_PublishPlantedToken99" not in (target / "run.log").read_text()
    assert f'href="{runs[0].relative_to(root).as_posix()}/report.html"' in page
    assert str(tmp_path) not in re.sub(r"<p class=\"wb-note\">.*?</p>", "", page)


def test_a_suite_night_in_its_own_folder_is_listed_and_published(tmp_path):
    """``suite run --dir`` may put a night anywhere: the index finds it at any depth."""
    root = tmp_path / "nightly"
    night = root / "2026-11-30"
    run = write_run(night / "01-gspo", "passed")
    (night / "suite.json").write_text(json.dumps({"suite": "custom", "entries": [
        {"key": "01-gspo", "status": "passed", "exit_code": 0, "run_dir": str(run)}]}))
    page = write_index(root).read_text()
    assert 'data-night="2026-11-30"' in page and 'data-entry="01-gspo"' in page
    published = tmp_path / "public"
    publish(root, published)
    assert (published / "2026-11-30" / "suite.json").is_file()
    assert 'data-night="2026-11-30"' in (published / "index.html").read_text()


def test_the_runs_walk_follows_no_folder_link(tmp_path):
    """A link loop or a link to a folder elsewhere neither hangs the index nor lists foreign runs."""
    from workbook.report.summary import scan

    root = tmp_path / "runs"
    mine = write_run(root, "passed")
    elsewhere = write_run(tmp_path / "elsewhere", "regressed")
    (root / "loop").symlink_to(root)
    (root / "linked").symlink_to(elsewhere.parent)
    (mine.parent / "up").symlink_to(tmp_path)
    tree = scan(root)
    assert tree.runs == [mine]
    write_index(root)
    assert f'data-run="{elsewhere.name}"' not in (root / "index.html").read_text()
