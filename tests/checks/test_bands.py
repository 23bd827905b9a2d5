"""Bands around a baseline: k sigma of the blessed runs, a floor, a scenario may only widen;
a band that admits every value a metric can take is refused before launch."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from workbook.checks.bands import K_SIGMA, band_for, can_fail
from workbook.checks.baseline import BaselineMetric
from workbook.checks.spec import MetricPolicy, parse_checks
from workbook.errors import ParamsError
from workbook.scenario import load_scenario


def entry(value: float, sigma: float | None, n: int = 3) -> BaselineMetric:
    return BaselineMetric(value=value, reduce="mean", window=(2, 4), sigma=sigma, n=n)


def test_the_default_band_is_k_sigma_of_the_blessed_runs() -> None:
    band = band_for(MetricPolicy("actor/pg_clipfrac"), entry(0.17, 0.033), 0.17)

    assert band is not None
    assert band.half_width == pytest.approx(K_SIGMA * 0.033)
    assert (band.lower, band.upper) == (pytest.approx(0.17 - 0.132), pytest.approx(0.17 + 0.132))
    assert band.how == "4 sigma (sigma 0.033, 3 runs)" and band.sigma == 0.033


def test_a_zero_sigma_gets_a_floor_and_time_a_wider_one() -> None:
    loss = band_for(MetricPolicy("actor/pg_loss"), entry(0.5, 0.0), 0.5)
    step = band_for(MetricPolicy("timing_s/step", direction="higher_is_worse"),
                    entry(10.0, 0.0), 10.0)

    assert loss is not None and loss.half_width == pytest.approx(0.01)   # 2 % of 0.5
    assert step is not None and step.upper == pytest.approx(12.0) and step.lower is None  # 20 %
    assert "floor" in loss.how


def test_a_scenario_tolerance_widens_but_never_narrows() -> None:
    wide = MetricPolicy("actor/pg_clipfrac", atol=0.3, scenario_tolerance=True)
    narrow = MetricPolicy("actor/pg_clipfrac", atol=0.001, scenario_tolerance=True)

    assert band_for(wide, entry(0.17, 0.033), 0.17).half_width == 0.3  # type: ignore[union-attr]
    assert band_for(narrow, entry(0.17, 0.033), 0.17).half_width == pytest.approx(0.132)  # type: ignore[union-attr]


def test_without_sigma_the_policy_tolerance_applies_and_without_either_there_is_no_band() -> None:
    nightly = MetricPolicy("timing_s/step", direction="higher_is_worse", rtol=0.05)

    assert band_for(nightly, entry(80.0, None), 80.0).upper == pytest.approx(84.0)  # type: ignore[union-attr]
    assert band_for(nightly, entry(80.0, 1.0, n=2), 80.0).how == "tolerance 5%"  # type: ignore[union-attr]
    assert band_for(MetricPolicy("actor/pg_loss"), entry(0.1, None), 0.1) is None


@pytest.mark.parametrize("policy, reference, fails", [
    (MetricPolicy("actor/pg_clipfrac", atol=1.0, scenario_tolerance=True), 0.17, False),
    (MetricPolicy("actor/pg_clipfrac", atol=0.25, scenario_tolerance=True), 0.17, True),
    (MetricPolicy("perf/throughput", direction="lower_is_worse", rtol=1.0,
                  scenario_tolerance=True), 300.0, False),
    (MetricPolicy("timing_s/step", direction="higher_is_worse", rtol=1.0,
                  scenario_tolerance=True), 10.0, True),
    (MetricPolicy("actor/pg_loss", atol=1e6, scenario_tolerance=True), 0.1, True),
])
def test_can_fail_knows_the_range_of_each_metric(policy: MetricPolicy, reference: float,
                                                fails: bool) -> None:
    band = band_for(policy, entry(reference, None), reference)
    assert band is not None and can_fail(policy.metric, band) is fails


def scenario(tmp_path: Path, metrics: str) -> Path:
    (tmp_path / "baselines").mkdir(exist_ok=True)
    (tmp_path / "baselines" / "b.json").write_text(json.dumps({"metrics": {
        "actor/pg_clipfrac": {"value": 0.17, "reduce": "mean", "window": [2, 4],
                              "sigma": 0.033, "n": 3},
        "perf/throughput": {"value": 330.0, "reduce": "mean", "window": [2, 4],
                            "sigma": 18.0, "n": 3}}}))
    path = tmp_path / "s.yaml"
    path.write_text("profile: npu\nmodel_path: /m\ntrain_files: /t\nval_files: /v\n"
                    "total_training_steps: 4\n"
                    f"checks: {{baseline: baselines/b.json, window: [2, 4], metrics: {metrics}}}\n")
    return path


@pytest.mark.parametrize("metrics, field", [
    ("{actor/pg_clipfrac: {atol: 1.0}}", "checks.metrics.actor/pg_clipfrac"),
    ("{perf/throughput: {rtol: 1.0}}", "checks.metrics.perf/throughput"),
    ("{actor/pg_clipfrac: {k: 40}}", "checks.metrics.actor/pg_clipfrac"),
])
def test_validation_refuses_a_check_that_can_never_fail(tmp_path: Path, metrics: str,
                                                        field: str) -> None:
    with pytest.raises(ParamsError) as err:
        load_scenario(scenario(tmp_path, metrics))

    assert field in [path for path, _ in err.value.problems]
    assert "it can never fail" in err.value.message


def test_a_band_that_can_fail_is_accepted(tmp_path: Path) -> None:
    s = load_scenario(scenario(tmp_path, "{actor/pg_clipfrac: {atol: 0.1}, "
                                         "timing_s/step: {k: 6}}"), check_files=False)
    spec, problems = parse_checks(s.checks, params_dir=tmp_path)
    assert problems == [] and spec.policy("timing_s/step").k == 6.0  # type: ignore[union-attr]
