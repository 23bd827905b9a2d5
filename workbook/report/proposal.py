"""The review page of a proposed baseline: the candidate beside the blessed one, as data for
``templates/proposal.html.j2``, then one self-contained page (:func:`workbook.report.page.page`).

A reviewer decides from this page whether to copy the candidate over the blessed baseline, so
each number it shows says how far the candidate moved in the blessed runs' own noise (delta in
old sigmas, and the symmetric KL divergence of the two normals), and each red night says
whether the candidate would have passed it.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from workbook.checks.baseline import Baseline
from workbook.core.layout import RUN_FILES, write_atomic
from workbook.history.changes import Change
from workbook.history.ledger import Entry
from workbook.history.proposal import MetricChange, Rejudged
from workbook.report.page import page
from workbook.report.template import environment

TEMPLATE = "proposal.html.j2"
MACRO = "review"  # the template's one macro
NA = "n/a"
TURNED_GREEN, KEPT_RED = "turned green", "kept red"


@dataclass(frozen=True)
class MetricLine:
    metric: str
    old: str
    old_sigma: str
    new: str
    new_sigma: str
    delta: str
    sigmas: str
    kl: str


@dataclass(frozen=True)
class NightLine:
    run_id: str
    date: str
    href: str | None
    verdict: str = ""
    status: str = ""
    outcome: str = ""
    reason: str = ""


@dataclass(frozen=True)
class Review:
    """What the review page shows."""

    scenario: str
    hardware: str
    candidate: str
    blessed: str
    blessed_created: str
    next_step: str
    metrics: tuple[MetricLine, ...]
    changes: tuple[Change, ...]
    sources: tuple[NightLine, ...]
    red_nights: tuple[NightLine, ...]


def review(*, scenario: str, hardware: str, candidate: Baseline, blessed: Baseline,
           next_step: str, metrics: Sequence[MetricChange], changes: Sequence[Change],
           sources: Sequence[Entry], rejudged: Sequence[Rejudged], runs_root: Path,
           page_dir: Path) -> Review:
    """The page's data; links to each night's report are relative to ``page_dir``."""
    def href(entry: Entry) -> str | None:
        path = Path(entry.path)
        report = (path if path.is_absolute() else Path(runs_root) / path) / RUN_FILES["report"]
        if not report.is_file():
            return None
        return Path(os.path.relpath(report.resolve(), Path(page_dir).resolve())).as_posix()

    return Review(
        scenario=scenario, hardware=hardware, candidate=str(candidate.path),
        blessed=str(blessed.path), next_step=next_step,
        blessed_created=str(blessed.provenance.get("created") or "at an unrecorded date"),
        metrics=tuple(MetricLine(m.metric, _num(m.old), _num(m.old_sigma), _num(m.new),
                                 _num(m.new_sigma), _num(m.delta, signed=True),
                                 _num(m.delta_sigmas, signed=True), _num(m.symmetric_kl))
                      for m in metrics),
        changes=tuple(changes),
        sources=tuple(NightLine(e.run_id, e.date, href(e), verdict=e.verdict) for e in sources),
        red_nights=tuple(NightLine(r.entry.run_id, r.entry.date, href(r.entry),
                                   verdict=r.entry.verdict, status=r.status,
                                   outcome=TURNED_GREEN if r.turned_green else KEPT_RED,
                                   reason=r.reason) for r in rejudged),
    )


def review_html(data: Review) -> str:
    """The whole page (offline, redacted)."""
    macros = environment().get_template(TEMPLATE).module
    body = str(getattr(macros, MACRO)(data))
    return page(f"proposed baseline: {data.scenario} ({data.hardware})", body)


def write_review(path: Path, data: Review) -> Path:
    write_atomic(Path(path), review_html(data))
    return Path(path)


def _num(value: float | None, *, signed: bool = False) -> str:
    if value is None:
        return NA
    return f"{value:+.6g}" if signed else f"{value:.6g}"


__all__ = ["KEPT_RED", "NA", "TURNED_GREEN", "MetricLine", "NightLine", "Review", "review",
           "review_html", "write_review"]
