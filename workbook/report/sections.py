"""The report cells of a run's notebook, one call each, and the one list of them in report order.

Each call takes the run (a prepared ``Run``, a ``RunDir`` or a path) and returns a
:class:`~workbook.report.section.Section` a notebook cell displays. :data:`SECTIONS` is the
report's order, for a reader: the verdict and what failed (the banner), the curves, the checks
table, then why it failed, the baseline and history, and what ran. It drives the renderer (which
cells it fills), the page built without a notebook, the benchmark's page and the notebooks' report
cells (``tests/report/test_notebooks.py`` holds them to it).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from workbook.core.layout import RunRef
from workbook.report.facts import (
    Parameters,
    Preflight,
    Reproducibility,
    parameters,
    preflight,
    reproducibility,
)
from workbook.report.last_green import History, history
from workbook.report.outcome import (
    Banner,
    CheckLine,
    Checks,
    Failure,
    Plots,
    banner,
    checks,
    failure,
    plots,
)
from workbook.report.section import Figure, Section, view

BANNER_TAG, REPORT_TAG = "banner", "report"  # the notebook cell tags the renderer fills


@dataclass(frozen=True)
class Cell:
    """One report cell: ``sections.<name>(run)``, tagged ``tag``; ``ray_only`` cells are in the
    notebooks of runs on a Ray cluster only (and not in a page built without a notebook)."""

    name: str
    call: Callable[[RunRef], Section[Any]]
    tag: str = REPORT_TAG
    ray_only: bool = False

    @property
    def source(self) -> str:
        return f"sections.{self.name}(run)"


SECTIONS = (
    Cell("banner", banner, BANNER_TAG), Cell("plots", plots), Cell("checks", checks),
    Cell("failure", failure), Cell("history", history), Cell("preflight", preflight, ray_only=True),
    Cell("parameters", parameters), Cell("reproducibility", reproducibility),
)
ORDER = tuple(c.name for c in SECTIONS if not c.ray_only)  # a page built without a notebook


def report_sections(run: RunRef) -> list[Section[Any]]:
    """All sections in report order (what a report built from the run directory shows)."""
    return [c.call(run) for c in SECTIONS if not c.ray_only]


__all__ = ["BANNER_TAG", "Banner", "Cell", "CheckLine", "Checks", "Failure", "Figure", "History",
           "ORDER", "Parameters", "Plots", "Preflight", "REPORT_TAG", "Reproducibility", "SECTIONS",
           "Section", "banner", "checks", "failure", "history", "parameters", "plots", "preflight",
           "report_sections", "reproducibility", "view"]
