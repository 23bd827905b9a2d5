"""A report section: the data of one block and its HTML, computed once per state of its run.

Every section of a run, a comparison or an alignment is a :class:`Section`: its data (facts,
rows, figures, notes) and, through ``_repr_html_``, its HTML from the one template of every
section (``templates/``), so a notebook cell that ends with the call displays it and the renderer
puts the same HTML in the page. Images are inline base64 PNGs: a report is one file.
"""

from __future__ import annotations

from base64 import b64encode
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from functools import cached_property
from typing import Generic, TypeVar

from workbook.core.layout import RunRef, run_dir_of
from workbook.plots.panels import Panel
from workbook.report.cache import kept
from workbook.report.template import section_html
from workbook.report.view import RunView, load_view

D = TypeVar("D")
Facts = tuple[tuple[str, str], ...]  # (label, value) in the order shown


@dataclass(frozen=True)
class Section(Generic[D]):
    """One block of a report: its data, and its HTML (which Jupyter displays)."""

    key: str
    data: D

    @cached_property
    def html(self) -> str:
        return section_html(self.key, self.data)

    def _repr_html_(self) -> str:
        return self.html

    def __repr__(self) -> str:
        return f"<report section {self.key}>"


@dataclass(frozen=True)
class Figure:
    """A drawn panel, its PNG inline (base64); ``metrics`` are those it draws, when known."""

    key: str
    title: str
    png: str
    metrics: tuple[str, ...] | None = None

    @property
    def metrics_text(self) -> str:
        return " ".join(self.metrics or ())

    @classmethod
    def of(cls, panel: Panel) -> Figure:
        return cls(panel.key, panel.title, encoded(panel.png), tuple(panel.metrics))


def encoded(png: bytes) -> str:
    """PNG bytes as the base64 text of a ``data:`` URL."""
    return b64encode(png).decode("ascii")


def view(run: RunRef) -> RunView:
    return load_view(run_dir_of(run).path)


def kept_section(key: str, run: RunRef, build: Callable[[RunView], D], *args: Hashable,
                 kind: type[Section[D]] = Section) -> Section[D]:
    """The section ``key`` of ``run``, built from its view unless kept for its current files
    (:mod:`workbook.report.cache`: the page rendered after a notebook's cells reuses them)."""
    path = run_dir_of(run).path
    return kept(path, (key, *args), lambda: kind(key, build(load_view(path))))
