"""``bless``: promote one or several good runs to a baseline, so nobody types numbers by hand.

Each metric every run logged is reduced per run as its policy says (or as a mean over the checks
window when it has none); the reference value is the mean over runs and the per-step series the
mean per step. From two or more runs the file also records the spread (min/max/mean/std of the
reduced values and per step) and a suggested tolerance::

    allowed = max(the policy's own tolerance, 3 * std, max - min)

expressed the way the policy expresses it (``rtol`` relative to the mean where the nightly
default is relative, else ``atol``), so a blessed CPU baseline is never stricter than verl's
nightly and never stricter than the runs' own noise.
"""

from __future__ import annotations

import math
import statistics
from importlib import metadata
from pathlib import Path
from typing import Any

from workbook.checks.baseline import Baseline, BaselineMetric, now_iso
from workbook.checks.inputs import load_run_metrics, params_dir_for, read_resolved_params, read_run
from workbook.checks.reductions import WINDOWED, ReductionError, reduce_series, window_text
from workbook.checks.spec import CheckSpec, MetricPolicy, parse_checks
from workbook.errors import BaselineError, ParamsError
from workbook.metrics.model import RunMetrics
from workbook.provenance import describe

SIGMAS = 3.0


def bless(run_dirs: list[Path], out: Path | None = None, *, spec: CheckSpec | None = None,
          hardware: str | None = None, scenario: str | None = None) -> Baseline:
    """Write a baseline from ``run_dirs`` to ``out`` (default: the scenario's ``checks.baseline``,
    else ``params/baselines/<scenario>.<hardware>.json``) and return it."""
    if not run_dirs:
        raise BaselineError("bless needs at least one run directory")
    dirs = [Path(d) for d in run_dirs]
    runs = [_good_run(d) for d in dirs]
    resolved = read_resolved_params(dirs[0])
    if spec is None:
        spec = _spec_from(resolved)
    scenario = scenario or resolved.get("name") or dirs[0].parent.name
    hardware = hardware or resolved.get("profile") or "unknown"
    metrics = [m for m, _ in runs]
    names = sorted(set.intersection(*(set(m.names()) for m in metrics)))
    _require_window(dirs, metrics, spec, names)
    entries: dict[str, BaselineMetric] = {}
    skipped: dict[str, str] = {}
    for name in names:
        policy = spec.policy(name) or MetricPolicy(metric=name, window=spec.window)
        try:
            entries[name] = _entry(name, policy, metrics)
        except ReductionError as exc:
            skipped[name] = str(exc)
    if not entries:
        raise BaselineError(f"no metric could be reduced from {', '.join(map(str, dirs))}")
    baseline = Baseline(entries, _provenance(dirs, [r for _, r in runs], spec, hardware, skipped),
                        scenario, hardware)
    out = Path(out) if out else (spec.baseline or params_dir_for(resolved) / "baselines"
                                 / f"{scenario}.{hardware}.json")
    baseline.save(out)
    return baseline


def _good_run(path: Path) -> tuple[RunMetrics, dict[str, Any]]:
    if not path.is_dir():
        raise BaselineError(f"not a run directory: {path}")
    run = read_run(path)
    status, code = run.get("status"), run.get("exit_code")
    if status not in (None, "succeeded") or code not in (None, 0):
        raise BaselineError(f"cannot bless {path}: the run {status or 'ended'} "
                            f"(exit code {code}); bless only good runs")
    metrics = load_run_metrics(path)
    if not len(metrics):
        raise BaselineError(f"cannot bless {path}: it has no metrics")
    return metrics, run


def _spec_from(resolved: dict[str, Any]) -> CheckSpec:
    spec, problems = parse_checks(resolved.get("checks"), params_dir=params_dir_for(resolved))
    # the baseline file is what bless is about to write, so its absence is expected
    problems = [p for p in problems if p[0] != "checks.baseline"]
    if problems:
        raise ParamsError(problems, "params.resolved.yaml")
    return spec


