"""Health checks every run gets, with or without a scenario or a baseline.

- **run completed**: the process (or, for a bare log, the log) shows no fatal error after the
  last step, a zero exit code when one is known, was not stopped, and completed a training
  step (no evidence, no pass: a clean exit with no step is a failed run, "no metrics");
- **reached step N**: the run logged the step it was meant to reach (``min_steps``, else the
  steps the scenario trains, else what the log itself states);
- **finite**: every loss, KL, entropy and gradient-norm metric is finite at every step; the
  first NaN or infinity names the step and metric, and the verdict's diagnosis says "diverged";
- **clip fractions within [0, 1]**;
- **rollout and training probabilities agree**: in a synchronous on-policy run the rollout
  engine and the trainer score the same tokens with the same weights, so the difference of their
  probabilities (``training/rollout_probs_diff_mean``, and ``..._max`` when logged) is numerics
  at every step whose rollout was generated. Sampling settings the trainer does not know, weights
  synced wrong into the rollout, a broken log-prob path all show here first. A replayed step is
  left out (the dump's responses came from an older policy, so the difference grows by design);
  a run that never logged the metric, or replayed every step, gets no row. The bound is set per
  hardware profile where it was measured (:data:`ROLLOUT_PROBS_BOUNDS`): elsewhere the
  numerics differ (Ascend's bf16 nightly logs 4.5e-3 on a healthy run) and there is no row.

The first two are ``run`` rows: when one fails the run itself failed (exit 3). The others are
checks: a failure is a regression (exit 1).
"""

from __future__ import annotations

import math
from typing import Any

from workbook.checks.domains import is_clip_fraction, must_be_finite
from workbook.checks.evidence import Evidence
from workbook.checks.rows import CheckRow, steps_text
from workbook.core.status import RunStatus
from workbook.metrics.diagnosis import NO_METRICS_LABEL

FINITE_CHECK = "losses, KL, entropy and gradient norms finite"
CLIP_CHECK = "clip fractions within [0, 1]"
ROLLOUT_CHECK = "rollout and training probabilities agree"
PROBS_DIFF_MEAN = "training/rollout_probs_diff_mean"
PROBS_DIFF_MAX = "training/rollout_probs_diff_max"

# Measured on the cpu profile (fp32, vLLM-CPU, the tiny GSPO scenario, a 2-core VM, 2026-12-01): a
# live run's mean difference stays at 2.7-2.9e-5 at every step (36 steps of 9 live runs, idle or
# loaded); sampling at twice the temperature the trainer assumes (the detection benchmark's
# hot_sampling fault) gives 2.3e-4 at every step. 1e-4 is 3.4x the live value. A replayed run's
# difference grows 2.7e-5 -> 1.5e-4 over 4 steps as the policy leaves the one that made the dump,
# which is why replayed steps are left out.
ROLLOUT_PROBS_DIFF_MEAN_MAX = 1e-4
# The largest single-token difference, live: 1.0-1.4e-4 on the same runs (7x that); hot_sampling:
# 1.7-2.2e-3.
ROLLOUT_PROBS_DIFF_MAX_MAX = 1e-3
# Bounds per hardware profile, only where measured.
ROLLOUT_PROBS_BOUNDS: dict[str, dict[str, float]] = {
    "cpu": {PROBS_DIFF_MEAN: ROLLOUT_PROBS_DIFF_MEAN_MAX, PROBS_DIFF_MAX: ROLLOUT_PROBS_DIFF_MAX_MAX},
}


def health_rows(evidence: Evidence, min_steps: int | None,
                window_end: int | None = None) -> list[CheckRow]:
    """The run rows, then the finite and clip-fraction rows for what the run logged.

    The step a run must reach: ``min_steps``, else the steps it was to train, else (nothing
    says how many) the end of the widest window a baseline comparison reduces over.
    """
    rows = [completed_row(evidence)]
    required, why = required_step(evidence, min_steps, window_end)
    if required is not None:
        rows.append(steps_row(evidence, required, why))
    if len(evidence.metrics):
        rows += [r for r in (finite_row(evidence), clip_row(evidence), rollout_row(evidence))
                 if r is not None]
    return rows


def completed_row(evidence: Evidence) -> CheckRow:
    d = evidence.diagnosis
    status, last = d.get("status"), d.get("last_step")
    code = evidence.run.get("exit_code")
    value = None if code is None else float(code)
    expected = "finished: exit code 0, no fatal error in the log, a training step completed"
    name = "run completed"
    if not evidence.trained and status not in (RunStatus.FAILED, RunStatus.STOPPED):
        # The diagnosis of gathered evidence says so already; evidence built elsewhere may not.
        return CheckRow(name=name, kind="run", status="fail", value=value, expected=expected,
                        message=f"{NO_METRICS_LABEL} (diagnosis: {status})")
    if status == RunStatus.SUCCEEDED:
        return CheckRow(name=name, kind="run", status="pass", value=value, expected=expected,
                        message=str(d.get("summary") or ""))
    if status == "incomplete" and evidence.bare and evidence.expected_steps is None:
        # A bare log that states no total and shows no fatal error: nothing says it failed.
        return CheckRow(name=name, kind="run", status="pass", value=value, expected=expected,
                        message="no fatal error in the log; it does not state how many steps "
                                f"the run was to train (last step {last})")
    message = str(d.get("summary") or f"run {status}")
    return CheckRow(name=name, kind="run", status="fail", value=value, expected=expected,
                    message=message)


def required_step(evidence: Evidence, min_steps: int | None,
                  window_end: int | None) -> tuple[int | None, str]:
    """The step the run must reach, and why."""
    if min_steps:
        return min_steps, "min_steps"
    if evidence.expected_steps:
        return evidence.expected_steps, f"the steps {evidence.expected_from} says it trains"
    if window_end:
        return window_end, "the end of the checks window"
    return None, ""


