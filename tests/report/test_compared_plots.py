"""Plots draw exactly what the checks compared: a per-step comparison's bands step by step, a
window statistic as one marked point with its band, never a window band over per-step points.

Asserted on the layers the plotting code builds (``Panel.axes``), not on pixels."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from tests.checks.handmade import evidence_of
from workbook.checks.baseline import Baseline, BaselineMetric
from workbook.checks.spec import CheckSpec
from workbook.checks.verdict import judge_checks
from workbook.metrics.model import RunMetrics
from workbook.plots.compared import Band, compared_band, compared_bands
from workbook.plots.layers import WindowMark
from workbook.plots.panels import build_panels, regression_panel
from workbook.report import cache, outcome, sections

LOSS, CLIP = "actor/pg_loss", "actor/pg_clipfrac"
LOSSES = {1: 0.6, 2: 0.5, 3: 0.4, 4: 0.3, 5: 0.2, 6: 0.1}


def judged_rows(losses: dict[int, float]) -> list[dict[str, Any]]:
    """checks.json rows (read back from JSON) of a run judged against a baseline whose loss
    agrees step by step and whose clip fraction is known only as a window statistic."""
    baseline = Baseline({
        LOSS: BaselineMetric(value=0.35, reduce="mean", window=(2, 5), sigma=0.0, n=3,
                             series=dict(LOSSES), series_sigma=dict.fromkeys(LOSSES, 0.0)),
        CLIP: BaselineMetric(value=0.2, reduce="mean", window=(2, 5), sigma=0.01, n=3),
    })
    series = {LOSS: losses, CLIP: dict.fromkeys(LOSSES, 0.21)}
    verdict = judge_checks(evidence_of(series), CheckSpec(window=(2, 5)), baseline=baseline)
    return json.loads(json.dumps(verdict.to_dict()))["rows"]


def run_of(losses: dict[int, float]) -> RunMetrics:
    run = RunMetrics()
    for step, loss in losses.items():
        run.put_many(step, {LOSS: loss, CLIP: 0.21}, "t")
    return run


FAULT = {**LOSSES, 3: 0.45}


def test_a_per_step_comparison_is_drawn_step_by_step_and_a_window_one_as_one_point() -> None:
    bands = compared_bands(judged_rows(FAULT))
    panels = {p.key: p for p in build_panels(run_of(FAULT), bands=bands)}

    (loss_axis,) = panels["policy_loss"].axes
    (steps,) = loss_axis.step_bands
    assert loss_axis.marks == ()  # no window band over the loss's per-step points
    assert steps.steps == (2, 3, 4, 5) and steps.reference == pytest.approx((0.5, 0.4, 0.3, 0.2))
    assert steps.low == pytest.approx((0.49, 0.392, 0.294, 0.196))
    assert steps.high == pytest.approx((0.51, 0.408, 0.306, 0.204))
    assert [c.label for c in loss_axis.curves] == [LOSS]  # the run's own curve, all 6 steps
    assert loss_axis.curves[0].steps == (1, 2, 3, 4, 5, 6)

    (clip_axis,) = panels["clip_fraction"].axes
    assert clip_axis.step_bands == ()
    assert clip_axis.marks == (WindowMark(CLIP, (2, 5), 3.5, pytest.approx(0.21), 0.2,
                                          pytest.approx(0.16), pytest.approx(0.24),
                                          "mean over steps 2-5"),)


@pytest.mark.parametrize("row, kind, where", [
    ({"metric": LOSS, "kind": "baseline", "status": "fail", "compared_by": "steps",
      "window": [2, 3], "step_bands": {"2": {"value": 0.5, "reference": 0.5, "lower": 0.49,
                                             "upper": 0.51},
                                       "3": {"value": "nan", "reference": 0.4, "lower": None,
                                             "upper": 0.408}}},
     "steps", (2, 3)),
    ({"metric": LOSS, "kind": "baseline", "status": "pass", "value": 0.3, "baseline": 0.31,
      "lower": 0.3, "upper": 0.32, "window": [2, 5]}, "mark", 3.5),
    ({"metric": LOSS, "kind": "baseline", "status": "pass", "value": 40.0, "baseline": 41.0,
      "lower": None, "upper": 42.0, "reduce": "last", "window": None, "steps": [6]},
     "mark", 6.0),
    ({"metric": LOSS, "kind": "baseline", "status": "fail", "value": 0.3,
      "baseline": {"value": 0.31, "low": 0.3, "high": 0.32, "series": {"1": 0.3, "2": None}},
      "window": [2, 4]}, "mark", 3.0),
    ({"metric": CLIP, "kind": "bounds", "status": "pass", "value": 0.2, "lower": 0.0,
      "upper": 1.0}, None, None),  # a sanity bound is no baseline
    ({"metric": LOSS, "kind": "baseline", "status": "not_comparable", "message": "other lr",
      "window": [2, 5]}, None, None),
    ({"metric": LOSS, "kind": "baseline", "status": "error", "compared_by": None,
      "step_bands": "garbage", "baseline": "nan", "window": ["a", 2]}, None, None),
])
def test_each_kind_of_row_gives_its_own_drawing(row: dict[str, Any], kind: str | None,
                                               where: object) -> None:
    band = compared_band(row)
    if kind is None:
        assert band is None
        return
    assert band is not None
    panel = regression_panel(run_of(LOSSES), str(row["metric"]), band, "t")
    assert panel is not None and panel.png.startswith(b"\x89PNG")
    (axis,) = panel.axes
    if kind == "steps":
        assert axis.marks == () and axis.step_bands[0].steps == where
        assert axis.step_bands[0].low == (0.49, None)  # an open side stays open
    else:
        assert axis.step_bands == ()
        (mark,) = axis.marks
        assert mark.x == where and mark.reference == band.value
        assert mark.value == (row["value"] if not isinstance(row.get("baseline"), dict)
                              else 0.3)


def test_the_nested_row_shape_still_draws_its_baseline_curve() -> None:
    band = compared_band({"metric": LOSS, "baseline": {"value": 0.31, "series": {"1": 0.3,
                                                                                "2": 0.25}}})
    assert band == Band(0.31, None, None, {1: 0.3, 2: 0.25})
    panel = regression_panel(run_of(LOSSES), LOSS, band, "t")
    assert panel is not None
    assert [(c.label, c.baseline) for c in panel.axes[0].curves] == [(LOSS, False),
                                                                     ("baseline", True)]


def test_a_window_mark_without_the_runs_statistic_still_shows_reference_and_band() -> None:
    # the shape the checks section's figures build from a row (value, low, high, series, window)
    panel = regression_panel(run_of(LOSSES), LOSS, Band(0.35, 0.3, 0.4, {}, (2, 5)), "t")

    assert panel is not None
    (mark,) = panel.axes[0].marks
    assert (mark.x, mark.value, mark.low, mark.high) == (3.5, None, 0.3, 0.4)


def test_the_plots_section_draws_what_the_checks_json_rows_compared(
        make_run: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    run = make_run("passed")
    checks = json.loads((run / "checks.json").read_text())
    checks["rows"].append({
        "name": f"{LOSS} vs baseline", "kind": "baseline", "metric": LOSS, "status": "pass",
        "value": 0.011, "compared_by": "steps", "window": [2, 3], "reduce": "mean",
        "step_bands": {"2": {"value": 0.011, "reference": 0.011, "lower": 0.0105,
                             "upper": 0.0115, "sigma": 0.0},
                       "3": {"value": 0.012, "reference": 0.012, "lower": 0.0115,
                             "upper": 0.0125, "sigma": 0.0}}})
    (run / "checks.json").write_text(json.dumps(checks))
    built: list[Any] = []
    real = outcome.build_panels

    def recording(*args: Any, **kwargs: Any) -> Any:
        built.extend(real(*args, **kwargs))
        return built

    monkeypatch.setattr(outcome, "build_panels", recording)
    cache.forget()
    try:
        figures = sections.plots(run).data.figures
    finally:
        cache.forget()

    drawn = {p.key: p.axes for p in built}
    assert [f.key for f in figures] == list(drawn)
    (loss,) = drawn["policy_loss"]
    assert loss.step_bands[0].steps == (2, 3) and loss.marks == ()
    (timing,) = drawn["rollout_timing"]
    (mark,) = timing.marks  # the fixture's timing row: a window statistic over steps 2-4
    assert (mark.metric, mark.x, mark.value, mark.reference, mark.low, mark.high) == (
        "timing_s/step", 3.0, 5.0, 6.0, None, 6.3)
    assert timing.step_bands == ()


def test_layers_never_hold_a_nan_reference() -> None:
    band = compared_band({"metric": LOSS, "step_bands": {"2": {"reference": math.nan}}})
    assert band is None
