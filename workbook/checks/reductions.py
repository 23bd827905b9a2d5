"""Turning a metric's per-step series into one number.

Two families live here because checks use both:

- the policy reductions (``last``, ``mean``, ``median``, ``max``, ``min``) over an *inclusive*
  step window, as verl's nightly comparator averages steps 5 to 14;
- NeMo-RL's expression helpers (``mean``, ``median``, ``ratio_above``) with their own range
  rules: 1-indexed, end-exclusive, ``0`` as end means "through the last step", negative bounds
  count from the end, shifted by the steps a resumed run never logged.

Both raise :class:`ReductionError` with a sentence a user can act on instead of a bare
``ValueError`` from ``statistics``; the caller turns it into an ``error`` row.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Mapping

from workbook.errors import MetricsError

REDUCTIONS = ("last", "mean", "median", "max", "min")
WINDOWED = ("mean", "median")


class ReductionError(MetricsError):
    """A series cannot be reduced as asked (missing steps, empty range, bad argument)."""


def window_text(window: tuple[int, int]) -> str:
    return f"steps {window[0]}-{window[1]}"


def _mean(values: list[float]) -> float:
    """The mean as IEEE arithmetic would give it, never an exception: NaN anywhere (or both
    infinities) is NaN, one infinity wins, and a finite sum too large for a float is avoided by
    summing the shares (``fsum`` raises on ``1e308 + 1e308`` and on ``inf - inf``)."""
    if any(math.isnan(v) for v in values):
        return math.nan
    infinite = {v for v in values if math.isinf(v)}
    if infinite:
        return infinite.pop() if len(infinite) == 1 else math.nan
    return math.fsum(v / len(values) for v in values)


def _nan_aware(fn: Callable[[list[float]], float], values: list[float]) -> float:
    """NaN anywhere makes the result NaN, so a broken step can never hide behind min/max."""
    if any(math.isnan(v) for v in values):
        return math.nan
    return float(fn(values))


def reduce_series(
    series: Mapping[int, float],
    how: str,
    window: tuple[int, int] | None,
    *,
    last_step: int | None = None,
    name: str = "metric",
) -> tuple[float, list[int]]:
    """Reduce ``series`` the way a policy says; returns the value and the steps it used.

    ``last`` is the value at the run's last step (``last_step``), not the metric's last logged
    step, as verl's comparator reads memory there. ``mean``/``median`` use the steps of the
    inclusive ``window`` that the metric logged; ``max``/``min`` use every step.
    """
    if not series:
        raise ReductionError(f"{name} was not logged at any step")
    if how == "last":
        step = max(series) if last_step is None else last_step
        if step not in series:
            raise ReductionError(f"{name} was not logged at the run's last step {step}")
        return series[step], [step]
    if how in WINDOWED:
        if window is None:
            raise ReductionError(f"reduction {how!r} needs a step window")
        steps = [s for s in series if window[0] <= s <= window[1]]
        if not steps:
            raise ReductionError(f"{name} has no value in {window_text(window)}")
        values = [series[s] for s in steps]
        return (_mean(values) if how == "mean" else _nan_aware(statistics.median, values)), steps
    if how in ("max", "min"):
        values = list(series.values())
        return _nan_aware(max if how == "max" else min, values), list(series)
    raise ReductionError(f"unknown reduction {how!r}; use one of {', '.join(REDUCTIONS)}")


def nemo_range(series: Mapping[int, float], start: int, end: int) -> list[float]:
    """Values of steps in NeMo-RL's ``[start, end)`` range (see the module docstring)."""
    if not series:
        return []
    count = len(series)
    # steps a resumed run did not log (it starts at 101, say), so -5 still means "last five"
    offset = max(series) - count
    lo = start + count + 1 + offset if start < 0 else start
    hi = end + count + 1 + offset if end <= 0 else end
    return [v for s, v in sorted(series.items()) if lo <= s < hi]


def nemo_mean(series: Mapping[int, float], start: int = 1, end: int = 0,
              ignore_top_p: float = 0.0, *, name: str = "series") -> float:
    """NeMo-RL's ``mean``: the range's mean, optionally without its top ``ignore_top_p`` share."""
    if not 0.0 <= ignore_top_p <= 1.0:
        raise ReductionError(f"ignore_top_p must be within [0, 1], got {ignore_top_p}")
    values = nemo_range(series, start, end)
    if not values:
        raise ReductionError(f"{name} has no value in range [{start}, {end})")
    if ignore_top_p > 0.0:
        ranked = sorted(values)
        keep = int(len(ranked) * (1.0 - ignore_top_p))
        values = ranked[:keep] if keep > 0 else ranked[:1]
    return _mean(values)


def nemo_median(series: Mapping[int, float], start: int = 1, end: int = 0,
                *, name: str = "series") -> float:
    values = nemo_range(series, start, end)
    if not values:
        raise ReductionError(f"{name} has no value in range [{start}, {end})")
    return _nan_aware(statistics.median, values)


def ratio_above(series: Mapping[int, float], threshold: float) -> float:
    """Share of steps whose value is at least ``threshold`` (0.0 for an empty series)."""
    values = list(series.values())
    if not values:
        return 0.0
    return sum(1 for v in values if v >= threshold) / len(values)


def extreme(values: list[float], how: str) -> float:
    return _nan_aware(max if how == "max" else min, values)
