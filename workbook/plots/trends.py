"""Trend charts for the index: a scenario's headline numbers across runs (nights).

Drawn with the panels' figure helpers (matplotlib stays behind ``panels``); fixed margins
instead of constrained layout, because an index of many scenarios redraws many of these. A night
whose environment changed (a package version, the image, the host, the hardware, the baseline:
:func:`workbook.history.changes.environment_changes`) is marked by a dotted line, named. A
night where a series' level changed (an onset, :func:`workbook.history.onsets.onsets`) is marked
on that series' subplot by a dashed purple line, named by its night.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from workbook.history.changes import Change, environment_changes
from workbook.history.ledger import Entry
from workbook.plots.panels import MARKERS, OKABE_ITO, WIDTH_IN, every, new_figure, to_png

MARK_COLOUR = "#666666"
ONSET_COLOUR = OKABE_ITO[4]  # reddish purple: apart from the grey environment marks
LABEL_CHARS = 40  # a mark's label on the chart; the whole list is in its text


@dataclass(frozen=True)
class ChangeMark:
    """A night (``x``, its run) where the environment changed since the night before it."""

    x: int
    run_id: str
    changes: tuple[Change, ...]

    @property
    def label(self) -> str:
        """What changed, by name (``torch, host``), as short as a chart label must be."""
        names = ", ".join(dict.fromkeys(c.name for c in self.changes))
        return names if len(names) <= LABEL_CHARS else names[: LABEL_CHARS - 3] + "..."

    @property
    def text(self) -> str:
        return "; ".join(c.text for c in self.changes)


def change_marks(nights: Sequence[Entry | None]) -> list[ChangeMark]:
    """The marks of a chart whose x-th run is ``nights[x]`` (None: not a night of the ledger,
    a sweep point say): each night compared with the night before it on the same hardware."""
    marks = []
    before: dict[str, Entry] = {}
    for x, night in enumerate(nights):
        if night is None:
            continue
        previous = before.get(night.hardware)
        if previous is not None:
            found = environment_changes(previous, night)
            if found:
                marks.append(ChangeMark(x, night.run_id, tuple(found)))
        before[night.hardware] = night
    return marks


def trend_chart(
    title: str,
    labels: Sequence[str],
    series: dict[str, list[float | None]],
    units: dict[str, str],
    first_out: dict[str, int],
    marks: Sequence[tuple[int, str]] = (),
    onsets: Mapping[str, Sequence[int]] | None = None,
) -> bytes:
    """Headline numbers across runs (one subplot each); the first run outside its band is ringed;
    each ``(x, label)`` of ``marks`` is a dotted line at run ``x``, its label beside it; each
    onset of a series (``onsets``: its runs ``x``) a dashed line on its subplot, its night named."""
    names = [n for n, vals in series.items() if any(v is not None for v in vals)]
    fig, subplots = new_figure(
        max(len(names), 1), width=max(WIDTH_IN, 2.6 * len(names)), height=2.6, layout=None
    )  # fixed margins: constrained layout doubles the cost
    fig.subplots_adjust(left=0.06, right=0.99, bottom=0.3, top=0.82, wspace=0.35)
    xs = list(range(len(labels)))
    for i, (ax, name) in enumerate(zip(subplots, names, strict=False)):  # 1 subplot, 0 names
        values = zip(xs, series[name], strict=False)
        points = [(x, v) for x, v in values if v is not None and math.isfinite(v)]
        if points:
            ax.plot(
                [p[0] for p in points],
                [p[1] for p in points],
                color=OKABE_ITO[i % 8],
                marker=MARKERS[i % 8],
                markersize=4,
                markevery=every(len(points)),
                linewidth=1.4,
            )
        first = series[name][first_out[name]] if name in first_out else None
        if first is not None:
            x = first_out[name]
            ax.plot(
                [x],
                [first],
                marker="o",
                markersize=12,
                markerfacecolor="none",
                markeredgecolor=OKABE_ITO[3],
                markeredgewidth=2,
                label=f"first out of band: {labels[x]}",
            )
            ax.legend(fontsize=7, frameon=False, loc="best")
        for x, label in marks:  # a change: a dotted line, named along it on the first subplot
            ax.axvline(x, color=MARK_COLOUR, linestyle=":", linewidth=1.2)
            if i == 0:
                ax.annotate(label, (x, 0.98), xycoords=("data", "axes fraction"), rotation=90,
                            fontsize=6, color=MARK_COLOUR, ha="right", va="top")
        for x in (onsets or {}).get(name, ()):  # a new level: dashed, named by its night
            ax.axvline(x, color=ONSET_COLOUR, linestyle="--", linewidth=1.4,
                       label=f"onset: {labels[x]}")
            ax.annotate(f"onset {labels[x]}", (x, 0.02), xycoords=("data", "axes fraction"),
                        rotation=90, fontsize=6, color=ONSET_COLOUR, ha="left", va="bottom")
        if (onsets or {}).get(name):
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

