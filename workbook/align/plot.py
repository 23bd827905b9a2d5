"""One metric of two aligned runs: both curves on one axis, and B's error per step against the
threshold beside it (drawn with :mod:`workbook.plots.panels`, the module that holds matplotlib).

The error is the alignment's own (% of run A's scale, :mod:`workbook.align.compute`), so the
reader sees where a curve left its threshold, not only the mean the verdict judged. A step whose
error is undefined (a value that is not finite, or A at 0 everywhere) is not drawn; its step is
named in the subplot's title.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from workbook.plots.catalog import unit_of
from workbook.plots.panels import OKABE_ITO, finish_axes, line, new_figure, to_png

ERROR_COLOUR = 3  # the palette's vermilion, apart from the two runs' blue and orange
LABELS = ("run A", "run B")


def aligned_curves(metric: str, a: Mapping[int, float], b: Mapping[int, float],
                   errors: Mapping[int, float], threshold: float | None) -> bytes:
    """PNG of ``metric``: A and B overlaid (left), B's error per step in % (right)."""
    fig, (curves, error) = new_figure(2)
    for i, (label, series) in enumerate(zip(LABELS, (a, b), strict=True)):
        line(curves, dict(series), label, i)
    curves.set_ylabel(unit_of(metric))
    curves.set_title("both runs", fontsize=9)
    finish_axes(curves)
    shown = {s: e for s, e in errors.items() if math.isfinite(e)}
    undefined = [s for s, e in errors.items() if not math.isfinite(e)]
    if shown:
        line(error, shown, "B vs A", ERROR_COLOUR)
    if threshold is not None:
        error.axhline(threshold, color=OKABE_ITO[7], linestyle="--", linewidth=1.2,
                      label=f"threshold {threshold:g} %")
    error.set_ylim(bottom=0)  # an error is never negative: no zoom that makes 3 % look like 30
    error.set_ylabel("error (% of A's mean |value|)")
    error.set_title("error per step" + (f"; undefined at step {_steps(undefined)}" if undefined
                                        else ""), fontsize=9)
    finish_axes(error)
    fig.suptitle(metric, fontsize=11)
    return to_png(fig)


def _steps(steps: list[int]) -> str:
    shown = ", ".join(str(s) for s in steps[:5])
    return shown + (f" and {len(steps) - 5} more" if len(steps) > 5 else "")
