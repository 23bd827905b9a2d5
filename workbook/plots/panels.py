"""Report panels drawn from a run's metrics: the one module of the workbook that imports matplotlib.

Each panel is a small PNG (a report is one self-contained file with a size budget) built from
:class:`~workbook.metrics.model.RunMetrics`. A panel whose metrics the run did not log is left
out, never drawn empty. Colours are the Okabe-Ito palette and every line also has its own marker
and dash, so curves stay apart for colour-blind readers and in greyscale print. Where the checks
compared a metric with a baseline, the panel draws exactly what they compared: a per-step
comparison's band step by step, or a window statistic as one marked point with its band (see
:mod:`workbook.plots.layers`, which builds what a panel draws as data; this module renders it).
Which metrics each panel shows is the catalogue's (:mod:`workbook.plots.catalog`).
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence
from dataclasses import dataclass

import matplotlib

matplotlib.use("Agg")  # files only; never a window, also inside a kernel with another backend
import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from workbook.metrics.model import RunMetrics
from workbook.plots.catalog import NESTED_TIMINGS, PANELS, ZERO_MEANS_ABSENT, Axis, unit_of
from workbook.plots.compared import Band  # the report reads check rows into it (report.view)
from workbook.plots.layers import AxisLayers, StepBands, WindowMark, axis_layers

OKABE_ITO = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
DASHES = ("-", "--", "-.", ":")
DPI = 80
WIDTH_IN, HEIGHT_IN = 7.5, 3.0
BAR_LIMIT = 60  # up to this many steps the phase breakdown is bars, beyond it a stacked area


@dataclass(frozen=True)
class Panel:
    """A drawn panel: a stable key (tests and the report use it), a title and PNG bytes."""

    key: str
    title: str
    png: bytes
    metrics: tuple[str, ...] = ()  # the metrics drawn, in legend order
    axes: tuple[AxisLayers, ...] = ()  # what each subplot draws, as data


def build_panels(
    metrics: RunMetrics,
    *,
    clip_ratio_low: float | None = None,
    clip_ratio_high: float | None = None,
    bands: dict[str, Band] | None = None,
) -> list[Panel]:
    """Every panel the run's metrics allow, in report order (timing breakdown after timing)."""
    bands = bands or {}
    panels: list[Panel] = []
    for spec in PANELS:
        axes = [
            Axis(tuple(m for m in ax.metrics if _drawable(metrics, m)), ax.ylabel)
            for ax in spec.axes
        ]
        axes = [ax for ax in axes if ax.metrics]
        if not axes:
            continue
        title = spec.title
        if spec.key == "clip_fraction":
            title += clip_ratio_text(clip_ratio_low, clip_ratio_high)
        drawn = tuple(m for ax in axes for m in ax.metrics)
        layers = tuple(axis_layers(metrics, ax, bands) for ax in axes)
        panels.append(Panel(spec.key, title, render(title, layers), drawn, layers))
        if spec.key == "rollout_timing":
            breakdown = timing_breakdown(metrics)
            if breakdown is not None:
                panels.append(breakdown)
    return panels


def clip_ratio_text(low: float | None, high: float | None) -> str:
    parts = [
        f"{name} {value:g}" for name, value in (("low", low), ("high", high)) if value is not None
    ]
    return f" (clip ratio {', '.join(parts)})" if parts else ""


def draw(
    metrics: RunMetrics, title: str, axes: Sequence[Axis], bands: dict[str, Band] | None = None
) -> bytes:
    """One figure with one subplot per axis, each metric a line against the step."""
    return render(title, tuple(axis_layers(metrics, ax, bands) for ax in axes))


