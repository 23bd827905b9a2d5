"""One line per run for the index: verdict, dates, headline numbers, which checks left their band.

Reading every run's metrics on every index refresh would make the index slow once there are
hundreds of nights, so each summary is cached in the run directory (``.summary.json``) together
with the sizes and times of the files it came from; a changed file (the run finished, was judged
or re-rendered) invalidates it.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from statistics import fmean
from typing import Any

from workbook.core.layout import PRUNED_FILE, RUN_FILES, SUMMARY_CACHE, walk_runs, write_atomic
from workbook.core.values import finite
from workbook.metrics.model import RunMetrics
from workbook.report.view import load_view

CACHE_VERSION = 1
SOURCES = ("run", "checks", "metrics", "log", "report")
# headline number -> the metrics it is read from (first present wins) and its unit
HEADLINES: dict[str, tuple[tuple[str, ...], str]] = {
    "mean step time": (("timing_s/step",), "s"),
    "throughput": (("perf/throughput",), "tokens/s/device"),
    "final reward": (("critic/score/mean", "critic/rewards/mean"), "score"),
    "clip fraction": (("actor/pg_clipfrac",), "fraction"),
}


@dataclass
class RunSummary:
    """What the index shows of one run."""

    path: str
    scenario: str
    run_id: str
    started_at: str
    status: str
    verdict: str
    reason: str
    steps: int | None
    expected_steps: int | None
    wall_time_s: float | None
    has_report: bool
    headline: dict[str, float | None] = field(default_factory=dict)
    out_of_band: list[str] = field(default_factory=list)  # headline names whose check failed
    pruned: bool = False  # a published site's retention removed its report and log

    @property
    def sort_key(self) -> tuple[str, str]:
        return (self.started_at or self.run_id, self.run_id)


@dataclass
class RunTree:
    """What one walk of a runs root finds: run directories, and the other folders on the way
    (suite nights and sweep or comparison folders live there, wherever ``--dir`` put them)."""

    runs: list[Path]
    folders: list[Path]

    def holding(self, name: str) -> list[Path]:
        """``<folder>/<name>`` for every non-run folder that has such a file."""
        return [f / name for f in self.folders if (f / name).is_file()]


def scan(runs_root: Path) -> RunTree:
    """Walk ``runs_root`` once at any depth (``<scenario>/<run_id>``, the
    ``suites/<suite>/<night>/<entry>/<run_id>`` and ``sweeps/...`` trees, or a suite's own
    ``--dir``), as :func:`~workbook.core.layout.walk_runs` walks it."""
    return RunTree(*walk_runs(runs_root))


def summarize(run_dir: Path, *, cache_it: bool = True) -> RunSummary:
    """The run's summary, from the cache when its source files have not changed.

    ``cache_it=False`` leaves no cache file behind (a published site holds only what publish
    chose; the cache names the machine's absolute paths)."""
    run_dir = Path(run_dir)
    signature = _signature(run_dir)
    cache = run_dir / SUMMARY_CACHE
    try:
        cached = json.loads(cache.read_text(encoding="utf-8"))
        if cached.get("signature") == signature and cached.get("version") == CACHE_VERSION:
            return RunSummary(**cached["summary"])
    except (OSError, ValueError, TypeError, KeyError):
        pass
    summary = _compute(run_dir)
    if not cache_it:
        return summary
    try:
        write_atomic(
            cache,
            json.dumps(
                {"version": CACHE_VERSION, "signature": signature, "summary": asdict(summary)}
            ),
        )
    except OSError:
        pass  # a read-only run tree still gets an index
    return summary


def headline(metrics: RunMetrics) -> dict[str, float | None]:
    """Mean step time and throughput (after the warm-up step), final reward, clip fraction."""
    numbers: dict[str, float | None] = {}
    for name, (candidates, _unit) in HEADLINES.items():
        metric = next((m for m in candidates if metrics.has(m)), None)
        values = [v for v in metrics.series(metric).values() if math.isfinite(v)] if metric else []
        if not values:
            numbers[name] = None
        elif name == "final reward":
            numbers[name] = values[-1]
        else:
            numbers[name] = fmean(values[1:] if len(values) > 2 else values)
    return numbers


def _compute(run_dir: Path) -> RunSummary:
    view = load_view(run_dir, quick=True)
    verdict, reason = view.verdict
    failed_metrics = {str(r.get("metric")) for r in view.rows if r.get("status") == "fail"}
    out = [name for name, (candidates, _u) in HEADLINES.items() if failed_metrics & set(candidates)]
    return RunSummary(
        path=str(run_dir),
        scenario=view.scenario,
        run_id=view.run_id,
        started_at=view.started,
        status=view.status,
        verdict=verdict,
        reason=reason,
        steps=view.steps_reached,
        expected_steps=_int(view.run.get("expected_steps")),
        wall_time_s=finite(view.run.get("wall_time_s")),
        has_report=(run_dir / RUN_FILES["report"]).is_file(),
        headline=headline(view.metrics),
        out_of_band=out,
        pruned=(run_dir / PRUNED_FILE).is_file(),
    )


def _signature(run_dir: Path) -> list[Any]:
    sig: list[Any] = []
    for key in SOURCES:
        try:
            stat = (run_dir / RUN_FILES[key]).stat()
            sig.append([key, stat.st_size, stat.st_mtime_ns])
        except OSError:
            sig.append([key, None, None])
    return sig


def _int(value: Any) -> int | None:
    number = finite(value)
    return int(number) if number is not None else None
