"""A real 2-point clip-ratio sweep of the tiny GSPO scenario on replayed rollouts (issue 10)."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest

from tests.conftest import CliRun, HeavyLock, workbook_cli
from tests.report import report_assertions as ra

pytestmark = pytest.mark.verl
ARGS = ["sweep", "params/gspo-tiny-1n1cpu-fsdp2-vllm.yaml",
        "--grid", "clip_ratio_high=4e-4,4e-2", "-s", "total_training_steps=3",
        "--replay-rollouts"]  # one point at a time: on 2 cores the faster way (README, Benchmarks)


@pytest.fixture(scope="session")
def sweep_runs(session_env: dict[str, str], cpu_assets: object) -> tuple[CliRun, CliRun]:
    with HeavyLock():
        first = workbook_cli(ARGS, session_env, timeout=2400)
        again = workbook_cli(ARGS, session_env, timeout=600)
    return first, again


def points(run: CliRun) -> list[dict]:
    assert run.run_dir is not None, run.output[-4000:]
    return json.loads((run.run_dir / "sweep.json").read_text())["points"]


def test_each_point_runs_in_its_own_run_directory(sweep_runs: tuple[CliRun, CliRun]) -> None:
    first, _ = sweep_runs
    assert first.exit_code == 0, first.output[-4000:]
    found = points(first)
    assert [p["values"]["clip_ratio_high"] for p in found] == ["4e-4", "4e-2"]
    assert [p["status"] for p in found] == ["passed"] * 2
    for point in found:
        run = Path(point["run_dir"])
        assert run.parent.parent == first.run_dir and (run / "report.html").is_file()
        assert json.loads((run / "run.json").read_text())["expected_steps"] == 3


def test_on_replayed_steps_the_tightest_clip_ratio_clips_at_least_as_much(
        sweep_runs: tuple[CliRun, CliRun]) -> None:
    means = []
    for point in points(sweep_runs[0]):
        run = Path(point["run_dir"])
        replayed = json.loads((run / "run.json").read_text())["diagnosis"]["replayed_steps"]
        assert replayed == [1, 2, 3]  # every point trained on the very same rollouts
        rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
        means.append(statistics.fmean(r["data"]["actor/pg_clipfrac"] for r in rows
                                      if r["step"] in replayed))
    tightest, loosest = means[0], means[-1]
    assert tightest >= loosest, means


def test_one_comparison_page_with_a_row_per_point_listed_in_the_index(
        sweep_runs: tuple[CliRun, CliRun], session_env: dict[str, str]) -> None:
    first, _ = sweep_runs
    page = (first.run_dir / "comparison.html").read_text()
    assert page.count("<tr data-run=") == 2
    assert "compare:actor/pg_clipfrac" in ra.panels(page)
    assert "clip_ratio_high=4e-2" in page
    index = (Path(session_env["WORKBOOK_RUNS"]) / "index.html").read_text()
    assert f'data-comparison="sweeps/{first.run_dir.parent.name}/{first.run_dir.name}"' in index
    assert first.stdout.strip().splitlines()[-1] == str(first.run_dir)


def test_running_the_sweep_again_skips_finished_points(sweep_runs: tuple[CliRun, CliRun]) -> None:
    first, again = sweep_runs
    assert again.exit_code == first.exit_code and again.run_dir == first.run_dir
    assert "sweep: point" not in again.output
    assert [p["run_dir"] for p in points(again)] == [p["run_dir"] for p in points(first)]
