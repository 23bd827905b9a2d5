"""Comparisons with a baseline: reduce the run's series, compare with the baseline's band.

Following verl's nightly comparator, a series is reduced (``last`` step, or ``mean`` over an
inclusive step window) and compared with the baseline's value; the band around it is made in
:mod:`workbook.checks.bands`. Where the blessed runs agree step by step (or the scenario says
``compare_by: steps``), each step of the window is compared with its own band instead, and the
row fails when any step leaves it (:func:`workbook.checks.bands.basis` decides which). A
one-sided policy's row is ``improved`` when it holds by more than its band allows: the window
statistic, or (no step failing) any step, lies beyond the band's worse edge mirrored about the
reference; the row carries that edge (``improved_beyond``, per step in ``step_bands``) and its
message says by how much. Before comparing, a row says honestly when a comparison would mean
nothing:

- ``not_measured``: the hardware does not measure the metric (device memory on CPU);
- ``not_comparable``: the baseline's runs used other hardware (for time, throughput, memory),
  other algorithmic settings (for every metric), or every step of the window replayed its
  rollout (for generation time).

Whatever cannot be computed is an ``error`` row that says why, never a pass.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any, TypedDict

from workbook.checks.bands import Band, band_for, basis, compares, step_band_for
from workbook.checks.baseline import Baseline, BaselineMetric
from workbook.checks.conditions import described, timing_comparable
from workbook.checks.domains import depends_on_hardware, meaningless_when_replayed, unmeasured
from workbook.checks.evidence import Evidence
from workbook.checks.reductions import WINDOWED, ReductionError, reduce_series, window_text
from workbook.checks.rows import FAIL, IMPROVED, PASS, CheckRow, StepBand, error_row, steps_text
from workbook.checks.spec import BY_STEPS, BY_WINDOW, CheckSpec, MetricPolicy
from workbook.params.settings import differences
from workbook.provenance import same_hardware


class _Where(TypedDict):
    """What every baseline row of one metric records: the metric and how it was reduced."""

    metric: str
    reduce: str
    window: tuple[int, int] | None


def policy_rows(evidence: Evidence, spec: CheckSpec, baseline: Baseline | None) -> list[CheckRow]:
    """A baseline row for every policy in effect that compares."""
    unlike = _setting_differences(evidence, baseline)
    return [baseline_row(evidence, policy, baseline, unlike) for policy in spec.policies()
            if compares(policy, baseline)]


def baseline_row(evidence: Evidence, policy: MetricPolicy, baseline: Baseline | None,
                 unlike: list[str]) -> CheckRow:
    metric = policy.metric
    windowed = policy.reduce in WINDOWED
    info: _Where = {"metric": metric, "reduce": policy.reduce,
                    "window": policy.window if windowed else None}
    name = f"{metric} vs baseline"
    entry = baseline.metrics.get(metric) if baseline else None
    if entry is None:
        why = "no baseline was given" if baseline is None else "the baseline has no value for it"
        return error_row(name, "baseline", f"{metric}: {why}", **info)
    neutral = _neutral(evidence, policy, baseline, unlike)
    if neutral is not None:
        status, message = neutral
        return CheckRow(name=name, kind="baseline", status=status, message=message, **info)
    series = evidence.metrics.series(metric)
    last = evidence.metrics.last_step
    replayed = set(evidence.replayed_steps) if meaningless_when_replayed(metric) else set()
    series = {s: v for s, v in series.items() if s not in replayed}
    if windowed and (last is None or last < policy.window[1]):
        return error_row(name, "baseline", (
            f"window {window_text(policy.window)} does not fit the run: it needs step "
            f"{policy.window[1]}, the run's last step is {last}"), **info)
    try:
        value, steps = reduce_series(series, policy.reduce, policy.window, last_step=last,
                                     name=metric)
        reference, note = reference_value(entry, policy)
    except ReductionError as exc:
        return error_row(name, "baseline", str(exc), **info)
    band = band_for(policy, entry, reference)
    if basis(policy, entry, band) == BY_STEPS:
        row = _per_step_row(name, policy, entry, series, info, _replay_note(replayed))
    elif band is None:
        return error_row(name, "baseline", f"{metric}: no tolerance; bless the baseline from "
                                           "3 or more runs, or set atol, rtol or k", **info)
    else:
        row = _compared_row(name, policy, entry, band, value, steps,
                            note + _replay_note(replayed))
    return _with_machine(row, evidence, baseline)


def _with_machine(row: CheckRow, evidence: Evidence, baseline: Baseline | None) -> CheckRow:
    """A timing that failed says what the machine was like, then and now: the first thing to
    rule out before blaming the trainer."""
    if row.status != FAIL or baseline is None or not depends_on_hardware(row.metric or ""):
        return row
    machine = described(evidence.run.get("conditions"), baseline.conditions)
    return replace(row, message=f"{row.message}; {machine}") if machine else row


def _per_step_row(name: str, policy: MetricPolicy, entry: BaselineMetric,
                  series: dict[int, float], info: _Where, note: str) -> CheckRow:
    """Each step of the window against its own band; fails when any step leaves it, is improved
    when none does and one is beyond its good-side edge, and its message names the worst step
    (the one furthest outside, or nearest its edge), or the most improved one."""
    metric, window = policy.metric, policy.window
    held = sorted(s for s in entry.series if window[0] <= s <= window[1])
    judged = [s for s in held if s in series]
    if not judged:
        why = ("the baseline holds no step of it" if not held else
               f"the run logged none of the baseline's steps {steps_text(held)}")
        return error_row(name, "baseline", f"{metric} cannot be compared step by step over "
                                           f"{window_text(window)}: {why}", **info)
    bands: dict[int, Band] = {}
    for step in judged:
        band = step_band_for(policy, entry, step)
        if band is None:
            return error_row(name, "baseline", (
                f"{metric}: no band at step {step} (the baseline holds no spread there and the "
                "policy no tolerance); bless again from 3 or more runs, or set atol, rtol or k"),
                **info)
        bands[step] = band
    checks = {s: StepBand(series[s], b.reference, b.lower, b.upper, b.sigma, b.improved_beyond)
              for s, b in bands.items()}
    outside = [s for s in judged if not checks[s].holds]
    better = [] if outside else [s for s in judged if checks[s].improved]
    if better:
        shown = max(better, key=lambda s: _gain(bands[s], series[s]))
        status, found = IMPROVED, (f"every step within its band, {len(better)} of {len(judged)} "
                                   "improved beyond it; most improved: step")
    elif outside:
        shown = max(outside, key=lambda s: _excess(bands[s], series[s]))
        status = FAIL
        found = f"{len(outside)} of {len(judged)} steps outside their bands; worst step"
    else:
        shown = max(judged, key=lambda s: _excess(bands[s], series[s]))
        status, found = PASS, "every step within its band; nearest its edge: step"
    band, value = bands[shown], series[shown]
    how = f"each step of {window_text(window)}"
    if len(judged) < window[1] - window[0] + 1:
        how += f" ({len(judged)} steps)"
    gained = _improvement(band, value) if better else ""
    return CheckRow(
        name=name, kind="baseline", status=status, value=value,
        expected=f"each step within its own band (step {shown}: {band.text()})",
        sigma=band.sigma, band=f"per step; at step {shown}: {band.how}", steps=judged,
        baseline_series=dict(entry.series), compared_by=BY_STEPS, step_bands=checks,
        message=(f"{how}: {found} {shown}: {value:.6g} vs baseline {band.reference:.6g}, band "
                 f"{band.text()}{note}{gained}"), **info)


def _excess(band: Band, value: float) -> float:
    """How far ``value`` lies toward or beyond the band's worse edge, in half-widths (> 1:
    outside; NaN is the furthest of all)."""
    if math.isnan(value):
        return math.inf
    below, above = band.reference - value, value - band.reference
    delta = max(below if band.lower is not None else -math.inf,
                above if band.upper is not None else -math.inf)
    if band.half_width > 0:
        return delta / band.half_width
    return math.inf if delta > 0 else delta


def _gain(band: Band, value: float) -> float:
    """How far ``value`` lies beyond the band's good-side edge, in half-widths (> 0: improved)."""
    edge = band.improved_beyond
    if edge is None or math.isnan(value):
        return -math.inf
    beyond = edge - value if band.upper is not None else value - edge
    if band.half_width > 0:
        return beyond / band.half_width
    return math.inf if beyond > 0 else beyond


