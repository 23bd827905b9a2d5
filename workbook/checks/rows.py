"""One row of a verdict: a check, its value, what was expected, and whether it held.

Statuses:

- ``pass`` / ``fail``: the check was computed and held / did not hold;
- ``improved``: a baseline comparison of a one-sided policy (``higher_is_worse``,
  ``lower_is_worse``) held, and by more than its band allows: the value lies beyond the band's
  worse edge mirrored about the reference (``improved_beyond``), on the good side. Counted as
  held, apart from the passes: the baseline no longer describes the run and is due a refresh;
- ``suspect``: a baseline comparison that did not hold, of a policy with ``confirm_nights`` > 1,
  on fewer nights in a row than that (:mod:`workbook.checks.confirmation`): counted as held,
  apart from the passes; one more night beyond the band and it is a ``fail``;
- ``error``: the check could not be computed (a metric missing, a window the run does not
  cover): never a pass, counted as a failure;
- ``not_measured``: the hardware does not measure the metric (device memory on CPU): neither
  a pass nor a failure, shown grey;
- ``not_comparable``: the baseline comes from other hardware or other settings, so the
  comparison would say nothing: neither a pass nor a failure, shown grey with the reason.

A baseline row says how it compared (``compared_by``): ``window``, one statistic of the window
against one band (``value`` within ``lower``..``upper``), or ``steps``, each step of the window
against its own band (``step_bands``, one :class:`StepBand` per step judged; ``value`` is then
the worst step's, or the most improved one's, and ``baseline``/``lower``/``upper`` are left
empty, as no one band was used; so is ``improved_beyond``, which each one-sided step band
carries instead).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

PASS, IMPROVED, FAIL, ERROR = "pass", "improved", "fail", "error"
SUSPECT = "suspect"
HELD = (PASS, IMPROVED, SUSPECT)  # judged, and not bad
BAD = (FAIL, ERROR)      # judged, and the run regressed
JUDGED = HELD + BAD
NEUTRAL = ("not_measured", "not_comparable")
STATUSES = JUDGED + NEUTRAL
# what produced a row; "run" rows (completion, steps) decide a *failed* verdict
KINDS = ("run", "finite", "bounds", "baseline", "expression")


@dataclass(frozen=True)
class StepBand:
    """One step of a per-step comparison: the run's value there and the band it had to stay in."""

    value: float
    reference: float
    lower: float | None  # None: that side is open
    upper: float | None
    sigma: float | None = None  # the blessed runs' spread at the step the band came from
    improved_beyond: float | None = None  # a one-sided band's good-side edge (None: two-sided)

    @property
    def holds(self) -> bool:
        if math.isnan(self.value):
            return False
        return (self.lower is None or self.value >= self.lower) and (
            self.upper is None or self.value <= self.upper)

    @property
    def improved(self) -> bool:
        """Beyond the good-side edge: better than the baseline by more than the band allows."""
        return improves(self.value, self.improved_beyond, better_below=self.upper is not None)

    def to_dict(self) -> dict[str, Any]:
        data = {k: (v if v is None or math.isfinite(v) else str(v))
                for k, v in asdict(self).items()}
        if self.improved_beyond is None:  # a two-sided band has no good side: nothing to say
            del data["improved_beyond"]
        return data


@dataclass
class CheckRow:
    """A check's outcome, plus what a plot of a regression needs (baseline value and band)."""

    name: str
    kind: str
    status: str
    value: float | None = None
    expected: str = ""
    message: str = ""
    metric: str | None = None
    baseline: float | None = None  # the reference value compared with
    lower: float | None = None     # allowed range of `value` (None: open)
    upper: float | None = None
    sigma: float | None = None     # spread of the blessed runs the band came from
    band: str | None = None        # how the band was made, e.g. "4 sigma (sigma 0.012, 3 runs)"
    reduce: str | None = None
    window: tuple[int, int] | None = None
    steps: list[int] = field(default_factory=list)  # steps the value was computed from
    source: str | None = None      # the expression text, for expression rows
    baseline_series: dict[int, float] = field(default_factory=dict)  # per step, to draw the curve
    compared_by: str | None = None  # a baseline row's basis: "window" or "steps"
    step_bands: dict[int, StepBand] = field(default_factory=dict)  # per step, when by steps
    # a one-sided comparison's worse edge mirrored about the reference: beyond it, ``improved``
    improved_beyond: float | None = None

    @property
    def passed(self) -> bool:
        return self.status == PASS

    @property
    def judged(self) -> bool:
        """Counted in the verdict (neutral rows are shown, never counted either way)."""
        return self.status in JUDGED

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        for key in ("value", "baseline", "lower", "upper", "sigma", "improved_beyond"):
            if data[key] is not None and not math.isfinite(data[key]):
                data[key] = str(data[key])  # JSON has no NaN/inf; keep them visible as text
        data["window"] = list(self.window) if self.window else None
        data["baseline_series"] = {str(s): (v if math.isfinite(v) else None)
                                   for s, v in sorted(self.baseline_series.items())}
        data["step_bands"] = {str(s): b.to_dict() if isinstance(b, StepBand) else b
                              for s, b in sorted(self.step_bands.items())}
        return data


def improves(value: float, edge: float | None, *, better_below: bool) -> bool:
    """Whether ``value`` lies strictly beyond a good-side ``edge`` (below it when lower values
    are better); never for a two-sided band (no edge) or a NaN."""
    if edge is None or math.isnan(value):
        return False
    return value < edge if better_below else value > edge


def error_row(name: str, kind: str, message: str, **extra: Any) -> CheckRow:
    return CheckRow(name=name, kind=kind, status=ERROR, message=message, **extra)


def steps_text(steps: list[int]) -> str:
    """``1, 2, 3`` (the first eight, then how many more)."""
    shown = ", ".join(str(s) for s in steps[:8])
    return shown + (f" and {len(steps) - 8} more" if len(steps) > 8 else "")
