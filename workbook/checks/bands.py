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

Per step, where the blessed runs agree step by step: the band above is made of one window
statistic, so a fault confined to one step can hide in the mean. Where the runs reproduce every
step of the window (:func:`agree_step_by_step`), each step gets its own band instead, by the same
rules around the runs' mean at that step from their spread there (:func:`step_band_for`); a
scenario picks either with ``compare_by`` and :func:`basis` decides for ``auto``.

Only the worse side is bounded for one-sided policies (a faster step is not a regression); a
value beyond that edge mirrored about the reference (:attr:`Band.improved_beyond`) is better
than the runs' noise explains, and its row says ``improved`` (the baseline is stale).
A band is refused at validation when it admits every value the metric can take
(:func:`can_fail`), e.g. a clip-fraction band covering all of [0, 1].
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from workbook.checks.baseline import Baseline, BaselineMetric
from workbook.checks.domains import depends_on_hardware, domain
from workbook.checks.reductions import WINDOWED
from workbook.checks.rows import improves
from workbook.checks.spec import BY_STEPS, BY_WINDOW, CheckSpec, MetricPolicy

K_SIGMA = 4.0
MIN_RUNS_FOR_SIGMA = 3
REL_FLOOR = 0.02
# Unchanged idle runs of the tiny GSPO scenario on a 2-core VM ranged over 16 % in step time within
# an hour (benchmarks/timing_noise.py, 2026-12-01); a band blessed from 3 of them that happen to
# agree would fail the fourth at 10 %.
REL_FLOOR_HARDWARE = 0.20
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

    @property
    def improved_beyond(self) -> float | None:
        """A one-sided band's worse edge mirrored about the reference, on its open side (None
        for a two-sided band, whose outside is a failure either way)."""
        if self.lower is None and self.upper is not None:
            return self.reference - self.half_width
        if self.upper is None and self.lower is not None:
            return self.reference + self.half_width
        return None

    def improves(self, value: float) -> bool:
        """Beyond :attr:`improved_beyond`: better than the baseline by more than the band
        allows for noise, so the baseline no longer describes the run."""
        return improves(value, self.improved_beyond, better_below=self.upper is not None)

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
    if entry is None:
        return _band(policy, reference, None, None)
    return _band(policy, reference, entry.sigma, entry.n)


def step_band_for(policy: MetricPolicy, entry: BaselineMetric, step: int) -> Band | None:
    """The band of ``step`` in a per-step comparison, or None (no mean there, or no band).

    The same rules as the window statistic's band, around the blessed runs' mean at the step
    (``series``) from their spread there (``series_sigma``): k sigma, the floor of the step's
    value, the scenario's tolerance of it; no spread known there leaves only the tolerance.
    """
    reference = entry.series.get(step)
    if reference is None or not math.isfinite(reference):
        return None
    return _band(policy, reference, entry.series_sigma.get(step), entry.n)


def agree_step_by_step(series: Mapping[int, float], series_sigma: Mapping[int, float],
                       window: tuple[int, int], k: float, window_half: float) -> bool:
    """Whether the blessed runs agree step by step over ``window``, so that each step of a run
    can be judged against the runs' own value at that step.

    True when the baseline holds a mean for at least one step of the window and, at every step
    of the window it holds, the runs' spread ``sigma_s`` is known and ``k * sigma_s`` is within

    - ``max(REL_FLOOR * |mean_s|, ABS_FLOOR)``: the runs reproduce the step to within less than
      any band tolerates as a change, so that step's mean is as sound a reference as the window's
      mean (the wider hardware floor is not used here: a shared machine moves single steps of a
      steady timing, and three runs that happen to agree do not make one step reliable), and
    - ``window_half``, the half-width of the band the window statistic gets: no step's band
      needs to be looser than the window's, so judging step by step only adds power.

    Runs that differ step by step but average out over the window (timings, sampled rollouts)
    fail the first test, and their window statistic is the stronger check.
    """
    steps = [s for s in series if window[0] <= s <= window[1]]
    if not steps:
        return False
    for step in steps:
        mean, sigma = series[step], series_sigma.get(step)
        if sigma is None or not (math.isfinite(sigma) and math.isfinite(mean)):
            return False
        if k * sigma > min(max(REL_FLOOR * abs(mean), ABS_FLOOR), window_half):
            return False
    return True


def basis(policy: MetricPolicy, entry: BaselineMetric, window_band: Band | None) -> str:
    """How ``policy`` compares a run with ``entry``: ``"steps"`` (each step of the window
    against its own band) or ``"window"`` (the window statistic against ``window_band``).

    ``compare_by`` decides when the scenario sets it to window or steps (steps needs a windowed
    reduction; validation says so). ``auto`` compares by steps only where the baseline was
    blessed from enough runs to know each step's spread and :func:`agree_step_by_step` holds; a
    baseline written before the per-step spread was recorded is compared by its window.
    """
    if policy.reduce not in WINDOWED or policy.compare_by == BY_WINDOW:
        return BY_WINDOW
    if policy.compare_by == BY_STEPS:
        return BY_STEPS
    if (window_band is None or window_band.sigma is None or not entry.series_sigma
            or (entry.n or 0) < MIN_RUNS_FOR_SIGMA):
        return BY_WINDOW
    agree = agree_step_by_step(entry.series, entry.series_sigma, policy.window,
                               policy.k or K_SIGMA, window_band.half_width)
    return BY_STEPS if agree else BY_WINDOW


def _band(policy: MetricPolicy, reference: float, sigma: float | None,
          n: int | None) -> Band | None:
    half, used, how = _half_width(policy, reference, sigma, n)
    if half is None:
        return None
    lower = None if policy.direction == "higher_is_worse" else reference - half
    upper = None if policy.direction == "lower_is_worse" else reference + half
    return Band(reference, lower, upper, half, used, how)


def _half_width(policy: MetricPolicy, reference: float, sigma: float | None,
                n: int | None) -> tuple[float | None, float | None, str]:
    tolerance = policy.allowed(reference)
    if (n or 0) < MIN_RUNS_FOR_SIGMA:
        sigma = None
    if sigma is None or not math.isfinite(sigma):
        if tolerance is None:
            return None, None, ""
        return tolerance, None, f"tolerance {_tolerance_text(policy)}"
    k = policy.k or K_SIGMA
    least = floor(policy.metric, reference)
    half, how = k * sigma, f"{k:g} sigma (sigma {sigma:.3g}, {n} runs)"
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


def _tolerance_text(policy: MetricPolicy) -> str:
    parts = [f"{policy.atol:g}" if policy.atol else "",
             f"{policy.rtol * 100:.4g}%" if policy.rtol else ""]
    return " + ".join(p for p in parts if p) or "0"