def _improvement(band: Band, value: float) -> str:
    """``; improved by 1.5 beyond 9.5 (the band's edge 10.5 mirrored about the baseline)``."""
    edge = band.improved_beyond
    worse = band.upper if band.upper is not None else band.lower
    if edge is None or worse is None:
        return ""
    return (f"; improved by {abs(value - edge):.6g} beyond {edge:.6g} (the band's edge "
            f"{worse:.6g} mirrored about the baseline)")


def _compared_row(name: str, policy: MetricPolicy, entry: BaselineMetric, band: Band,
                  value: float, steps: list[int], note: str) -> CheckRow:
    windowed = policy.reduce in WINDOWED
    how = (f"{policy.reduce} over {window_text(policy.window)}" if windowed else
           f"last step {steps[0]}" if policy.reduce == "last" else f"{policy.reduce} of all steps")
    if windowed and len(steps) < policy.window[1] - policy.window[0] + 1:
        how += f" ({len(steps)} steps)"
    delta = value - band.reference
    pct = f" ({delta / abs(band.reference) * 100:+.2f}%)" if band.reference else ""
    improved = band.holds(value) and band.improves(value)
    status = IMPROVED if improved else PASS if band.holds(value) else FAIL
    gained = _improvement(band, value) if improved else ""
    return CheckRow(
        name=name, kind="baseline", status=status, value=value,
        expected=band.text(), baseline=band.reference, lower=band.lower, upper=band.upper,
        sigma=band.sigma, band=band.how, steps=steps, metric=policy.metric,
        reduce=policy.reduce, window=policy.window if windowed else None,
        baseline_series=dict(entry.series), compared_by=BY_WINDOW,
        improved_beyond=band.improved_beyond,
        message=(f"{how}: {value:.6g}, {delta:+.6g}{pct} vs baseline {band.reference:.6g}"
                 f"{note}{gained}"))


