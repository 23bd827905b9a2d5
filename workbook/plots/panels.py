"""Report panels drawn from a run's metrics: the one module of the workbook that imports matplotlib.

Each panel is a small PNG (a report is one self-contained file with a size budget) built from
:class:`~workbook.metrics.model.RunMetrics`. A panel whose metrics the run did not log is left
out, never drawn empty. Colours are the Okabe-Ito palette and every line also has its own marker
and dash, so curves stay apart for colour-blind readers and in greyscale print. A baseline,
where the checks have one, is drawn as a shaded band with a dashed reference line.
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass, field
from typing import Sequence

import matplotlib

matplotlib.use("Agg")  # files only; never a window, also inside a kernel with another backend
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from workbook.metrics.model import RunMetrics  # noqa: E402

OKABE_ITO = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
DASHES = ("-", "--", "-.", ":")
DPI = 80
WIDTH_IN, HEIGHT_IN = 7.5, 3.0
# timing_s/* keys that are parts of another phase (or bookkeeping), not phases of a step
NESTED_TIMINGS = {
    "step",
    "generate_sequences",
    "reshard",
    "start_profile",
    "stop_profile",
    "switch_wait",
    "agent_loop",
}
BAR_LIMIT = 60  # up to this many steps the phase breakdown is bars, beyond it a stacked area


@dataclass(frozen=True)
class Band:
    """A metric's baseline: reference value, allowed range, per-step series, steps it covers."""

    value: float | None = None
    low: float | None = None
    high: float | None = None
    series: dict[int, float] = field(default_factory=dict)
    window: tuple[int, int] | None = None


@dataclass(frozen=True)
class Axis:
    metrics: tuple[str, ...]
    ylabel: str
    logy: bool = False


@dataclass(frozen=True)
class PanelSpec:
    key: str
    title: str
    axes: tuple[Axis, ...]


@dataclass(frozen=True)
class Panel:
    """A drawn panel: a stable key (tests and the report use it), a title and PNG bytes."""

    key: str
    title: str
    png: bytes
    metrics: tuple[str, ...] = ()  # the metrics drawn, in legend order


PANELS: tuple[PanelSpec, ...] = (
    PanelSpec("policy_loss", "Policy loss", (Axis(("actor/pg_loss",), "loss"),)),
    PanelSpec(
        "clip_fraction",
        "Clip fraction",
        (Axis(("actor/pg_clipfrac", "actor/pg_clipfrac_lower"), "fraction of tokens"),),
    ),
    PanelSpec(
        "rollout_timing",
        "Rollout time against step time",
        (Axis(("timing_s/gen", "timing_s/step"), "time (s)"),),
    ),
    PanelSpec("reward", "Reward", (Axis(("critic/score/mean", "critic/rewards/mean"), "reward"),)),
    PanelSpec(
        "response_length",
        "Response length",
        (
            Axis(
                ("response_length/mean", "response_length/max", "response_length/min"),
                "length (tokens)",
            ),
        ),
    ),
    PanelSpec("throughput", "Throughput", (Axis(("perf/throughput",), "tokens/s/device"),)),
    PanelSpec(
        "memory",
        "Peak accelerator memory (actor)",
        (Axis(("actor/perf/max_memory_allocated_gb",), "memory (GB)"),),
    ),
    PanelSpec(
        "critic",
        "Critic",
        (
            Axis(("critic/vf_loss",), "value loss"),
            Axis(("critic/vf_clipfrac",), "fraction of tokens"),
        ),
    ),
)


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
        panels.append(Panel(spec.key, title, draw(metrics, title, axes, bands), drawn))
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
    bands = bands or {}
    fig, subplots = _figure(len(axes))
    for ax, spec in zip(subplots, axes):
        for i, name in enumerate(spec.metrics):
            series = metrics.series(name)
            _line(ax, series, name, i)
            if name in bands:
                _band(ax, bands[name], series, i)
        ax.set_ylabel(spec.ylabel)
        _finish(ax)
    fig.suptitle(title, fontsize=11)
    return to_png(fig)