def render(title: str, layers: Sequence[AxisLayers]) -> bytes:
    """The figure of ``layers``, one subplot each: nothing is drawn that they do not hold."""
    fig, subplots = new_figure(len(layers))
    for ax, axis in zip(subplots, layers, strict=True):
        colour = {name: i for i, name in enumerate(axis.metrics)}
        for curve in axis.curves:
            i = colour.get(curve.metric, 0)
            if curve.baseline:
                ax.plot(curve.steps, curve.values, color=OKABE_ITO[(i + 5) % 8], linestyle="--",
                        linewidth=1.2, label=curve.label)
            else:
                line(ax, dict(zip(curve.steps, curve.values, strict=True)), curve.label, i)
        for bands in axis.step_bands:
            _step_bands(ax, bands, colour.get(bands.metric, 0))
        for mark in axis.marks:
            _window_mark(ax, mark, colour.get(mark.metric, 0))
        ax.set_ylabel(axis.ylabel)
        finish_axes(ax)
    fig.suptitle(title, fontsize=11)
    return to_png(fig)


def regression_panel(metrics: RunMetrics, metric: str, band: Band, title: str) -> Panel | None:
    """A failed check's metric against what it was compared with (None when the run lacks
    the metric)."""
    if not metrics.has(metric):
        return None
    layers = (axis_layers(metrics, Axis((metric,), unit_of(metric)), {metric: band}),)
    return Panel(f"regression:{metric}", title, render(title, layers), (metric,), layers)