def _neutral(evidence: Evidence, policy: MetricPolicy, baseline: Baseline | None,
             unlike: list[str]) -> tuple[str, str] | None:
    """``(status, why)`` when the comparison would mean nothing, else None."""
    metric = policy.metric
    values = list(evidence.metrics.series(metric).values())
    if unmeasured(metric, evidence.profile, values):
        return "not_measured", f"{metric} is not measured on this hardware ({evidence.profile})"
    if unlike:
        return "not_comparable", "baseline not comparable: " + "; ".join(unlike[:4]) + (
            f" and {len(unlike) - 4} more" if len(unlike) > 4 else "")
    if depends_on_hardware(metric) and baseline is not None:
        # Every reason is named: a timing measured on another machine and beside other work
        # says both (the busier machine is what a reader of a red night looks for first).
        reasons = []
        other = same_hardware(baseline.hardware_key, evidence.hardware) is False
        if other:
            reasons.append(f"baseline from {_machine(baseline.hardware_key)}, this run on "
                           f"{_machine(evidence.hardware)}")
        busier = timing_comparable(evidence.run.get("conditions"), baseline.conditions,
                                   same_cpu=not other)
        if busier:  # a timing measured beside other work says nothing about the trainer
            reasons.append(busier)
        if reasons:
            return "not_comparable", "; ".join(reasons)
    if meaningless_when_replayed(metric):
        window = set(range(policy.window[0], policy.window[1] + 1))
        generated = window - set(evidence.replayed_steps)
        if evidence.replayed_steps and not generated & set(evidence.metrics.step_numbers):
            return "not_comparable", (f"every step of {window_text(policy.window)} replayed "
                                      "its rollout from a dump: no generation was timed")
    return None


def _setting_differences(evidence: Evidence, baseline: Baseline | None) -> list[str]:
    if baseline is None or not baseline.settings or evidence.settings is None:
        return []
    return differences(baseline.settings, evidence.settings)


def reference_value(entry: BaselineMetric, policy: MetricPolicy) -> tuple[float, str]:
    """The baseline's value reduced as the policy asks; recomputed from its series if needed."""
    same = entry.reduce is None or (entry.reduce == policy.reduce and (
        policy.reduce not in WINDOWED or entry.window in (None, policy.window)))
    if same and entry.value is not None:
        return entry.value, ""
    if entry.series:
        value, _ = reduce_series(entry.series, policy.reduce, policy.window,
                                 last_step=max(entry.series), name="the baseline's series")
        return value, " (recomputed from the baseline's series)"
    held = (entry.reduce or "?") + (f" over {window_text(entry.window)}" if entry.window else "")
    raise ReductionError(f"the baseline holds {policy.metric} as {held} without a series; the "
                         f"policy asks for {policy.reduce}; bless again or change the policy")


def expected_bands(policy: MetricPolicy, entry: BaselineMetric
                   ) -> tuple[float | None, Band | None, dict[int, Band]]:
    """What a run's metric would be compared with, without a run: the reference value, its
    window band and, where the comparison goes step by step (:func:`basis`), each step's band
    (empty otherwise). ``(None, None, {})`` when the baseline cannot be reduced as the policy
    asks. A proposed baseline's review page draws these beside the blessed baseline's."""
    try:
        reference, _ = reference_value(entry, policy)
    except ReductionError:
        return None, None, {}
    band = band_for(policy, entry, reference)
    if basis(policy, entry, band) != BY_STEPS:
        return reference, band, {}
    first, last = policy.window
    steps = {s: b for s in sorted(entry.series) if first <= s <= last
             and (b := step_band_for(policy, entry, s)) is not None}
    return reference, band, steps


def _replay_note(replayed: set[int]) -> str:
    return f"; replayed steps {steps_text(sorted(replayed))} left out" if replayed else ""


def _machine(key: dict[str, Any] | None) -> str:
    if not key:
        return "unrecorded hardware"
    count = f"{key.get('count')} x " if key.get("count") else ""
    return f"{key.get('profile')}: {count}{key.get('device')}"
