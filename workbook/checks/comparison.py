"""Per-metric policy checks: baseline comparison, finite at every step, within bounds.

The comparison follows verl's nightly comparator: reduce the run's series (``last`` step, or
``mean`` over an inclusive step window), take the difference from the baseline's value, and
fail only in the worse direction beyond ``atol + rtol * |baseline|`` (verl's "5 %" is
``rtol: 0.05`` relative to the baseline, "1 GB" is ``atol: 1``). Whatever cannot be computed is an
``error`` row that says why, never a pass.
"""

from __future__ import annotations

import math

from workbook.checks.baseline import Baseline, BaselineMetric
from workbook.checks.reductions import WINDOWED, ReductionError, reduce_series, window_text
from workbook.checks.rows import CheckRow, error_row
from workbook.checks.spec import CheckSpec, MetricPolicy
from workbook.metrics.model import RunMetrics


def active_policies(spec: CheckSpec, baseline: Baseline | None) -> list[MetricPolicy]:
    """Policies in effect for this spec and baseline (baseline tolerances merged in)."""
    policies = []
    for name in spec.policy_names():
        entry = baseline.metrics.get(name) if baseline else None
        policy = spec.policy(name, entry.tolerance if entry else None)
        if policy is not None:
            policies.append(policy)
    return policies


def compares(policy: MetricPolicy, baseline: Baseline | None) -> bool:
    """Whether a policy yields a baseline row (defaults only for metrics the baseline names)."""
    named = baseline is not None and policy.metric in baseline.metrics
    return policy.compare and (named or policy.explicit)


def policy_rows(metrics: RunMetrics, spec: CheckSpec, baseline: Baseline | None) -> list[CheckRow]:
    rows: list[CheckRow] = []
    for policy in active_policies(spec, baseline):
        logged = metrics.has(policy.metric)
        if policy.finite and (logged or policy.explicit):
            rows.append(finite_row(metrics, policy))
        if policy.bounds and (logged or policy.explicit):
            rows.append(bounds_row(metrics, policy))
        if compares(policy, baseline):
            rows.append(baseline_row(metrics, policy, baseline))
    return rows


def finite_row(metrics: RunMetrics, policy: MetricPolicy) -> CheckRow:
    name = f"{policy.metric} finite"
    series = metrics.series(policy.metric)
    if not series:
        return error_row(name, "finite", f"{policy.metric} was not logged", metric=policy.metric)
    bad = [s for s, v in series.items() if not math.isfinite(v)]
    return CheckRow(
        name=name, kind="finite", status="fail" if bad else "pass", value=float(len(bad)),
        expected="finite at every step", metric=policy.metric, steps=list(series),
        message=f"not finite at step(s) {_steps_text(bad)}" if bad else "")


def bounds_row(metrics: RunMetrics, policy: MetricPolicy) -> CheckRow:
    lo, hi = policy.bounds or (None, None)
    name = f"{policy.metric} within [{_bound(lo)}, {_bound(hi, 'inf')}]"
    series = metrics.series(policy.metric)
    if not series:
        return error_row(name, "bounds", f"{policy.metric} was not logged", metric=policy.metric)
    outside = [s for s, v in series.items()
               if math.isnan(v) or (lo is not None and v < lo) or (hi is not None and v > hi)]
    value = series[outside[0]] if outside else max(series.values())
    return CheckRow(
        name=name, kind="bounds", status="fail" if outside else "pass", value=value,
        expected=f"[{_bound(lo)}, {_bound(hi, 'inf')}] at every step", metric=policy.metric,
        lower=lo, upper=hi, steps=list(series),
        message=(f"outside at step(s) {_steps_text(outside)} (e.g. {value:.6g} at step "
                 f"{outside[0]})") if outside else "")


def baseline_row(metrics: RunMetrics, policy: MetricPolicy, baseline: Baseline | None) -> CheckRow:
    metric = policy.metric
    windowed = policy.reduce in WINDOWED
    info = {"metric": metric, "reduce": policy.reduce,
            "window": policy.window if windowed else None}
    name = f"{metric} vs baseline"
    entry = baseline.metrics.get(metric) if baseline else None
    if entry is None:
        why = "no baseline was given" if baseline is None else "the baseline has no value for it"
        return error_row(name, "baseline", f"{metric}: {why}", **info)
    last = metrics.last_step
    if windowed and (last is None or last < policy.window[1]):
        return error_row(name, "baseline", (
            f"window {window_text(policy.window)} does not fit the run: it needs step "
            f"{policy.window[1]}, the run's last step is {last}"), **info)
    try:
        value, steps = reduce_series(metrics.series(metric), policy.reduce,
                                     policy.window, last_step=last, name=metric)
        reference, note = reference_value(entry, policy)
    except ReductionError as exc:
        return error_row(name, "baseline", str(exc), **info)
    if policy.atol is None and policy.rtol is None:
        return error_row(name, "baseline", f"{metric}: no tolerance; set atol or rtol, or "
                                           "bless the baseline from several runs", **info)
    allowed = policy.allowed(reference)
    lower = None if policy.direction == "higher_is_worse" else reference - allowed
    upper = None if policy.direction == "lower_is_worse" else reference + allowed
    delta = value - reference
    failed = (math.isnan(value) or (lower is not None and value < lower)
              or (upper is not None and value > upper))
    how = (f"{policy.reduce} over {window_text(policy.window)}" if windowed else
           f"last step {steps[0]}" if policy.reduce == "last" else f"{policy.reduce} of all steps")
    if windowed and len(steps) < policy.window[1] - policy.window[0] + 1:
        how += f" ({len(steps)} steps logged)"
    pct = f" ({delta / abs(reference) * 100:+.2f}%)" if reference else ""
    return CheckRow(
        name=name, kind="baseline", status="fail" if failed else "pass", value=value,
        expected=_expected(policy, reference, lower, upper), baseline=reference,
        lower=lower, upper=upper, steps=steps, metric=metric, reduce=policy.reduce,
        window=policy.window if windowed else None, baseline_series=dict(entry.series),
        message=f"{how}: {value:.6g}, {delta:+.6g}{pct} vs baseline {reference:.6g}{note}")


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
    held = entry.reduce + (f" over {window_text(entry.window)}" if entry.window else "")
    raise ReductionError(f"the baseline holds {policy.metric} as {held} without a series; the "
                         f"policy asks for {policy.reduce}; bless again or change the policy")


def _expected(policy: MetricPolicy, reference: float, lower: float | None,
              upper: float | None) -> str:
    parts = [f"{policy.atol:g}" if policy.atol else "",
             f"{policy.rtol * 100:.4g}%" if policy.rtol else ""]
    tol = " + ".join(p for p in parts if p) or "0"
    if lower is None:
        return f"<= {upper:.6g} (baseline {reference:.6g} + {tol})"
    if upper is None:
        return f">= {lower:.6g} (baseline {reference:.6g} - {tol})"
    return f"{reference:.6g} ± {tol}"


def _bound(value: float | None, open_end: str = "-inf") -> str:
    return open_end if value is None else f"{value:g}"


def _steps_text(steps: list[int]) -> str:
    shown = ", ".join(str(s) for s in steps[:8])
    return shown + (f" and {len(steps) - 8} more" if len(steps) > 8 else "")
