"""A proposed baseline's curves: the source nights of one metric overlaid with what the blessed
baseline and the candidate would compare a night with.

Drawn with the panels' figure helpers (matplotlib stays behind :mod:`workbook.plots.panels`).
Each baseline is drawn as it compares (:class:`workbook.plots.compared.Band`): per step, its
mean and each step's allowed range; or its window statistic as a segment over the window with
the allowed range shaded over those steps. The blessed baseline is grey, the candidate green,
so a reviewer sees at once whether the nights sit inside the old band, the new one or both.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from workbook.plots.compared import Band
from workbook.plots.panels import (
    DASHES,
    MARKERS,
    OKABE_ITO,
    Axes,
    every,
    finish_axes,
    new_figure,
    to_png,
)

BLESSED_COLOUR = "#777777"
CANDIDATE_COLOUR = OKABE_ITO[2]  # bluish green
SOURCE_COLOURS = (OKABE_ITO[0], OKABE_ITO[1], OKABE_ITO[3], OKABE_ITO[4], OKABE_ITO[5],
                  OKABE_ITO[7])


def review_chart(metric: str, unit: str, sources: Sequence[tuple[str, Mapping[int, float]]],
                 baselines: Sequence[tuple[str, Band, bool]]) -> bytes:
    """One metric: each source night's per-step values (``(label, {step: value})``), then each
    baseline's band (``(label, band, candidate?)``) over them."""
    fig, (ax,) = new_figure(1)
    for i, (label, series) in enumerate(sources):
        steps = sorted(series)
        ax.plot(steps, [series[s] for s in steps], label=label,
                color=SOURCE_COLOURS[i % len(SOURCE_COLOURS)], marker=MARKERS[i % 8],
                linestyle=DASHES[i % 4], markersize=3, linewidth=1.0,
                markevery=every(len(steps)))
    last = max((max(s) for _, s in sources if s), default=None)
    for label, band, candidate in sorted(baselines, key=lambda b: not b[2]):  # blessed on top
        _band(ax, label, band, CANDIDATE_COLOUR if candidate else BLESSED_COLOUR,
              "\\\\" if candidate else "//", last)
    ax.set_ylabel(unit)
    finish_axes(ax)
    fig.suptitle(metric, fontsize=11)
    return to_png(fig)


def _band(ax: Axes, label: str, band: Band, colour: str, hatch: str, last: int | None) -> None:
    ymin, ymax = ax.get_ylim()
    if band.by_steps:
        steps = sorted(band.per_step)
        ranges = [band.per_step[s] for s in steps]
        edges = [s - 0.5 for s in steps] + [steps[-1] + 0.5]
        low = [ymin if r.low is None else r.low for r in ranges]
        high = [ymax if r.high is None else r.high for r in ranges]
        ax.fill_between(edges, low + low[-1:], high + high[-1:], step="post", color=colour,
                        alpha=0.2, hatch=hatch, linewidth=0, label=f"{label}: allowed range per step")
        for side in ([r.low for r in ranges], [r.high for r in ranges]):
            bounded = [v for v in side if v is not None]
            if len(bounded) == len(side):  # a bounded edge, drawn (an open one is not)
                ax.stairs(bounded, edges, color=colour, linewidth=1.0, baseline=None)
        ax.plot(steps, [r.reference for r in ranges], color=colour, linestyle="--",
                linewidth=1.4, label=f"{label}: mean per step")
        return
    if band.value is None:
        return
    window = band.window or ((last, last) if last is not None else None)
    if window is None:
        return
    first, end = window[0] - 0.5, window[1] + 0.5
    if band.low is not None or band.high is not None:
        ax.fill_between([first, end], [ymin if band.low is None else band.low] * 2,
                        [ymax if band.high is None else band.high] * 2, color=colour, alpha=0.2,
                        hatch=hatch, linewidth=0,
                        label=f"{label}: allowed range of the {band.reduce or 'statistic'}")
        for edge in (band.low, band.high):
            if edge is not None:
                ax.hlines(edge, first, end, colors=colour, linewidth=1.0)
    ax.hlines(band.value, first, end, colors=colour, linestyles="--", linewidth=1.6,
              label=f"{label}: {band.reduce or 'statistic'} over steps {window[0]}-{window[1]}")


__all__ = ["review_chart"]
