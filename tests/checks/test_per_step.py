"""Per-step comparisons: where the blessed runs agree step by step, each step of the window is
judged against its own band, so a fault confined to one step cannot hide in the window mean."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.checks.handmade import evidence_of
from workbook.checks.bands import agree_step_by_step, band_for, basis, step_band_for
from workbook.checks.baseline import Baseline, BaselineMetric, load_baseline
from workbook.checks.blessing import bless
from workbook.checks.rows import CheckRow, StepBand
from workbook.checks.spec import CheckSpec, MetricPolicy, parse_checks
from workbook.checks.verdict import judge_checks
from workbook.errors import BaselineError

LOSS, STEP = "actor/pg_loss", "timing_s/step"
STEPS = range(1, 7)
WINDOW = (2, 5)
# the loss every blessed run logs (replayed rollouts: identical run to run)
LOSSES = {1: 0.60, 2: 0.50, 3: 0.40, 4: 0.30, 5: 0.20, 6: 0.10}
CHECKS = {"baseline": "baselines/gspo-handmade.cpu.json", "window": list(WINDOW)}


def run_series(step_time: float, losses: dict[int, float] | None = None
               ) -> dict[str, dict[int, float]]:
    """A run: its loss step by step (the blessed one unless told), its own step time."""
    return {LOSS: dict(losses or LOSSES),
            STEP: {s: step_time + 0.1 * (s % 2) for s in STEPS}}


def with_step(step: int, value: float, losses: dict[int, float] = LOSSES) -> dict[int, float]:
    return {**losses, step: value}


@pytest.fixture
def blessed(tmp_path: Path, make_run: Callable[..., Path]) -> Baseline:
    """Three runs agreeing step by step on the loss, not on the step time."""
    params = tmp_path / "params"
    params.mkdir()
    runs = [make_run(run_series(t), run_id=f"20261129T00000{i}Z-00000{i}", checks=CHECKS,
                     params_dir=params) for i, t in enumerate([10.0, 11.0, 12.0])]
    bless(runs)
    return load_baseline(params / "baselines" / "gspo-handmade.cpu.json")


def row_of(baseline: Baseline, losses: dict[int, float], metric: str = LOSS,
           **policy: object) -> CheckRow:
    spec = CheckSpec(window=WINDOW, overrides={metric: dict(policy)} if policy else {})
    verdict = judge_checks(evidence_of(run_series(11.0, losses)), spec, baseline=baseline)
    return next(r for r in verdict.rows if r.name == f"{metric} vs baseline")


# --- bless ------------------------------------------------------------------------------------

def test_bless_writes_each_steps_spread_and_it_reads_back(blessed: Baseline,
                                                          tmp_path: Path) -> None:
    loss, step = blessed.metrics[LOSS], blessed.metrics[STEP]

    assert loss.series_sigma == {s: 0.0 for s in STEPS}
    assert step.series_sigma == {s: pytest.approx(1.0) for s in STEPS}
    written = json.loads((tmp_path / "params" / "baselines" / "gspo-handmade.cpu.json")
                         .read_text())
    assert written["format"] == "verl-workbook-baseline/3"
    assert written["metrics"][STEP]["series_sigma"]["1"] == pytest.approx(1.0)


def test_a_baseline_holding_a_negative_or_non_finite_step_spread_is_refused(
        tmp_path: Path) -> None:
    for spread, fragment in [({"2": -0.5}, f"metrics.{LOSS}.series_sigma.2: -0.5 is below 0"),
                             ({"2": math.inf}, f"metrics.{LOSS}.series_sigma.2: inf is not "),
                             ({"two": 0.1}, f"metrics.{LOSS}.series_sigma: step 'two'")]:
        path = tmp_path / "x.cpu.json"
        path.write_text(json.dumps({"metrics": {LOSS: {"value": 0.3, "series_sigma": spread}}}))
        with pytest.raises(BaselineError, match=fragment):
            load_baseline(path)


def test_save_refuses_a_step_spread_no_baseline_may_hold(tmp_path: Path) -> None:
    baseline = Baseline({LOSS: BaselineMetric(value=0.3, series={2: 0.3},
                                              series_sigma={2: -1.0})})
    with pytest.raises(BaselineError, match="series_sigma.2: -1 is below 0"):
        baseline.save(tmp_path / "x.json")
    assert not (tmp_path / "x.json").exists()


# --- which comparison ---------------------------------------------------------------------------

@pytest.mark.parametrize("losses, status", [
    (LOSSES, "pass"),
    (with_step(3, 0.41), "fail"),                         # one step, +2.5 %: the mean moves 0.7 %
    (with_step(4, 0.33, with_step(3, 0.37)), "fail"),     # two steps swap: the mean is unchanged
    (with_step(3, 0.405), "pass"),                        # within the step's 2 % floor (0.008)
    (with_step(6, 0.90), "pass"),                         # outside the window: not judged
    (with_step(3, math.nan), "fail"),
])
def test_a_fault_in_one_step_fails_the_per_step_check_while_the_window_mean_holds(
        blessed: Baseline, losses: dict[int, float], status: str) -> None:
    by_steps = row_of(blessed, losses)
    by_window = row_of(blessed, losses, compare_by="window")

    assert (by_steps.compared_by, by_steps.status) == ("steps", status)
    assert by_window.compared_by == "window"
    if not any(math.isnan(v) for v in losses.values()):
        assert by_window.status == "pass"  # the window statistic alone misses every fault here


def test_a_failed_per_step_row_names_the_worst_step_its_value_and_band(
        blessed: Baseline) -> None:
    row = row_of(blessed, with_step(4, 0.33, with_step(3, 0.41)))

    assert row.status == "fail" and row.value == pytest.approx(0.33)
    assert "2 of 4 steps outside their bands; worst step 4: 0.33 vs baseline 0.3" in row.message
    assert "band 0.3 ± 0.006" in row.message
    assert row.steps == [2, 3, 4, 5] and sorted(row.step_bands) == [2, 3, 4, 5]
    assert row.step_bands[3] == StepBand(0.41, pytest.approx(0.4), pytest.approx(0.392),
                                         pytest.approx(0.408), 0.0)
    assert (row.baseline, row.lower, row.upper) == (None, None, None)  # no one band was used
    assert row.expected == "each step within its own band (step 4: 0.3 ± 0.006)"


def test_a_passing_per_step_row_says_every_step_held(blessed: Baseline) -> None:
    row = row_of(blessed, with_step(5, 0.203))

    assert row.status == "pass"
    assert "every step within its band; nearest its edge: step 5: 0.203" in row.message


def test_runs_that_do_not_agree_step_by_step_are_compared_by_their_window(
        blessed: Baseline) -> None:
    row = row_of(blessed, LOSSES, metric=STEP)

    assert row.compared_by == "window" and not row.step_bands
    assert row.baseline == pytest.approx(11.05) and row.upper is not None


def test_an_old_baseline_without_step_spreads_loads_and_compares_by_window(
        blessed: Baseline, tmp_path: Path) -> None:
    data = blessed.to_dict()
    data["format"] = "verl-workbook-baseline/2"
    for entry in data["metrics"].values():
        entry.pop("series_sigma")
    path = tmp_path / "old.cpu.json"
    path.write_text(json.dumps(data))

    old = load_baseline(path)
    row = row_of(old, with_step(3, 0.41))

    assert old.metrics[LOSS].series_sigma == {}
    assert (row.compared_by, row.status) == ("window", "pass")


def test_compare_by_steps_without_step_spreads_is_an_error_not_a_pass() -> None:
    old = Baseline({LOSS: BaselineMetric(value=0.35, reduce="mean", window=WINDOW, sigma=0.0,
                                         n=3, series=dict(LOSSES))})

    row = row_of(old, LOSSES, compare_by="steps")

    assert row.status == "error" and "no band at step 2" in row.message


def test_compare_by_steps_with_a_scenario_tolerance_judges_each_step_by_it() -> None:
    old = Baseline({LOSS: BaselineMetric(value=0.35, reduce="mean", window=WINDOW,
                                         series=dict(LOSSES))})

    row = row_of(old, with_step(3, 0.5), compare_by="steps", atol=0.05)

    assert (row.compared_by, row.status) == ("steps", "fail")
    assert row.step_bands[3].upper == pytest.approx(0.45) and row.step_bands[2].holds


def test_a_run_with_other_settings_is_not_comparable_even_where_steps_agree(
        blessed: Baseline) -> None:
    evidence = evidence_of(run_series(11.0, with_step(3, 0.9)),
                           scenario={"profile": "cpu", "lr": 1e-3, "clip_ratio_high": 4e-4})

    verdict = judge_checks(evidence, CheckSpec(window=WINDOW), baseline=blessed)
    row = next(r for r in verdict.rows if r.name == f"{LOSS} vs baseline")

    assert row.status == "not_comparable" and "lr 0.0001 -> 0.001" in row.message
    assert row.compared_by is None and not row.step_bands


def test_a_per_step_row_is_written_to_checks_json_step_by_step(blessed: Baseline) -> None:
    data = json.loads(json.dumps(row_of(blessed, with_step(3, math.nan)).to_dict()))

    assert data["compared_by"] == "steps"
    assert data["step_bands"]["3"] == {"value": "nan", "reference": pytest.approx(0.4),
                                       "lower": pytest.approx(0.392),
                                       "upper": pytest.approx(0.408), "sigma": 0.0}
    assert data["step_bands"]["2"]["value"] == 0.5


# --- the rule -----------------------------------------------------------------------------------

SERIES = {2: 0.5, 3: 0.4, 4: 0.3, 5: 0.2}


@pytest.mark.parametrize("spread, window_half, agree", [
    ({2: 0.0, 3: 0.0, 4: 0.0, 5: 0.0}, 0.005, True),          # replayed: identical runs
    ({2: 0.001, 3: 0.001, 4: 0.001, 5: 0.001}, 0.005, True),  # 4 x 0.001 within 2 % of 0.2
    ({2: 0.0, 3: 0.0, 4: 0.0, 5: 0.0011}, 0.005, False),      # 4 x 0.0011 > 2 % of 0.2
    ({2: 0.002, 3: 0.0, 4: 0.0, 5: 0.0}, 0.01, True),         # 0.008 <= 2 % of 0.5 = 0.01
    ({2: 0.002, 3: 0.0, 4: 0.0, 5: 0.0}, 0.006, False),       # ... but wider than the window's
    ({2: 0.003, 3: 0.0, 4: 0.0, 5: 0.0}, 1.0, False),         # 0.012 > 2 % of 0.5, however wide
    ({2: 0.0, 3: 0.0, 4: 0.0}, 0.005, False),                 # step 5's spread not known
    ({2: 0.0, 3: math.nan, 4: 0.0, 5: 0.0}, 0.005, False),    # a run logged no number there
])
def test_runs_agree_step_by_step_when_each_steps_spread_is_below_its_floor_and_the_window_band(
        spread: dict[int, float], window_half: float, agree: bool) -> None:
    assert agree_step_by_step(SERIES, spread, WINDOW, 4.0, window_half) is agree


def test_no_step_of_the_window_in_the_baseline_is_no_agreement() -> None:
    assert not agree_step_by_step(SERIES, dict.fromkeys(SERIES, 0.0), (7, 9), 4.0, 1.0)


def entry(spread: float, **kw: object) -> BaselineMetric:
    fields: dict[str, object] = {"value": 0.35, "reduce": "mean", "window": WINDOW, "sigma": 0.0,
                                 "n": 3, "series": dict(SERIES),
                                 "series_sigma": dict.fromkeys(SERIES, spread), **kw}
    return BaselineMetric(**fields)  # type: ignore[arg-type]


@pytest.mark.parametrize("policy, metric, by", [
    (MetricPolicy(LOSS, window=WINDOW), entry(0.0), "steps"),
    (MetricPolicy(LOSS, window=WINDOW), entry(0.01), "window"),
    (MetricPolicy(LOSS, window=WINDOW, compare_by="window"), entry(0.0), "window"),
    (MetricPolicy(LOSS, window=WINDOW, compare_by="steps"), entry(0.01), "steps"),
    (MetricPolicy(LOSS, reduce="last"), entry(0.0), "window"),              # no window to step
    (MetricPolicy(LOSS, reduce="median", window=WINDOW), entry(0.0), "steps"),
    (MetricPolicy(LOSS, window=WINDOW), entry(0.0, series_sigma={}), "window"),   # format 2
    (MetricPolicy(LOSS, window=WINDOW), entry(0.0, n=2), "window"),         # too few runs
    (MetricPolicy(LOSS, window=WINDOW, rtol=0.05), entry(0.0, sigma=None), "window"),  # Ascend
])
def test_the_basis_of_a_comparison(policy: MetricPolicy, metric: BaselineMetric,
                                   by: str) -> None:
    assert basis(policy, metric, band_for(policy, metric, 0.35)) == by


@pytest.mark.parametrize("policy, step, edges, how", [
    (MetricPolicy(LOSS), 3, (0.392, 0.408), "floor"),
    (MetricPolicy(LOSS, direction="higher_is_worse"), 3, (None, 0.408), "floor"),
    (MetricPolicy(LOSS, k=2.0), 3, (0.38, 0.42), "2 sigma"),
    (MetricPolicy(LOSS, atol=0.1, scenario_tolerance=True), 3, (0.3, 0.5), "widened"),
])
def test_a_steps_band_follows_the_window_bands_rules(policy: MetricPolicy, step: int,
                                                     edges: tuple[float | None, float | None],
                                                     how: str) -> None:
    spread = {2: 0.0, 3: 0.01 if policy.k else 0.0, 4: 0.0, 5: 0.0}
    band = step_band_for(policy, entry(0.0, series_sigma=spread), step)

    assert band is not None and band.reference == 0.4 and how in band.how
    assert (band.lower, band.upper) == tuple(None if e is None else pytest.approx(e)
                                             for e in edges)


def test_a_step_the_baseline_does_not_hold_has_no_band() -> None:
    assert step_band_for(MetricPolicy(LOSS), entry(0.0), 9) is None


# --- the scenario -------------------------------------------------------------------------------

@pytest.mark.parametrize("policy, problem", [
    ({"compare_by": "auto"}, None),
    ({"compare_by": "steps"}, None),
    ({"compare_by": "window", "reduce": "last"}, None),
    ({"compare_by": "step"}, "must be one of auto, window, steps"),
    ({"compare_by": "steps", "reduce": "last"}, "steps needs a window: reduce last"),
])
def test_compare_by_is_validated(tmp_path: Path, policy: dict[str, object],
                                 problem: str | None) -> None:
    spec, problems = parse_checks({"metrics": {LOSS: policy}}, params_dir=tmp_path)

    if problem is None:
        assert problems == []
        assert spec.policy(LOSS).compare_by == policy["compare_by"]  # type: ignore[union-attr]
    else:
        assert [(where, problem in message) for where, message in problems] == [
            (f"checks.metrics.{LOSS}.compare_by", True)]
