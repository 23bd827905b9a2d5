"""``bless``: promote good runs to a baseline, so nobody types numbers by hand.

Each metric every run logged is reduced per run as its policy says (or as a mean over the checks
window when it has none). The baseline keeps, per metric, the mean of those reduced values and
their standard deviation ``sigma`` over the N runs: the band a later run is judged with is
``K_SIGMA * sigma`` around the mean (see :mod:`workbook.checks.bands`), so tolerances come from
the runs' own noise, not from a guess. It also keeps, per step, the runs' mean (``series``) and
standard deviation (``series_sigma``): where the runs agree step by step (replayed rollouts make
the training side deterministic), each step of a later run is judged against its own band; see
:mod:`workbook.checks.bands`. And it keeps the runs' hardware key and algorithmic settings (what
the numbers are comparable with), and their provenance.

Only good runs are blessed: each must pass its own health checks (completed, every expected
step, losses finite, clip fractions sane), and all must share hardware and settings. At least
``MIN_RUNS`` distinct runs are needed for a sigma worth the name: one run given three times (the
same path, a symlink to it, a copy with its run id or its very metrics) would make a "3-run"
baseline with sigma 0, whose band then fails every honest run. What is written obeys the rules
every baseline is read with (:mod:`workbook.checks.baseline_rules`).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import statistics
from importlib import metadata
from pathlib import Path
from typing import Any

from workbook.checks.bands import K_SIGMA, MIN_RUNS_FOR_SIGMA
from workbook.checks.baseline import Baseline, BaselineMetric
from workbook.checks.conditions import blessed_conditions, unlike_conditions
from workbook.checks.evidence import Evidence, gather, params_dir_for
from workbook.checks.health import health_rows
from workbook.checks.reductions import WINDOWED, ReductionError, reduce_series, window_text
from workbook.checks.spec import CheckSpec, MetricPolicy, parse_checks
from workbook.core.clock import now_iso
from workbook.core.layout import RUN_FILES, read_json_object
from workbook.errors import BaselineError, ParamsError
from workbook.metrics.model import RunMetrics
from workbook.params.schema import NAME_PATTERN
from workbook.params.settings import differences, environment_of, tuning_of
from workbook.provenance import describe, image_of, versions_of

MIN_RUNS = MIN_RUNS_FOR_SIGMA


def bless(run_dirs: list[Path], out: Path | None = None, *, spec: CheckSpec | None = None,
          hardware: str | None = None, scenario: str | None = None) -> Baseline:
    """Write a baseline from ``run_dirs`` to ``out`` (default: the scenario's ``checks.baseline``,
    else ``params/baselines/<scenario>.<hardware>.json``) and return it.

    Raises:
        BaselineError: a ``hardware`` or ``scenario`` that is no plain name, fewer than
            ``MIN_RUNS`` runs, the same run twice, a run that is not
            good, runs that differ in hardware or settings, a window the runs do not cover, or
            values no baseline may hold (nothing is written then).
    """
    for what, label in (("--hardware", hardware), ("scenario", scenario)):
        if label is not None:
            plain_label(label, what)
    dirs = [Path(d) for d in run_dirs]
    if len(dirs) < MIN_RUNS:
        raise BaselineError(f"bless needs at least {MIN_RUNS} good runs to measure their spread "
                            f"(sigma); got {len(dirs)}")
    _require_distinct_paths(dirs)
    runs = [_good_run(d) for d in dirs]
    _require_distinct_runs(dirs, runs)
    _require_alike(dirs, runs)
    unlike = unlike_conditions([r.run.get("conditions") for r in runs], [d.name for d in dirs])
    if unlike:
        raise BaselineError(f"cannot bless these runs together: {unlike}")
    resolved = runs[0].scenario
    if spec is None:
        spec = _spec_from(resolved)
    scenario = scenario or resolved.get("name") or dirs[0].parent.name
    hardware = hardware or resolved.get("profile") or "unknown"
    metrics = [r.metrics for r in runs]
    names = sorted(set.intersection(*(set(m.names()) for m in metrics)))
    _require_window(dirs, metrics, spec, names)
    _require_distinct_metrics(dirs, metrics)
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
    baseline = Baseline(entries, _provenance(dirs, runs, spec, hardware, skipped),
                        scenario, hardware, hardware_key=runs[0].hardware,
                        settings=runs[0].settings,
                        conditions=blessed_conditions([r.run.get("conditions") for r in runs])
                        or None)
    out = Path(out) if out else (spec.baseline or params_dir_for(resolved) / "baselines"
                                 / f"{scenario}.{hardware}.json")
    baseline.save(out)
    return baseline


def plain_label(label: str, what: str) -> str:
    """``label`` itself when it is a plain name (it becomes part of a file name: a baseline's,
    a proposal's folder); BaselineError otherwise (``--hardware /../..``)."""
    if not re.fullmatch(NAME_PATTERN, label):
        raise BaselineError(f"{what} {label!r} must be a plain name: letters, digits, '.', '_' "
                            "and '-', starting with a letter or digit, at most 100 characters")
    return label


def _good_run(path: Path) -> Evidence:
    if not path.is_dir():
        raise BaselineError(f"not a run directory: {path}")
    evidence = gather(path)
    if not len(evidence.metrics):
        raise BaselineError(f"cannot bless {path}: it has no metrics")
    bad = [r for r in health_rows(evidence, None) if r.status != "pass"]
    if bad:
        raise BaselineError(f"cannot bless {path}: {bad[0].name}: {bad[0].message}; bless only "
                            "good runs")
    return evidence


def _require_distinct(dirs: list[Path], keys: list[Any], same: str) -> None:
    """No run twice: ``keys[i]`` identifies ``dirs[i]``; two equal keys are one run, ``same``
    says how (a path spelt twice, a copy keeping its run id, a renamed copy)."""
    seen: dict[Any, Path] = {}
    for path, key in zip(dirs, keys, strict=True):
        if key in seen:
            raise BaselineError(f"cannot bless the same run twice: {seen[key]} and {path} "
                                f"{same.format(key=key)}; bless {MIN_RUNS} or more distinct runs")
        seen[key] = path


def _require_distinct_paths(dirs: list[Path]) -> None:
    """No directory twice, however it is spelt (``./a``, ``a/``, a symlink to ``a``)."""
    _require_distinct(dirs, [p.resolve() for p in dirs], "are both {key}")


def _require_distinct_runs(dirs: list[Path], runs: list[Evidence]) -> None:
    """No run twice under another path: a copy of a run directory keeps its run id."""
    ids = [str(run.run.get("run_id") or path.resolve().name) for path, run in zip(dirs, runs, strict=True)]
    _require_distinct(dirs, ids, "are both run {key}")


def _require_distinct_metrics(dirs: list[Path], metrics: list[RunMetrics]) -> None:
    """No two runs with the same metrics at every step: a renamed copy, whose spread is 0."""
    _require_distinct(dirs, [_metrics_digest(m) for m in metrics],
                      "logged identical metrics at every step (a copy of one run?)")


def _metrics_digest(metrics: RunMetrics) -> str:
    """Every step's values, NaN as null (no two real runs agree on every timing to the bit)."""
    digest = hashlib.sha256()
    for record in metrics.records():
        digest.update(json.dumps(record, sort_keys=True).encode())
    return digest.hexdigest()


def _require_alike(dirs: list[Path], runs: list[Evidence]) -> None:
    """Every run on the same hardware with the same settings, or the spread means nothing."""
    first = runs[0]
    for path, run in zip(dirs[1:], runs[1:], strict=True):
        if run.hardware != first.hardware:
            raise BaselineError(f"cannot bless runs from different hardware: {path.name} ran on "
                                f"{run.hardware}, {dirs[0].name} on {first.hardware}")
        unlike = differences(first.settings or {}, run.settings or {})
        if unlike:
            raise BaselineError(f"cannot bless runs with different settings: {path.name} vs "
                                f"{dirs[0].name}: {'; '.join(unlike)}")


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
    short = [f"{d.name} (last step {m.last_step})" for d, m in zip(dirs, metrics, strict=True)
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
    mean = statistics.fmean(values)
    entry = BaselineMetric(value=mean, reduce=policy.reduce,
                           window=policy.window if windowed else None,
                           sigma=statistics.stdev(values), n=len(values))
    series = [run.series(name) for run in runs]
    steps = sorted(set.intersection(*(set(s) for s in series)))
    per_step = {s: [x[s] for x in series] for s in steps}
    entry.series = {s: statistics.fmean(v) for s, v in per_step.items()}
    entry.series_sigma = {s: _spread(v) for s, v in per_step.items()}
    return entry


def _spread(values: list[float]) -> float:
    """The runs' standard deviation at one step; NaN (written as null: not known) when a run
    logged no finite value there, so that step can never be taken as one the runs agree on."""
    if not all(math.isfinite(v) for v in values):
        return math.nan
    return statistics.stdev(values)


def _provenance(dirs: list[Path], evidence: list[Evidence], spec: CheckSpec,
                hardware: str, skipped: dict[str, str]) -> dict[str, Any]:
    """Where the numbers came from, read from each run's run.json (see workbook.provenance) and
    resolved params: the workbook and verl (version and commit), the image, CANN and every
    package version, the machine, the tuning and env, and each source run with its dates and
    its own versions, commits, tuning and env. The top-level facts are the first run's; where
    the runs differ among themselves, ``runs_differ`` lists each fact with every run's value
    (``package_versions_differ`` the packages' names). Keys are written even when a run did not
    know the fact (null): a baseline without them is refused (``baseline_rules``)."""
    runs = [e.run for e in evidence]
    facts = [_facts(e) for e in evidence]
    first, info = facts[0], runs[0]
    commits = info.get("commits") or {}
    differ = runs_differ([d.name for d in dirs], facts)
    return {
        "source": "bless", "created": now_iso(),
        "workbook_version": first["package"].get("verl-workbook") or _workbook_version(),
        "workbook_commit": commits.get("workbook"),
        "verl_version": first["package"].get("verl"),
        "verl_commit": commits.get("verl") or (info.get("verl_checkout") or {}).get("commit"),
        "image": _run_image(dirs[0], info),
        "cann_version": info.get("cann_version"),
        "hardware": hardware, "hardware_detail": describe(info) if info else None,
        "host": info.get("host"), "os": info.get("os"), "python": info.get("python"),
        "run_ids": [d.name for d in dirs], "packages": info.get("versions") or {},
        "package_versions_differ": sorted({d["name"] for d in differ if d["kind"] == "package"}),
        "runs_differ": differ,
        "tuning": first["tuning"], "environment": first["environment"],
        "window": list(spec.window), "k_sigma": K_SIGMA, "skipped_metrics": skipped,
        "runs": [{"run_id": d.name, "path": str(d), "status": r.get("status"),
                  "started": r.get("started_at"), "ended": r.get("ended_at"),
                  "host": r.get("host"), "image": _run_image(d, r),
                  "versions": r.get("versions"), "commits": r.get("commits"),
                  "tuning": f["tuning"], "env": f["environment"]}
                 for d, r, f in zip(dirs, runs, facts, strict=True)],
    }


# The facts of a source run bless compares across its runs, by kind (workbook.history.changes
# names the same kinds when it compares two nights).
DIFFER_KINDS = ("package", "commit", "tuning", "environment")


def _facts(evidence: Evidence) -> dict[str, dict[str, Any]]:
    """One run's versions (CANN too), commits, tuning and env, each a flat mapping."""
    run = evidence.run
    return {"package": versions_of(run),
            "commit": {str(k): v for k, v in (run.get("commits") or {}).items()},
            "tuning": tuning_of(evidence.scenario), "environment": environment_of(evidence.scenario)}


def runs_differ(run_ids: list[str], facts: list[dict[str, dict[str, Any]]]
                ) -> list[dict[str, Any]]:
    """Each fact on which the runs differ: ``{"kind", "name", "values": {run id: value}}`` (a
    value None where that run did not have it), by kind then name."""
    found = []
    for kind in DIFFER_KINDS:
        names = sorted({n for f in facts for n in f[kind]}, key=str.lower)
        for name in names:
            values = {run_id: f[kind].get(name) for run_id, f in zip(run_ids, facts, strict=True)}
            if len({json.dumps(v, sort_keys=True, default=str) for v in values.values()}) > 1:
                found.append({"kind": kind, "name": name, "values": values})
    return found


def _run_image(path: Path, run: dict[str, Any]) -> dict[str, Any] | None:
    """The image a run ran in (``provenance.image_of``), its command's environment consulted."""
    env = read_json_object(path / RUN_FILES["command_json"]).get("env")
    return image_of(run, env if isinstance(env, dict) else None)


def _workbook_version() -> str | None:
    try:
        return metadata.version("verl-workbook")
    except metadata.PackageNotFoundError:
        return None