def steps_row(evidence: Evidence, required: int, source: str) -> CheckRow:
    last = evidence.metrics.last_step
    ok = last is not None and last >= required
    return CheckRow(
        name=f"reached step {required}", kind="run", status="pass" if ok else "fail",
        value=None if last is None else float(last), expected=f">= {required} ({source})",
        message="" if ok else (f"the run stopped at step {last}, before step {required}"
                               if last is not None else "no step completed"))


def finite_row(evidence: Evidence) -> CheckRow | None:
    """One row over every loss/KL/entropy/grad-norm metric; the first non-finite value wins."""
    metrics = evidence.metrics
    names = [n for n in metrics.names() if must_be_finite(n)]
    if not names:
        return None
    bad: dict[str, list[int]] = {}
    first: tuple[int, str, float] | None = None
    for name in names:
        for step, value in metrics.series(name).items():
            if not math.isfinite(value):
                bad.setdefault(name, []).append(step)
                if first is None or step < first[0]:
                    first = (step, name, value)
    expected = f"finite at every step ({len(names)} metrics)"
    if first is None:
        return CheckRow(name=FINITE_CHECK, kind="finite", status="pass", expected=expected,
                        steps=metrics.step_numbers)
    step, metric, value = first
    others = "; ".join(f"{n} at step(s) {steps_text(s)}" for n, s in bad.items() if n != metric)
    message = f"{metric} is {value} at step {step} (first non-finite value)"
    return CheckRow(name=FINITE_CHECK, kind="finite", status="fail", value=value,
                    expected=expected, metric=metric, steps=bad[metric],
                    message=message + (f"; also {others}" if others else ""))


def clip_row(evidence: Evidence) -> CheckRow | None:
    metrics = evidence.metrics
    names = [n for n in metrics.names() if is_clip_fraction(n)]
    if not names:
        return None
    outside: list[tuple[int, str, float]] = []
    for name in names:
        outside += [(s, name, v) for s, v in metrics.series(name).items()
                    if math.isnan(v) or not 0.0 <= v <= 1.0]
    expected = f"within [0, 1] at every step ({', '.join(names)})"
    if not outside:
        return CheckRow(name=CLIP_CHECK, kind="bounds", status="pass", expected=expected,
                        lower=0.0, upper=1.0)
    step, metric, value = min(outside)
    return CheckRow(name=CLIP_CHECK, kind="bounds", status="fail", value=value,
                    expected=expected, metric=metric, lower=0.0, upper=1.0,
                    steps=sorted({s for s, n, _ in outside if n == metric}),
                    message=f"{metric} is {value:.6g} at step {step}")


def rollout_row(evidence: Evidence) -> CheckRow | None:
    """Rollout and training probabilities of the same tokens within numerics at every generated
    step (None: no bound for this hardware, the metric not logged, or every step replayed)."""
    bounds = ROLLOUT_PROBS_BOUNDS.get(evidence.profile or "")
    if not bounds or not evidence.metrics.has(PROBS_DIFF_MEAN):
        return None
    if evidence.replays_unknown:
        return CheckRow(name=ROLLOUT_CHECK, kind="bounds", status="not_comparable",
                        metric=PROBS_DIFF_MEAN, expected="at every generated step",
                        message="the scenario replays a rollout dump and nothing left says which "
                        "steps replayed it (the log lost its lines): generated steps cannot be "
                        "told from replayed ones")
    replayed = set(evidence.replayed_steps)
    series = {name: {s: v for s, v in evidence.metrics.series(name).items() if s not in replayed}
              for name in bounds if evidence.metrics.has(name)}
    steps = sorted({s for values in series.values() for s in values})
    if not steps:
        return None
    upper = bounds[PROBS_DIFF_MEAN]
    expected = " and ".join(f"{n} <= {b:g}" for n, b in bounds.items() if n in series) + (
        " at every generated step" + (f" (replayed steps {steps_text(sorted(replayed))} left "
                                      "out)" if replayed else ""))
    above = [(s, n, v) for n, values in series.items() for s, v in values.items()
             if not v <= bounds[n]]  # NaN is above every bound
    if not above:
        worst = max(series[PROBS_DIFF_MEAN].values(), default=None)
        return CheckRow(name=ROLLOUT_CHECK, kind="bounds", status="pass", value=worst,
                        expected=expected, metric=PROBS_DIFF_MEAN, lower=0.0, upper=upper,
                        steps=steps)
    step, metric, value = min(above, key=lambda a: (a[0], a[1] != PROBS_DIFF_MEAN))
    bad = sorted(s for s, n, _ in above if n == metric)
    return CheckRow(
        name=ROLLOUT_CHECK, kind="bounds", status="fail", value=value, expected=expected,
        metric=metric, lower=0.0, upper=bounds[metric], steps=bad,
        message=(f"{metric} is {value:.3g} at step {step}, above {bounds[metric]:g} (a live "
                 "rollout and the trainer disagree on the same tokens: sampling settings, the "
                 "weights synced into the rollout, or a log-prob path changed)"
                 + (f"; also at step(s) {steps_text(bad[1:])}" if len(bad) > 1 else "")))


def divergence(rows: list[CheckRow], last_step: int | None) -> dict[str, Any] | None:
    """The ``diverged`` diagnosis when the finite check failed, else None."""
    row = next((r for r in rows if r.kind == "finite" and r.status == "fail"), None)
    if row is None:
        return None
    return {"status": "diverged", "category": "diverged",
            "summary": f"Training diverged: {row.message}", "evidence": [row.message],
            "last_step": last_step}
