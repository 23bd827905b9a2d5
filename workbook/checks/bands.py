"""The band a reduced metric must stay in around its baseline, and whether it can fail at all.

Where the band comes from, first match wins:

1. the baseline was blessed from N >= 3 runs, so it carries the spread ``sigma`` of their
   reduced values: the band is ``reference ± max(K_SIGMA * sigma, floor)`` (the scenario's
   ``k`` replaces ``K_SIGMA`` for a metric); a scenario ``atol``/``rtol`` may *widen* it, never
   narrow it below what the runs' own noise needs;
2. no sigma (a baseline imported from verl's Ascend text, or blessed from fewer runs): the
   policy's tolerance, ``atol + rtol * |reference|`` (verl's nightly 5 %, 1 GB, 0.05);
3. neither: no band, so no comparison (a default policy without a tolerance skips the metric).

``K_SIGMA = 4``: with the runs' noise roughly normal, an unchanged run leaves a 4-sigma band
about once in 16,000 checks. The floor keeps a band from collapsing where the blessed runs
agreed exactly (replayed rollouts make the training side deterministic, so sigma is often 0):
``REL_FLOOR`` of the reference (``REL_FLOOR_HARDWARE`` for time, throughput and memory, which a
shared machine moves more), and never below ``ABS_FLOOR``.

Only the worse side is bounded for one-sided policies (a faster step is not a regression).
A band is refused at validation when it admits every value the metric can take
(:func:`can_fail`), e.g. a clip-fraction band covering all of [0, 1].
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from workbook.checks.baseline import Baseline, BaselineMetric
from workbook.checks.domains import depends_on_hardware, domain
from workbook.checks.spec import CheckSpec, MetricPolicy

K_SIGMA = 4.0
MIN_RUNS_FOR_SIGMA = 3
REL_FLOOR = 0.02
REL_FLOOR_HARDWARE = 0.10
ABS_FLOOR = 1e-6


@dataclass(frozen=True)
class Band:
    """Allowed values of a reduced metric (``None``: that side is open)."""

    reference: float
    lower: float | None
    upper: float | None
    half_width: float
    sigma: float | None
    how: str  # "4 sigma (sigma 0.012, 3 runs)", "floor 2% (sigma 0)", "nightly tolerance 5%"

    def holds(self, value: float) -> bool:
        if math.isnan(value):
            return False
        return (self.lower is None or value >= self.lower) and (
            self.upper is None or value <= self.upper)

    def text(self) -> str:
        """``0.17 ± 0.012`` or ``<= 11.3``, as the checks table shows it."""
        if self.lower is None:
            return f"<= {self.upper:.6g}"
        if self.upper is None:
            return f">= {self.lower:.6g}"
        return f"{self.reference:.6g} ± {self.half_width:.3g}"


def floor(metric: str, reference: float) -> float:
    """The narrowest half-width a band may have around ``reference``."""
    share = REL_FLOOR_HARDWARE if depends_on_hardware(metric) else REL_FLOOR
    return max(share * abs(reference), ABS_FLOOR)


def band_for(policy: MetricPolicy, entry: BaselineMetric | None, reference: float) -> Band | None:
    """The band ``policy`` allows around ``reference`` (the baseline's value), or None."""
    half, sigma, how = _half_width(policy, entry, reference)
    if half is None:
        return None
    lower = None if policy.direction == "higher_is_worse" else reference - half
    upper = None if policy.direction == "lower_is_worse" else reference + half
    return Band(reference, lower, upper, half, sigma, how)


def _half_width(policy: MetricPolicy, entry: BaselineMetric | None,
                reference: float) -> tuple[float | None, float | None, str]:
    tolerance = policy.allowed(reference)
    sigma = entry.sigma if entry is not None and (entry.n or 0) >= MIN_RUNS_FOR_SIGMA else None
    if sigma is None or not math.isfinite(sigma):
        if tolerance is None:
            return None, None, ""
        return tolerance, None, f"tolerance {_tolerance_text(policy)}"
    k = policy.k or K_SIGMA
    least = floor(policy.metric, reference)
    half, how = k * sigma, f"{k:g} sigma (sigma {sigma:.3g}, {entry.n if entry else 0} runs)"
    if half < least:
        half, how = least, f"floor {least:.3g} (sigma {sigma:.3g} is below it)"
    if policy.scenario_tolerance and tolerance is not None and tolerance > half:
        half, how = tolerance, f"widened by the scenario to {_tolerance_text(policy)} " \
                               f"(sigma {sigma:.3g})"
    return half, sigma, how


def compares(policy: MetricPolicy, baseline: Baseline | None) -> bool:
    """Whether a policy yields a baseline row: the scenario asked, or the baseline has a band."""
    if not policy.compare:
        return False
    entry = baseline.metrics.get(policy.metric) if baseline is not None else None
    if policy.explicit and (policy.scenario_tolerance or entry is not None):
        return True
    if entry is None:
        return False
    return entry.sigma is not None or policy.allowed(entry.value or 0.0) is not None


def band_problems(spec: CheckSpec, baseline: Baseline | None) -> list[tuple[str, str]]:
    """Checks that could never fail, as ``(field, message)``: found before any run starts."""
    problems = []
    for policy in spec.policies():
        where = f"checks.metrics.{policy.metric}"
        if policy.bounds and not bounds_can_fail(policy.metric, policy.bounds):
            lo, hi = domain(policy.metric)
            problems.append((f"{where}.bounds", f"{list(policy.bounds)} admits every value "
                             f"{policy.metric} can take ([{lo:g}, {hi:g}]): it can never fail"))
        entry = baseline.metrics.get(policy.metric) if baseline is not None else None
        if entry is None or entry.value is None or not compares(policy, baseline):
            continue
        band = band_for(policy, entry, entry.value)
        if band is not None and not can_fail(policy.metric, band):
            lo, hi = domain(policy.metric)
            problems.append((where, f"the band {band.text()} around the baseline's "
                             f"{entry.value:.6g} ({band.how}) admits every value "
                             f"{policy.metric} can take ([{lo:g}, {hi:g}]): it can never fail"))
    return problems


def can_fail(metric: str, band: Band) -> bool:
    """False when every value ``metric`` can take lies inside the band."""
    low, high = domain(metric)
    below = band.lower is not None and band.lower > low
    above = band.upper is not None and band.upper < high
    return below or above


def bounds_can_fail(metric: str, bounds: tuple[float | None, float | None]) -> bool:
    """The same for fixed bounds ``[lo, hi]`` (``None`` open)."""
    low, high = domain(metric)
    lo, hi = bounds
    return (lo is not None and lo > low) or (hi is not None and hi < high)


def _tolerance_text(policy: MetricPolicy) -> str:
    parts = [f"{policy.atol:g}" if policy.atol else "",
             f"{policy.rtol * 100:.4g}%" if policy.rtol else ""]
    return " + ".join(p for p in parts if p) or "0"
