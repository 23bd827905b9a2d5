"""A real clip-ratio sweep of the tiny GSPO scenario on replayed rollouts (issue 10).

The sweep runs one point, the loosest clip ratio (4e-2); the tightest (the scenario's own 4e-4) is
the smoke suite's run of the default scenario, which replays the same pinned dump. So the two
clip ratios are compared on the very same rollouts without a second training run here: the
sweep's own page, then ``workbook compare`` over both runs.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest
import yaml

from tests.conftest import CliRun, HeavyLock, workbook_cli
from tests.report import report_assertions as ra

pytestmark = pytest.mark.verl
STEPS = 3
ARGS = ["sweep", "params/gspo-tiny-1n1cpu-fsdp2-vllm.yaml",
        "--grid", "clip_ratio_high=4e-2", "-s", f"total_training_steps={STEPS}",
        "--replay-rollouts"]


@pytest.fixture(scope="session")
def sweep_runs(session_env: dict[str, str], cpu_assets: object) -> tuple[CliRun, CliRun]:
    with HeavyLock():
        first = workbook_cli(ARGS, session_env, timeout=2400)
        again = workbook_cli(ARGS, session_env, timeout=600)
    return first, again


def points(run: CliRun) -> list[dict]:
    assert run.run_dir is not None, run.output[-4000:]
    return json.loads((run.run_dir / "sweep.json").read_text())["points"]


def clip_mean(run: Path) -> float:
    """Mean clip fraction over the first STEPS steps, each trained on a replayed rollout."""
    info = json.loads((run / "run.json").read_text())
    assert set(range(1, STEPS + 1)) <= set(info["diagnosis"]["replayed_steps"]), info["diagnosis"]
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    return statistics.fmean(r["data"]["actor/pg_clipfrac"] for r in rows if r["step"] <= STEPS)


def test_each_point_runs_in_its_own_run_directory(sweep_runs: tuple[CliRun, CliRun]) -> None:
    first, _ = sweep_runs
    assert first.exit_code == 0, first.output[-4000:]
    found = points(first)
    assert [p["values"]["clip_ratio_high"] for p in found] == ["4e-2"]
    assert [p["status"] for p in found] == ["passed"]
    run = Path(found[0]["run_dir"])
    assert run.parent.parent == first.run_dir and (run / "report.html").is_file()
    assert json.loads((run / "run.json").read_text())["expected_steps"] == STEPS


def test_on_the_same_replayed_rollouts_the_tighter_clip_ratio_clips_at_least_as_much(
        sweep_runs: tuple[CliRun, CliRun], gspo_run: CliRun) -> None:
    assert gspo_run.run_dir is not None
    loose = Path(points(sweep_runs[0])[0]["run_dir"])
    pinned = [yaml.safe_load((run / "params.resolved.yaml").read_text())["rollouts"]["replay"]
              for run in (gspo_run.run_dir, loose)]
    assert pinned[0] and pinned[0] == pinned[1], pinned  # one dump: the same rollouts
    assert clip_mean(gspo_run.run_dir) >= clip_mean(loose)


def test_one_comparison_page_with_a_row_per_point_listed_in_the_index(
        sweep_runs: tuple[CliRun, CliRun], session_env: dict[str, str]) -> None:
    first, _ = sweep_runs
    page = (first.run_dir / "comparison.html").read_text()
    assert page.count("<tr data-run=") == 1
    assert "compare:actor/pg_clipfrac" in ra.panels(page)
    assert "clip_ratio_high=4e-2" in page
    index = (Path(session_env["WORKBOOK_RUNS"]) / "index.html").read_text()
    assert f'data-comparison="sweeps/{first.run_dir.parent.name}/{first.run_dir.name}"' in index
    assert first.stdout.strip().splitlines()[-1] == str(first.run_dir)


def test_compare_overlays_the_default_run_and_the_sweep_point(
        sweep_runs: tuple[CliRun, CliRun], gspo_run: CliRun, session_env: dict[str, str],
        tmp_path: Path) -> None:
    assert gspo_run.run_dir is not None
    loose = Path(points(sweep_runs[0])[0]["run_dir"])
    done = workbook_cli(["compare", str(gspo_run.run_dir), str(loose), "--out", str(tmp_path)],
                        session_env, timeout=600)
    assert done.exit_code == 0, done.output[-3000:]
    page = Path(done.stdout.strip().splitlines()[-1]).read_text()
    assert page.count("<tr data-run=") == 2
    assert f'<tr data-run="{gspo_run.run_dir.name}"' in page
    assert f'<tr data-run="{loose.name}"' in page
    assert "compare:actor/pg_clipfrac" in ra.panels(page)


def test_running_the_sweep_again_skips_finished_points(sweep_runs: tuple[CliRun, CliRun]) -> None:
    first, again = sweep_runs
    assert again.exit_code == first.exit_code and again.run_dir == first.run_dir
    assert "sweep: point" not in again.output
    assert [p["run_dir"] for p in points(again)] == [p["run_dir"] for p in points(first)]
