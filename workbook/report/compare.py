"""Several runs on one page: curves overlaid, one row per run, differences against the first.

For a clip-ratio sweep (a sweep directory: its points in order) or any runs at all (last night
against tonight). The page is ``comparison.html`` in the comparison's own folder (the sweep
directory, or ``<runs>/comparisons/<id>/``), rendered from ``notebooks/compare.ipynb`` the way
a run's report is, and listed in the runs index. Whatever the page shows is computed from the
runs' own files; a run missing a metric simply has no curve for it.

The table's clip fraction and reward are means over a window: the scenario's checks window
when the runs share one, else every step after the first (which carries start-up). Steps whose
rollouts were replayed from a dump are shaded in the curves; the table says how many of the
window's steps were replayed, because only on those do the runs train on the same rollouts.
"""

from __future__ import annotations

import html
import json
import math
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workbook.core.layout import (
    COMPARISON_FILE,
    COMPARISON_PAGE,
    COMPARISONS_DIR,
    SWEEP_FILE,
    new_run_id,
    write_json,
)
from workbook.core.values import EMPTY, finite, number_text
from workbook.plots.panels import overlay
from workbook.report.links import report_href
from workbook.report.section import Figure, Section, encoded
from workbook.report.view import RunView, load_view

CURVES = (
    ("actor/pg_clipfrac", "clip fraction"), ("actor/pg_loss", "policy loss"),
    ("actor/ppo_kl", "KL to the rollout policy"), ("actor/grad_norm", "gradient norm"),
    ("critic/score/mean", "reward"), ("response_length/mean", "response length"),
    ("timing_s/step", "step time (s)"), ("timing_s/gen", "rollout time (s)"),
)
_e = html.escape


@dataclass
class Comparison:
    """The runs compared, their labels, and where the page goes."""

    folder: Path
    runs: list[RunView]
    labels: list[str]
    window: tuple[int, int] | None = None
    source: dict[str, Any] = field(default_factory=dict)

    def _repr_html_(self) -> str:
        return (f"<p>Comparing {len(self.runs)} runs; the page goes to "
                f"<code>{_e(str(self.folder / COMPARISON_PAGE))}</code></p>")


def prepare(runs: list[str] | None = None, sweep: str = "", out: str = "") -> Comparison:
    """Collect the runs (a sweep directory's points, or run directories) and record them."""
    if sweep:
        folder = Path(sweep).resolve()
        data = json.loads((folder / SWEEP_FILE).read_text(encoding="utf-8"))
        points = [p for p in data.get("points", []) if p.get("run_dir")]
        dirs = [Path(p["run_dir"]) for p in points]
        labels = [", ".join(f"{k}={v}" for k, v in p.get("values", {}).items()) or p["key"]
                  for p in points]
    else:
        dirs = [Path(r).resolve() for r in runs or []]
        folder = Path(out).resolve() if out else _new_folder()
        labels = [f"{d.parent.name}/{d.name}" for d in dirs]
    if not dirs:
        from workbook.errors import InputError

        raise InputError("nothing to compare: give run directories or a sweep directory")
    views = [load_view(d) for d in dirs]
    comparison = Comparison(folder, views, labels, _window(views))
    comparison.source = {"runs": [str(d) for d in dirs], "labels": labels,
                         "sweep": str(folder) if sweep else None}
    folder.mkdir(parents=True, exist_ok=True)
    write_json(folder / COMPARISON_FILE, comparison.source)
    return comparison


def load(folder: Path) -> Comparison:
    """A comparison recorded in ``folder`` (its ``comparison.json``)."""
    folder = Path(folder).resolve()
    data = json.loads((folder / COMPARISON_FILE).read_text(encoding="utf-8"))
    views = [load_view(Path(d)) for d in data["runs"]]
    return Comparison(folder, views, list(data["labels"]), _window(views), data)


@dataclass(frozen=True)
class RunLine:
    """One run of the table, every number already as text (``-`` where there is none)."""

    run_id: str
    label: str
    clip_ratio_low: str
    clip_ratio_high: str
    clip: str
    clip_delta: str
    reward: str
    reward_delta: str
    step: str
    step_delta: str
    replayed: int
    verdict: str
    report: str | None  # the run's report.html relative to the comparison, None when missing


@dataclass(frozen=True)
class RunsTable:
    headers: tuple[str, ...]
    rows: tuple[RunLine, ...]


@dataclass(frozen=True)
class Curves:
    figures: tuple[Figure, ...]
    replayed: tuple[int, ...]  # steps every run replayed from the same dump (shaded)