def _require_window(dirs: list[Path], metrics: list[RunMetrics], spec: CheckSpec,
                    names: list[str]) -> None:
    policies = [spec.policy(n) or MetricPolicy(metric=n, window=spec.window) for n in names]
    need = max([p.window[1] for p in policies if p.reduce in WINDOWED] or [0])
    short = [f"{d.name} (last step {m.last_step})" for d, m in zip(dirs, metrics)
             if (m.last_step or 0) < need]
    if short:
        raise BaselineError(
            f"cannot bless: the checks window needs step {need} ({window_text(spec.window)}) but "
            f"{', '.join(short)} stopped earlier; set checks.window in the scenario")


def _entry(name: str, policy: MetricPolicy, runs: list[RunMetrics]) -> BaselineMetric:
    values = []
    for run in runs:
        value, _ = reduce_series(run.series(name), policy.reduce, policy.window,
                                 last_step=run.last_step, name=name)
        if not math.isfinite(value):
            raise ReductionError(f"{name} reduces to {value} in a run")
        values.append(value)
    windowed = policy.reduce in WINDOWED
    entry = BaselineMetric(value=statistics.fmean(values), reduce=policy.reduce,
                           window=policy.window if windowed else None)
    series = [run.series(name) for run in runs]
    steps = sorted(set.intersection(*(set(s) for s in series)))
    per_step = {s: [x[s] for x in series] for s in steps}
    entry.series = {s: statistics.fmean(v) for s, v in per_step.items()}
    if len(runs) > 1:
        entry.band = {"min": {s: min(v) for s, v in per_step.items()},
                      "max": {s: max(v) for s, v in per_step.items()},
                      "std": {s: statistics.stdev(v) for s, v in per_step.items()}}
        std = statistics.stdev(values)
        entry.spread = {"min": min(values), "max": max(values), "mean": entry.value,
                        "std": std, "n": float(len(values))}
        entry.tolerance = suggest_tolerance(policy, entry.value, max(SIGMAS * std,
                                                                    max(values) - min(values)))
    return entry


def suggest_tolerance(policy: MetricPolicy, mean: float, spread: float) -> dict[str, float]:
    """The tolerance to suggest for a metric whose runs differ by ``spread``."""
    if policy.rtol and not policy.atol and mean != 0:
        return {"rtol": max(policy.rtol, spread / abs(mean))}
    return {"atol": max(policy.atol or 0.0, spread, 1e-9)}


def _provenance(dirs: list[Path], runs: list[dict[str, Any]], spec: CheckSpec,
                hardware: str, skipped: dict[str, str]) -> dict[str, Any]:
    """Where the numbers came from, read from each run's run.json (see workbook.provenance)."""
    versions = [r.get("versions") or {} for r in runs]
    first, facts = versions[0], runs[0]
    commits = facts.get("commits") or {}
    differ = sorted({k for v in versions for k in set(v) | set(first) if v.get(k) != first.get(k)})
    return {
        "source": "bless", "created": now_iso(),
        "workbook_version": first.get("verl-workbook") or _workbook_version(),
        "workbook_commit": commits.get("workbook"),
        "verl_version": first.get("verl"),
        "verl_commit": commits.get("verl") or first.get("verl_commit"),
        "hardware": hardware, "hardware_detail": describe(facts) if facts else None,
        "host": facts.get("host"), "os": facts.get("os"), "python": facts.get("python"),
        "run_ids": [d.name for d in dirs], "packages": first,
        "package_versions_differ": differ,
        "window": list(spec.window), "sigmas": SIGMAS, "skipped_metrics": skipped,
        "runs": [{"run_id": d.name, "path": str(d), "status": r.get("status"),
                  "started": r.get("started"), "ended": r.get("ended"), "host": r.get("host"),
                  "versions": r.get("versions"), "commits": r.get("commits")}
                 for d, r in zip(dirs, runs)],
    }


def _workbook_version() -> str | None:
    try:
        return metadata.version("verl-workbook")
    except metadata.PackageNotFoundError:
        return None