def regression_panel(metrics: RunMetrics, metric: str, band: Band, title: str) -> Panel | None:
    """A failed check's metric against its baseline band (None when the run lacks the metric)."""
    if not metrics.has(metric):
        return None
    png = draw(metrics, title, [Axis((metric,), _unit(metric))], {metric: band})
    return Panel(f"regression:{metric}", title, png, (metric,))


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
    fig, (ax,) = _figure(1)
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
            top = [b + v for b, v in zip(bottom, values)]
            ax.fill_between(steps, bottom, top, label=label, color=colour, hatch=hatch, linewidth=0)
        bottom = [b + v for b, v in zip(bottom, values)]
    ax.set_ylabel("time (s)")
    _finish(ax)
    ax.legend(fontsize=8, frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.suptitle("Where a step's time goes", fontsize=11)
    return Panel("timing_breakdown", "Where a step's time goes", to_png(fig), tuple(rows))


def trend_chart(
    title: str,
    labels: Sequence[str],
    series: dict[str, list[float | None]],
    units: dict[str, str],
    first_out: dict[str, int],
) -> bytes:
    """Headline numbers across runs (one subplot each); the first run outside its band is ringed."""
    names = [n for n, vals in series.items() if any(v is not None for v in vals)]
    fig, subplots = _figure(
        max(len(names), 1), width=max(WIDTH_IN, 2.6 * len(names)), height=2.6, layout=None
    )  # fixed margins: constrained layout doubles the cost
    fig.subplots_adjust(left=0.06, right=0.99, bottom=0.3, top=0.82, wspace=0.35)
    xs = list(range(len(labels)))
    for i, (ax, name) in enumerate(zip(subplots, names)):
        points = [(x, v) for x, v in zip(xs, series[name]) if v is not None and math.isfinite(v)]
        if points:
            ax.plot(
                [p[0] for p in points],
                [p[1] for p in points],
                color=OKABE_ITO[i % 8],
                marker=MARKERS[i % 8],
                markersize=4,
                markevery=_every(len(points)),
                linewidth=1.4,
            )
        if name in first_out and series[name][first_out[name]] is not None:
            x = first_out[name]
            ax.plot(
                [x],
                [series[name][x]],
                marker="o",
                markersize=12,
                markerfacecolor="none",
                markeredgecolor=OKABE_ITO[3],
                markeredgewidth=2,
                label=f"first out of band: {labels[x]}",
            )
            ax.legend(fontsize=7, frameon=False, loc="best")
        ax.set_title(name, fontsize=9)
        ax.set_ylabel(units.get(name, ""), fontsize=8)
        ticks = xs[:: max(1, len(xs) // 6)]
        ax.set_xticks(ticks, [labels[t] for t in ticks], rotation=30, ha="right")
        ax.set_xlabel("run (oldest to newest)", fontsize=8)
        ax.grid(True, alpha=0.3)
        ax.tick_params(labelsize=7)
    fig.suptitle(title, fontsize=10)
    return to_png(fig)


def to_png(fig: Figure) -> bytes:
    """PNG bytes at a modest resolution; the figure is closed (no leak across 1,000 charts)."""
    buffer = io.BytesIO()
    try:
        fig.savefig(buffer, format="png", dpi=DPI)
    finally:
        plt.close(fig)
    return buffer.getvalue()


def _figure(
    count: int,
    width: float = WIDTH_IN,
    height: float = HEIGHT_IN,
    layout: str | None = "constrained",
) -> tuple[Figure, list]:
    fig, axes = plt.subplots(
        1,
        count,
        figsize=(width if count == 1 else max(width, 4.2 * count), height),
        squeeze=False,
        layout=layout,
    )
    return fig, list(axes[0])


def _line(ax, series: dict[int, float], name: str, i: int) -> None:  # type: ignore[no-untyped-def]
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
        markevery=_every(len(steps)),
    )


def _band(ax, band: Band, series: dict[int, float], i: int) -> None:  # type: ignore[no-untyped-def]
    colour = OKABE_ITO[(i + 5) % 8]
    if band.series:
        ax.plot(
            list(band.series),
            list(band.series.values()),
            color=colour,
            linestyle="--",
            linewidth=1.2,
            label="baseline",
        )
    steps = list(series) or list(band.series)
    if band.window:
        steps = [s for s in steps if band.window[0] <= s <= band.window[1]] or steps
    if not steps:
        return
    lo, hi = band.low, band.high
    if lo is not None or hi is not None:
        ymin, ymax = ax.get_ylim()
        ax.fill_between(
            [min(steps), max(steps)] if len(steps) > 1 else [steps[0] - 0.4, steps[0] + 0.4],
            lo if lo is not None else ymin,
            hi if hi is not None else ymax,
            color=colour,
            alpha=0.25,
            hatch="//",
            label="allowed range",
        )
    if band.value is not None and not band.series:
        ax.hlines(
            band.value,
            min(steps),
            max(steps) if len(steps) > 1 else steps[0] + 0.4,
            colors=colour,
            linestyles="--",
            linewidth=1.2,
            label="baseline",
        )


def _finish(ax) -> None:  # type: ignore[no-untyped-def]
    ax.set_xlabel("step")
    ax.grid(True, alpha=0.3)
    ax.xaxis.get_major_locator().set_params(integer=True)
    ax.legend(fontsize=8, frameon=False, loc="best")


def _drawable(metrics: RunMetrics, name: str) -> bool:
    """Present, with a finite value; the lower clip fraction only when not identically zero."""
    values = [v for v in metrics.series(name).values() if math.isfinite(v)]
    if name == "actor/pg_clipfrac_lower":
        return any(v != 0 for v in values)
    return bool(values)


def _unit(metric: str) -> str:
    for spec in PANELS:
        for ax in spec.axes:
            if metric in ax.metrics:
                return ax.ylabel
    return "time (s)" if metric.startswith("timing_s/") else "value"


def _finite(value: float | None) -> float:
    return value if value is not None and math.isfinite(value) else 0.0


def _every(count: int) -> int:
    return max(1, count // 25)


def __getattr__(name: str) -> object:
    """``LiveView`` lives in :mod:`workbook.plots.live` (it needs IPython); kept importable here."""
    if name == "LiveView":
        from workbook.plots.live import LiveView

        return LiveView
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
