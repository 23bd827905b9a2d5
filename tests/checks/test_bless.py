"""``bless``: baselines from runs, with spread and suggested tolerances that the checks then use."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

import pytest

from workbook.checks.baseline import load_baseline
from workbook.checks.blessing import bless
from workbook.checks.runner import check_path
from workbook.errors import BaselineError

STEPS = range(1, 6)
CHECKS = {"baseline": "baselines/gspo-handmade.cpu.json", "window": [2, 5]}


def series(step_time: float, throughput: float, clipfrac: float) -> dict[str, dict[int, float]]:
    """Five steps; step 1 is slow (start-up), as on CPU; small per-step wobble that averages out."""
    wobble = {1: 0.0, 2: 0.1, 3: -0.1, 4: 0.1, 5: -0.1}
    return {
        "timing_s/step": {s: (step_time * 3 if s == 1 else step_time + wobble[s]) for s in STEPS},
        "perf/throughput": {s: throughput + 10 * wobble[s] for s in STEPS},
        "actor/pg_clipfrac": {s: clipfrac for s in STEPS},
        "actor/pg_loss": {s: 0.01 * s for s in STEPS},
        "actor/entropy": {s: 2.0 for s in STEPS},
    }


@pytest.fixture
def blessed(tmp_path: Path, make_run: Callable[..., Path]) -> tuple[Path, list[Path]]:
    params = tmp_path / "params"
    params.mkdir()
    runs = [make_run(series(t, tp, cf), run_id=f"20261129T00000{i}Z-00000{i}", checks=CHECKS,
                     params_dir=params, versions={"verl": "0.9.1", "torch": "2.13.0"})
            for i, (t, tp, cf) in enumerate([(10.0, 100.0, 0.2), (11.0, 104.0, 0.25),
                                             (12.0, 96.0, 0.3)])]
    bless(runs)
    return params, runs


def test_bless_from_three_runs_writes_spread_and_tolerances(
        blessed: tuple[Path, list[Path]]) -> None:
    params, runs = blessed
    baseline = load_baseline(params / "baselines" / "gspo-handmade.cpu.json")

    step = baseline.metrics["timing_s/step"]
    assert step.value == pytest.approx(11.0) and (step.reduce, step.window) == ("mean", (2, 5))
    assert step.spread == pytest.approx(
        {"min": 10.0, "max": 12.0, "mean": 11.0, "std": 1.0, "n": 3})
    assert step.tolerance == {"rtol": pytest.approx(3.0 / 11.0)}    # 3 std beats verl's 5 %
    assert step.series[1] == pytest.approx(33.0) and step.band["max"][1] == pytest.approx(36.0)
    assert baseline.metrics["perf/throughput"].tolerance == {"rtol": pytest.approx(0.12)}
    assert baseline.metrics["actor/pg_clipfrac"].tolerance == {"atol": pytest.approx(0.15)}
    assert baseline.metrics["actor/entropy"].spread["std"] == 0.0
    prov = baseline.provenance
    assert prov["run_ids"] == [r.name for r in runs]
    assert (prov["verl_version"], prov["verl_commit"]) == ("0.9.1", "abc123")
    assert prov["packages"]["torch"] == "2.13.0" and prov["created"].endswith("Z")
    assert prov["hardware_detail"] == "Test CPU, 2 cores" and prov["package_versions_differ"] == []
    assert baseline.hardware == "cpu" and baseline.scenario == "gspo-handmade"


@pytest.mark.parametrize("step_time,throughput,clipfrac,failing", [
    (13.5, 90.0, 0.38, []),                      # inside: would fail verl's fixed 5 % though
    (14.5, 90.0, 0.38, ["timing_s/step"]),
    (13.5, 87.0, 0.38, ["perf/throughput"]),
    (13.5, 90.0, 0.42, ["actor/pg_clipfrac"]),
    (8.0, 130.0, 0.11, []),                      # faster is never worse; clipfrac low in band
])
def test_fourth_run_is_judged_with_the_blessed_tolerances(
        blessed: tuple[Path, list[Path]], make_run: Callable[..., Path], step_time: float,
        throughput: float, clipfrac: float, failing: list[str]) -> None:
    params, _ = blessed
    fourth = make_run(series(step_time, throughput, clipfrac), run_id="20261129T000009Z-000009",
                      checks=CHECKS, params_dir=params)

    verdict, out = check_path(fourth)

    failed = [r.metric for r in verdict.rows if r.status != "pass"]
    assert failed == failing
    assert verdict.status == ("regressed" if failing else "passed")
    assert out == fourth / "checks.json"
    step_row = next(r for r in verdict.rows if r.name == "timing_s/step vs baseline")
    assert step_row.baseline_series[1] == pytest.approx(33.0)  # the curve the report draws


def test_single_run_baseline_keeps_the_nightly_tolerances(tmp_path: Path,
                                                         make_run: Callable[..., Path]) -> None:
    run = make_run(series(10.0, 100.0, 0.2), checks={"window": [2, 5]})

    baseline = bless([run], tmp_path / "one.json")

    assert baseline.metrics["timing_s/step"].tolerance == {}
    assert "band" not in json.loads((tmp_path / "one.json").read_text())["metrics"]["timing_s/step"]


def test_bless_refuses_a_failed_run(tmp_path: Path, make_run: Callable[..., Path]) -> None:
    run = make_run(series(10.0, 100.0, 0.2), status="failed", exit_code=1,
                   checks={"window": [2, 5]})

    with pytest.raises(BaselineError, match="the run failed"):
        bless([run], tmp_path / "x.json")


def test_bless_refuses_runs_shorter_than_the_window(tmp_path: Path,
                                                   make_run: Callable[..., Path]) -> None:
    run = make_run(series(10.0, 100.0, 0.2))  # no checks section: window 5-14, run has 5 steps

    with pytest.raises(BaselineError, match="needs step 14.*set checks.window"):
        bless([run], tmp_path / "x.json")