def table(comparison: Comparison | Path | str) -> Section[RunsTable]:
    """One row per run: clip ratios, window means, step time, verdict; differences to the first."""
    c = comparison_of(comparison)
    lo, hi = c.window or (None, None)
    window = f"steps {lo}-{hi}" if c.window else "every step after the first"
    head = ("run", "clip ratio low / high", f"clip fraction ({window})", "Δ vs first",
            f"reward ({window})", "Δ vs first", "mean step time (s)", "Δ vs first",
            "replayed steps in window", "verdict", "report")
    rows, first = [], None
    for label, view in zip(c.labels, c.runs, strict=False):  # labels may come from a file
        numbers = summary_numbers(view, c.window)
        first = first or numbers
        verdict, _ = view.verdict
        rows.append(RunLine(
            run_id=view.run_id, label=label,
            clip_ratio_low=number_text(finite(view.run.get("clip_ratio_low")), 6),
            clip_ratio_high=number_text(finite(view.run.get("clip_ratio_high")), 6),
            clip=number_text(numbers["clip"]), clip_delta=_delta(numbers["clip"], first["clip"]),
            reward=number_text(numbers["reward"]),
            reward_delta=_delta(numbers["reward"], first["reward"]),
            step=number_text(numbers["step"]),
            step_delta=_delta(numbers["step"], first["step"], relative=True),
            replayed=numbers["replayed"], verdict=verdict,
            report=report_href(view.path, c.folder)))
    return Section("compare-table", RunsTable(head, tuple(rows)))


def curves(comparison: Comparison | Path | str) -> Section[Curves]:
    """Each metric of every run on one axis; replayed steps shaded."""
    c = comparison_of(comparison)
    named = list(zip(c.labels, (v.metrics for v in c.runs), strict=False))
    replayed = sorted(set.intersection(*(set(_replayed(v)) for v in c.runs))) if c.runs else []
    figures = []
    for metric, title in CURVES:
        png = overlay(named, metric, f"{title} ({metric})", shade=replayed)
        if png is not None:
            figures.append(Figure(f"compare:{metric}", title, encoded(png)))
    return Section("compare-curves", Curves(tuple(figures), tuple(replayed)))


def summary_numbers(view: RunView, window: tuple[int, int] | None) -> dict[str, Any]:
    """Window means of clip fraction and reward, mean step time after step 1, replayed count."""
    metrics = view.metrics
    steps = metrics.step_numbers
    chosen = [s for s in steps if window[0] <= s <= window[1]] if window else steps[1:] or steps

    def mean(name: str) -> float | None:
        series = metrics.series(name)
        values = [series[s] for s in chosen if s in series and math.isfinite(series[s])]
        return statistics.fmean(values) if values else None

    return {"clip": mean("actor/pg_clipfrac"), "reward": mean("critic/score/mean"),
            "step": mean("timing_s/step"),
            "replayed": len(set(chosen) & set(_replayed(view)))}


def comparison_of(value: Comparison | Path | str) -> Comparison:
    """A comparison, or the one recorded in a folder."""
    return value if isinstance(value, Comparison) else load(Path(value))


def _window(views: list[RunView]) -> tuple[int, int] | None:
    """The checks window the runs share (their resolved params), else None."""
    from workbook.checks.evidence import read_resolved_params

    windows = set()
    for view in views:
        checks = read_resolved_params(view.path).get("checks") or {}
        window = checks.get("window") if isinstance(checks, dict) else None
        windows.add(tuple(window) if isinstance(window, list) and len(window) == 2 else None)
    only = windows.pop() if len(windows) == 1 else None
    return (int(only[0]), int(only[1])) if only else None


def _replayed(view: RunView) -> list[int]:
    return list((view.run.get("diagnosis") or {}).get("replayed_steps") or [])


def _new_folder() -> Path:
    from workbook.core.layout import default_root

    return default_root() / COMPARISONS_DIR / new_run_id()


def runs_root_of(c: Comparison) -> Path | None:
    roots = {str(v.run.get("runs_root")) for v in c.runs if v.run.get("runs_root")}
    return Path(roots.pop()) if len(roots) == 1 else None


def _delta(value: float | None, first: float | None, relative: bool = False) -> str:
    if value is None or first is None:
        return EMPTY
    if relative:
        return f"{(value - first) / first * 100:+.1f}%" if first else EMPTY
    return number_text(value - first, signed=True)
