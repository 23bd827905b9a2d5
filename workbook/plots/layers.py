"""What a panel draws, as data built before anything is drawn: pure, no matplotlib.

:mod:`workbook.plots.panels` only renders these layers, so what a plot shows can be read (and
tested) from them, and a plot shows only what the checks compared (:mod:`workbook.plots.compared`):

- a run's metric: a :class:`Curve` over its steps;
- a per-step comparison: :class:`StepBands`, each step's allowed range and reference, step by step;
- a window statistic: one :class:`WindowMark` at the window's middle, the run's statistic as a
  point with its allowed range as a bar through it and the baseline's value as a short segment
  over the window. A window band is never shaded across the run's per-step points: it bounds
  their statistic, not each of them, and a passing run would look as if it failed at most steps.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from workbook.checks.reductions import window_text
from workbook.metrics.model import RunMetrics
from workbook.plots.catalog import Axis
from workbook.plots.compared import Band


@dataclass(frozen=True)
class Curve:
    """A line against the step: a run's metric, or the baseline's per-step mean."""

    metric: str
    label: str
    steps: tuple[int, ...]
    values: tuple[float, ...]
    baseline: bool = False


@dataclass(frozen=True)
class StepBands:
    """A per-step comparison: each step's reference and allowed range (``None``: open side)."""

    metric: str
    steps: tuple[int, ...]
    reference: tuple[float, ...]
    low: tuple[float | None, ...]
    high: tuple[float | None, ...]


@dataclass(frozen=True)
class WindowMark:
    """A window statistic, drawn once at ``x``, the middle of the steps it summarises."""

    metric: str
    window: tuple[int, int]
    x: float
    value: float | None  # the run's statistic (None: the row did not record it)
    reference: float | None
    low: float | None
    high: float | None
    label: str  # what the statistic is, e.g. "mean over steps 5-14"


@dataclass(frozen=True)
class AxisLayers:
    """One subplot's layers; ``metrics`` in legend order (each metric keeps its colour)."""

    ylabel: str
    metrics: tuple[str, ...]
    curves: tuple[Curve, ...] = ()
    step_bands: tuple[StepBands, ...] = ()
    marks: tuple[WindowMark, ...] = ()


def axis_layers(metrics: RunMetrics, axis: Axis,
                bands: Mapping[str, Band] | None = None) -> AxisLayers:
    """The layers of one subplot: each metric's curve, then what its check compared."""
    bands = bands or {}
    curves: list[Curve] = []
    step_bands: list[StepBands] = []
    marks: list[WindowMark] = []
    for name in axis.metrics:
        series = metrics.series(name)
        curves.append(Curve(name, name, tuple(series), tuple(series.values())))
        band = bands.get(name)
        if band is None:
            continue
        if band.series:
            curves.append(Curve(name, "baseline", tuple(band.series),
                                tuple(band.series.values()), baseline=True))
        if band.by_steps:
            step_bands.append(step_bands_of(name, band))
        else:
            mark = window_mark(name, band, series)
            if mark is not None:
                marks.append(mark)
    return AxisLayers(axis.ylabel, tuple(axis.metrics), tuple(curves), tuple(step_bands),
                      tuple(marks))


def step_bands_of(metric: str, band: Band) -> StepBands:
    steps = tuple(sorted(band.per_step))
    ranges = [band.per_step[s] for s in steps]
    return StepBands(metric, steps, tuple(r.reference for r in ranges),
                     tuple(r.low for r in ranges), tuple(r.high for r in ranges))


def window_mark(metric: str, band: Band, series: Mapping[int, float]) -> WindowMark | None:
    """The one mark of a window statistic; None when neither the band nor the run says where."""
    if band.value is None and band.low is None and band.high is None:
        return None
    steps = list(series) or list(band.series)
    window = band.window or ((min(steps), max(steps)) if steps else None)
    if window is None:
        return None
    how = band.reduce or "statistic"
    label = (f"{how} at step {window[0]}" if window[0] == window[1] else
             f"{how} over {window_text(window)}")
    return WindowMark(metric, window, (window[0] + window[1]) / 2, band.measured, band.value,
                      band.low, band.high, label)
