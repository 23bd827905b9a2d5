"""What a check compared, read back from its row, as the plots draw it: pure data, no matplotlib.

A baseline row compared either each step of its window with that step's own band (``step_bands``,
``compared_by: steps``) or one window statistic with one band (``value`` within ``lower``..
``upper`` around ``baseline``). A plot shows exactly that (see :mod:`workbook.plots.layers`), so
a :class:`Band` holds the per-step ranges of the first kind, or the statistic, its band and
its window of the second; never one drawn as the other. Rows are read as ``checks.json`` holds
them (numbers written as text when not finite, steps as string keys), and the older nested shape
(``baseline: {value, low, high, series}``) still reads.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from workbook.core.values import finite


@dataclass(frozen=True)
class StepRange:
    """One step's allowed range in a per-step comparison (``None``: that side is open)."""

    reference: float
    low: float | None
    high: float | None


@dataclass(frozen=True)
class Band:
    """A metric's baseline as compared: per-step ranges, or one window statistic and its band.

    ``value``/``low``/``high`` are the window statistic's reference and allowed range,
    ``measured`` the run's statistic, ``window`` the steps it summarises and ``reduce`` how;
    ``per_step`` (when not empty) the ranges of a per-step comparison instead. ``series`` is the
    baseline's per-step mean, drawn as a curve where a row carried it in the nested shape.
    """

    value: float | None = None
    low: float | None = None
    high: float | None = None
    series: dict[int, float] = field(default_factory=dict)
    window: tuple[int, int] | None = None
    measured: float | None = None
    reduce: str | None = None
    per_step: dict[int, StepRange] = field(default_factory=dict)

    @property
    def by_steps(self) -> bool:
        return bool(self.per_step)


def compared_bands(rows: Iterable[Mapping[str, Any]]) -> dict[str, Band]:
    """The first baseline band of each metric in ``rows`` (a row without one gives none)."""
    found: dict[str, Band] = {}
    for row in rows:
        band = compared_band(row)
        if band is not None and row.get("metric"):
            found.setdefault(str(row["metric"]), band)
    return found


def compared_band(row: Mapping[str, Any]) -> Band | None:
    """The band one check row compared with, None when it compared with no baseline.

    A sanity bound such as "clip fraction within [0, 1]" has a range but no reference: it is
    not a baseline, and drawn as one it would flatten the plot.
    """
    if not isinstance(row, Mapping):
        return None
    window = _window(row.get("window")) or _span(row.get("steps"))
    per_step = _step_ranges(row.get("step_bands"))
    if per_step:
        return Band(window=window, reduce=_text(row.get("reduce")), per_step=per_step)
    base = row.get("baseline")
    if isinstance(base, Mapping):  # the nested shape
        series = {int(s): v for s, v in _steps(base.get("series")).items()}
        band = Band(finite(base.get("value")), finite(base.get("low")), finite(base.get("high")),
                    series, window, finite(row.get("value")), _text(row.get("reduce")))
    else:
        band = Band(finite(base), finite(row.get("lower")), finite(row.get("upper")),
                    window=window, measured=finite(row.get("value")),
                    reduce=_text(row.get("reduce")))
    if band.value is None and not band.series:
        return None
    return band


def _step_ranges(data: Any) -> dict[int, StepRange]:
    if not isinstance(data, Mapping):
        return {}
    out: dict[int, StepRange] = {}
    for step, item in data.items():
        key = _step(step)
        if key is None or not isinstance(item, Mapping):
            continue
        reference = finite(item.get("reference"))
        if reference is not None:
            out[key] = StepRange(reference, finite(item.get("lower")), finite(item.get("upper")))
    return dict(sorted(out.items()))


def _steps(data: Any) -> dict[int, float]:
    if not isinstance(data, Mapping):
        return {}
    pairs = ((_step(s), finite(v)) for s, v in data.items())
    return {s: v for s, v in pairs if s is not None and v is not None}


def _step(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.isdigit():
        return int(value)
    return None


def _window(value: Any) -> tuple[int, int] | None:
    if isinstance(value, (list, tuple)) and len(value) == 2:
        first, last = (finite(v) for v in value)
        if first is not None and last is not None and first <= last:
            return int(first), int(last)
    return None


def _span(steps: Any) -> tuple[int, int] | None:
    """The steps a statistic came from, when its row names no window (``last``: one step)."""
    if not isinstance(steps, (list, tuple)):
        return None
    found = [s for s in (_step(v) for v in steps) if s is not None]
    return (min(found), max(found)) if found else None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None