def timing_breakdown(metrics: RunMetrics) -> Panel | None:
    """Stacked ``timing_s/*`` phases per step, the remainder of ``timing_s/step`` as "other"."""
    phases = [
        n
        for n in metrics.names()
        if n.startswith("timing_s/") and n.count("/") == 1 and n[9:] not in NESTED_TIMINGS
    ]
    if not phases:
        return None
    steps = metrics.step_numbers
    rows = {p: [_finite(metrics.steps[s].get(p)) for s in steps] for p in phases}
    total = [_finite(metrics.steps[s].get("timing_s/step")) for s in steps]
    other = [max(t - sum(r[i] for r in rows.values()), 0.0) for i, t in enumerate(total)]
    if any(other):
        rows["other"] = other
    fig, (ax,) = new_figure(1)
    bottom = [0.0] * len(steps)
    for i, (name, values) in enumerate(sorted(rows.items(), key=lambda kv: -sum(kv[1]))):
        label, colour = name.removeprefix("timing_s/"), OKABE_ITO[i % len(OKABE_ITO)]
        hatch = ("", "//", "..", "xx", "\\\\", "oo", "++", "--")[(i // len(OKABE_ITO)) % 8]
        if len(steps) <= BAR_LIMIT:
            ax.bar(
                steps,
                values,
                bottom=bottom,
                label=label,
                color=colour,
                hatch=hatch,
                edgecolor="white",
                linewidth=0.5,
            )
        else:
            top = [b + v for b, v in zip(bottom, values, strict=True)]
            ax.fill_between(steps, bottom, top, label=label, color=colour, hatch=hatch, linewidth=0)
        bottom = [b + v for b, v in zip(bottom, values, strict=True)]
    ax.set_ylabel("time (s)")
    finish_axes(ax)
    ax.legend(fontsize=8, frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.suptitle("Where a step's time goes", fontsize=11)
    return Panel("timing_breakdown", "Where a step's time goes", to_png(fig), tuple(rows))


def to_png(fig: Figure) -> bytes:
    """PNG bytes at a modest resolution; the figure is closed (no leak across 1,000 charts)."""
    buffer = io.BytesIO()
    try:
        fig.savefig(buffer, format="png", dpi=DPI)
    finally:
        plt.close(fig)
    return buffer.getvalue()


def new_figure(
    count: int,
    width: float = WIDTH_IN,
    height: float = HEIGHT_IN,
    layout: str | None = "constrained",
) -> tuple[Figure, list[Axes]]:
    """A one-row figure of ``count`` subplots; a report panel is about 600 px wide at ``DPI``."""
    fig, axes = plt.subplots(
        1,
        count,
        figsize=(width if count == 1 else max(width, 4.2 * count), height),
        squeeze=False,
        layout=layout,
    )
    return fig, list(axes[0])


def line(ax: Axes, series: dict[int, float], name: str, i: int) -> None:
    steps, values = list(series), list(series.values())
    ax.plot(
        steps,
        values,
        label=name,
        color=OKABE_ITO[i % 8],
        marker=MARKERS[i % 8],
        linestyle=DASHES[i % 4],
        markersize=4,
        linewidth=1.5,
        markevery=every(len(steps)),
    )


def _step_bands(ax: Axes, bands: StepBands, i: int) -> None:
    """Each step's range over that step alone (from half a step before it to half after)."""
    colour = OKABE_ITO[(i + 5) % 8]
    ymin, ymax = ax.get_ylim()
    edges = [s - 0.5 for s in bands.steps] + [bands.steps[-1] + 0.5]
    low = [ymin if v is None else v for v in bands.low]
    high = [ymax if v is None else v for v in bands.high]
    ax.fill_between(edges, low + low[-1:], high + high[-1:], step="post", color=colour,
                    alpha=0.25, hatch="//", linewidth=0, label="allowed range, per step")
    ax.plot(bands.steps, bands.reference, color=colour, linestyle="--", linewidth=1.2,
            label="baseline, per step")


def _window_mark(ax: Axes, mark: WindowMark, i: int) -> None:
    """The statistic as one point at the window's middle, its range as a bar through it, the
    baseline's value as a short segment over the window."""
    colour, ours = OKABE_ITO[(i + 5) % 8], OKABE_ITO[i % 8]
    first, last = float(mark.window[0]), float(mark.window[1])
    if first == last:  # one step (``last``): a segment as wide as a bar
        first, last = first - 0.4, last + 0.4
    if mark.low is not None or mark.high is not None:
        ymin, ymax = ax.get_ylim()
        ax.vlines(mark.x, ymin if mark.low is None else mark.low,
                  ymax if mark.high is None else mark.high, colors=colour, linewidth=7,
                  alpha=0.35, label=f"allowed range of the {mark.label}")
    if mark.reference is not None:
        ax.hlines(mark.reference, first, last, colors=colour, linestyles="--", linewidth=1.2,
                  label=f"baseline {mark.label}")
    if mark.value is not None:
        ax.plot([mark.x], [mark.value], color=ours, marker="D", markersize=8, linestyle="none",
                markeredgecolor="black", label=f"this run's {mark.label}")


def finish_axes(ax: Axes) -> None:
    """A subplot's whole-step x axis, grid and legend, as every step plot has them."""
    ax.set_xlabel("step")
    ax.grid(True, alpha=0.3)
    locator = ax.xaxis.get_major_locator()
    if isinstance(locator, MaxNLocator):  # the default AutoLocator is one
        locator.set_params(integer=True)
    ax.legend(fontsize=8, frameon=False, loc="best")


def _drawable(metrics: RunMetrics, name: str) -> bool:
    """Present with a finite value (and not identically zero where zero means "not measured")."""
    values = [v for v in metrics.series(name).values() if math.isfinite(v)]
    if name in ZERO_MEANS_ABSENT:
        return any(v != 0 for v in values)
    return bool(values)


def _finite(value: float | None) -> float:
    return value if value is not None and math.isfinite(value) else 0.0


def every(count: int) -> int:
    """Marker spacing: about 25 markers per line, so 2,000 steps stay readable and cheap."""
    return max(1, count // 25)



def overlay(runs: Sequence[tuple[str, RunMetrics]], metric: str, title: str,
            shade: Sequence[int] = ()) -> bytes | None:
    """One metric of several runs on one axis (a comparison's curves); None if none logged it.

    ``shade`` marks steps whose rollouts were replayed from a dump (a light band per step).
    """
    drawn = [(label, m.series(metric)) for label, m in runs if m.has(metric)]
    if not drawn:
        return None
    fig, (ax,) = new_figure(1)
    for step in shade:
        ax.axvspan(step - 0.5, step + 0.5, color="#999999", alpha=0.12, linewidth=0)
    for i, (label, series) in enumerate(drawn):
        line(ax, series, label, i)
    ax.set_ylabel(unit_of(metric))
    finish_axes(ax)
    fig.suptitle(title, fontsize=11)
    return to_png(fig)
