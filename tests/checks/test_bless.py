"""``bless``: baselines from N good runs, with the sigma that the checks' bands then use."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from workbook.checks.bands import K_SIGMA
from workbook.checks.baseline import load_baseline
from workbook.checks.blessing import bless
from workbook.checks.runner import check_path
from workbook.errors import BaselineError

STEPS = range(1, 6)
CHECKS = {"baseline": "baselines/gspo-handmade.cpu.json", "window": [2, 5]}


def series(step_time: float, throughput: float, clipfrac: float,
           loss_scale: float = 1.0) -> dict[str, dict[int, float]]:
    """Five steps; step 1 is slow (start-up), as on CPU; small per-step wobble that averages out."""
    wobble = {1: 0.0, 2: 0.1, 3: -0.1, 4: 0.1, 5: -0.1}
    return {
        "timing_s/step": {s: (step_time * 3 if s == 1 else step_time + wobble[s]) for s in STEPS},
        "perf/throughput": {s: throughput + 10 * wobble[s] for s in STEPS},
        "actor/pg_clipfrac": {s: clipfrac for s in STEPS},
        "actor/pg_loss": {s: 0.01 * s * loss_scale for s in STEPS},
        "actor/entropy": {s: 2.0 for s in STEPS},
    }


def three_runs(make_run: Callable[..., Path], params: Path, **kwargs: object) -> list[Path]:
    return [make_run(series(t, tp, cf), run_id=f"20261129T00000{i}Z-00000{i}", checks=CHECKS,
                     params_dir=params, versions={"verl": "0.9.1", "torch": "2.13.0"}, **kwargs)
            for i, (t, tp, cf) in enumerate([(10.0, 100.0, 0.2), (11.0, 104.0, 0.25),
                                             (12.0, 96.0, 0.3)])]


@pytest.fixture
def blessed(tmp_path: Path, make_run: Callable[..., Path]) -> tuple[Path, list[Path]]:
    params = tmp_path / "params"
    params.mkdir()
    runs = three_runs(make_run, params)
    bless(runs)
    return params, runs


def test_bless_from_three_runs_keeps_mean_sigma_hardware_and_settings(
        blessed: tuple[Path, list[Path]]) -> None:
    params, runs = blessed
    baseline = load_baseline(params / "baselines" / "gspo-handmade.cpu.json")

    step = baseline.metrics["timing_s/step"]
    assert step.value == pytest.approx(11.0) and (step.reduce, step.window) == ("mean", (2, 5))
    assert (step.sigma, step.n) == (pytest.approx(1.0), 3)
    assert step.series[1] == pytest.approx(33.0)
    written = json.loads((params / "baselines" / "gspo-handmade.cpu.json").read_text())
    assert not {"band", "spread"} & set(written["metrics"]["timing_s/step"])  # nothing reads them
    assert baseline.metrics["perf/throughput"].sigma == pytest.approx(4.0)
    assert baseline.metrics["actor/entropy"].sigma == 0.0
    assert baseline.hardware_key == {"profile": "cpu", "device": "Test CPU", "count": 2}
    assert baseline.settings == {"lr": 1e-4, "clip_ratio_high": 4e-4}
    prov = baseline.provenance
    assert prov["run_ids"] == [r.name for r in runs] and prov["k_sigma"] == K_SIGMA
    assert (prov["verl_version"], prov["verl_commit"]) == ("0.9.1", "abc123")
    assert prov["hardware_detail"] == "Test CPU, 2 cores" and prov["package_versions_differ"] == []
    assert baseline.hardware == "cpu" and baseline.scenario == "gspo-handmade"


@pytest.mark.parametrize("step_time,throughput,clipfrac,loss_scale,failing,improved", [
    (14.5, 90.0, 0.38, 1.0, [], []),                    # within 4 sigma (would fail verl's 5 %)
    (15.5, 90.0, 0.38, 1.0, ["timing_s/step"], []),     # 11 + 4 x 1.0 = 15
    (13.5, 79.0, 0.38, 1.0, ["perf/throughput"], []),   # 100 - max(4 x 4.0, 20 % floor) = 80
    (13.5, 90.0, 0.46, 1.0, ["actor/pg_clipfrac"], []),  # 0.25 + 4 x 0.05 = 0.45
    (11.0, 100.0, 0.25, 2.0, ["actor/pg_loss"], []),    # sigma 0: the 2 % floor catches a doubling
    # faster is never worse; clipfrac in band; throughput beyond 100 + 4 x 4.0: improved
    (8.0, 130.0, 0.06, 1.0, [], ["perf/throughput"]),
])
def test_a_fourth_run_is_judged_with_k_sigma_bands(
        blessed: tuple[Path, list[Path]], make_run: Callable[..., Path], step_time: float,
        throughput: float, clipfrac: float, loss_scale: float, failing: list[str],
        improved: list[str]) -> None:
    params, _ = blessed
    fourth = make_run(series(step_time, throughput, clipfrac, loss_scale),
                      run_id="20261129T000009Z-000009", checks=CHECKS, params_dir=params)

    verdict, out = check_path(fourth)

    failed = [r.metric for r in verdict.rows if r.judged and r.status not in ("pass", "improved")]
    assert failed == failing
    assert [r.metric for r in verdict.rows if r.status == "improved"] == improved
    assert verdict.status == ("regressed" if failing else "improved" if improved else "passed")
    assert out == fourth / "checks.json"
    step_row = next(r for r in verdict.rows if r.name == "timing_s/step vs baseline")
    assert step_row.baseline_series[1] == pytest.approx(33.0)  # the curve the report draws
    assert step_row.sigma == pytest.approx(1.0) and "4 sigma" in (step_row.band or "")


def test_bless_needs_three_runs(tmp_path: Path, make_run: Callable[..., Path]) -> None:
    run = make_run(series(10.0, 100.0, 0.2), checks={"window": [2, 5]})

    with pytest.raises(BaselineError, match="at least 3 good runs"):
        bless([run, run], tmp_path / "x.json")


@pytest.mark.parametrize("bad, why", [
    ({"status": "failed", "exit_code": 1}, "run completed"),
    ({"nan_loss": True}, "finite"),
])
def test_bless_refuses_a_run_that_is_not_good(tmp_path: Path, make_run: Callable[..., Path],
                                             bad: dict[str, object], why: str) -> None:
    params = tmp_path / "params"
    params.mkdir()
    runs = three_runs(make_run, params)
    data = series(10.0, 100.0, 0.2)
    if bad.pop("nan_loss", False):
        data["actor/pg_loss"][3] = float("nan")
    runs[1] = make_run(data, run_id="20261129T000007Z-000007", checks=CHECKS, params_dir=params,
                       **bad)

    with pytest.raises(BaselineError, match=f"cannot bless .*{why}"):
        bless(runs, tmp_path / "x.json")


def test_bless_refuses_runs_with_different_settings(tmp_path: Path,
                                                   make_run: Callable[..., Path]) -> None:
    params = tmp_path / "params"
    params.mkdir()
    runs = three_runs(make_run, params)
    runs[2] = make_run(series(12.0, 96.0, 0.3), run_id="20261129T000008Z-000008", checks=CHECKS,
                       params_dir=params, settings={"clip_ratio_high": 6e-4})

    with pytest.raises(BaselineError, match="different settings.*clip_ratio_high"):
        bless(runs, tmp_path / "x.json")


def test_bless_refuses_runs_shorter_than_the_window(tmp_path: Path,
                                                   make_run: Callable[..., Path]) -> None:
    runs = [make_run(series(10.0, 100.0, 0.2), run_id=f"20261129T00000{i}Z-00000{i}")
            for i in range(3)]  # no checks section: window 5-14, the runs have 5 steps

    with pytest.raises(BaselineError, match="needs step 14.*set checks.window"):
        bless(runs, tmp_path / "x.json")


def _with_conditions(run: Path, others_cores: float, cpu: str | None = None) -> Path:
    info = json.loads((run / "run.json").read_text())
    if cpu is not None:
        info["hardware"]["cpu"] = cpu
    info["conditions"] = {"wall_s": 180.0, "cpus": 2, "run_cores": 1.6,
                          "others_cores": others_cores, "steal_cores": 0.0, "load_1m": 2.0,
                          "calibration_s": 0.1}
    (run / "run.json").write_text(json.dumps(info))
    return run


@pytest.mark.parametrize("others_cores,cpu,timing_status,says", [
    (0.1, None, "pass", []),              # as idle as at blessing
    (0.4, None, "pass", []),              # within the margin above the busiest blessed run
    (1.1, None, "not_comparable", ["busier"]),  # a competing process took a core
    (0.1, "Other CPU", "not_comparable", ["baseline from"]),  # another machine
    (1.1, "Other CPU", "not_comparable", ["baseline from", "busier"]),  # both are named
])
def test_timings_are_not_compared_when_the_machine_was_busier_than_at_blessing(
        tmp_path: Path, make_run: Callable[..., Path], others_cores: float, cpu: str | None,
        timing_status: str, says: list[str]) -> None:
    params = tmp_path / "params"
    params.mkdir()
    runs = [_with_conditions(r, c) for r, c in zip(three_runs(make_run, params),
                                                   (0.05, 0.1, 0.15), strict=True)]
    baseline = bless(runs)
    assert baseline.conditions is not None and baseline.conditions["others_cores_max"] == 0.15
    run = _with_conditions(make_run(series(11.0, 100.0, 0.25), run_id="20261130T000000Z-000009",
                                    checks=CHECKS, params_dir=params), others_cores, cpu)

    verdict, _ = check_path(run)

    rows = {r.metric: r for r in verdict.rows if r.kind == "baseline"}
    assert rows["timing_s/step"].status == rows["perf/throughput"].status == timing_status
    assert rows["actor/pg_clipfrac"].status == "pass"  # what does not depend on the machine
    for words in says:
        assert words in rows["timing_s/step"].message, rows["timing_s/step"].message
    assert rows["timing_s/step"].message.count("CPU") <= 2  # another CPU is said once
    assert verdict.status == "passed"


def test_bless_refuses_runs_measured_on_a_busier_machine_than_the_others(
        tmp_path: Path, make_run: Callable[..., Path]) -> None:
    # two idle runs and one beside a busy loop (as measured on the tiny PPO scenario: 0.04, 0.10,
    # 0.82 cores of others): its timings would widen the band and open the busy gate to 0.82
    params = tmp_path / "params"
    params.mkdir()
    runs = [_with_conditions(r, c) for r, c in zip(three_runs(make_run, params),
                                                   (0.04, 0.10, 0.82), strict=True)]

    with pytest.raises(BaselineError, match=f"busier during {runs[2].name}"):
        bless(runs, tmp_path / "x.json")

    assert not (tmp_path / "x.json").exists()


def test_what_differs_among_the_blessed_runs_is_recorded_run_by_run(
        tmp_path: Path, make_run: Callable[..., Path]) -> None:
    params = tmp_path / "params"
    params.mkdir()
    runs = three_runs(make_run, params)
    for run, cann, commit in zip(runs, ("8.3.RC1", "8.3.RC1", "8.5.0"), ("abc123", "abc124",
                                                                         "abc123"), strict=True):
        info = json.loads((run / "run.json").read_text())
        info.update(cann_version=cann, commits={"verl": commit, "workbook": "def456"})
        (run / "run.json").write_text(json.dumps(info))

    prov = bless(runs).provenance

    ids = [r.name for r in runs]
    assert prov["package_versions_differ"] == ["CANN"]
    assert prov["runs_differ"] == [
        {"kind": "package", "name": "CANN",
         "values": dict(zip(ids, ["8.3.RC1", "8.3.RC1", "8.5.0"], strict=True))},
        {"kind": "commit", "name": "verl",
         "values": dict(zip(ids, ["abc123", "abc124", "abc123"], strict=True))}]
    assert (prov["cann_version"], prov["verl_commit"]) == ("8.3.RC1", "abc123")  # the first run's


@pytest.mark.parametrize("form", ["json", "yaml"])
def test_a_blessed_baseline_holds_no_secret_of_its_runs_env_or_overrides(
        tmp_path: Path, form: str, capsys: pytest.CaptureFixture[str]) -> None:
    from tests.history.nights import scaled_night, scenario_in
    from workbook.cli import main

    scenario = scenario_in(tmp_path)
    env = {"DB_PASSWORD": "BlessPw9q", "NOTE": "mysql -pBlessPw8r db", "HF_HOME": "/cache/hf"}
    runs = [scaled_night(tmp_path / "runs", scenario, day, factor=f, env=env,
                         overrides=["+trainer.wandb_key=BlessKey7s"])
            for day, f in ((1, 1.0), (2, 1.01), (3, 0.99))]
    out = tmp_path / f"b.cpu.{form}"

    assert main(["bless", *map(str, runs), "--out", str(out)]) == 0
    text = out.read_text()
    assert "Bless" not in text and "Bless" not in capsys.readouterr().out
    assert "/cache/hf" in text  # what is no secret stays
    assert load_baseline(out).metrics  # and the file still loads
