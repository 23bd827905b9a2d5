"""The review page of a proposed baseline: the candidate beside the blessed one, as data for
``templates/proposal.html.j2``, then one self-contained page (:func:`workbook.report.page.page`).

A reviewer decides from this page whether to copy the candidate over the blessed baseline, so
each number it shows says how far the candidate moved in the blessed runs' own noise (delta in
old sigmas, and the symmetric KL divergence of the two normals), each headline metric is drawn
(the source nights' curves under the blessed baseline's band and the candidate's, each as a
night would be compared with it: :func:`workbook.checks.comparison.expected_bands`), the source
runs' own differences are listed run by run (bless takes the top-level versions from the first
one), the green nights passed over for their machine say why, and each red night says whether
the candidate would have passed it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workbook.checks.bands import compares
from workbook.checks.baseline import Baseline, BaselineMetric
from workbook.checks.comparison import expected_bands
from workbook.checks.reductions import WINDOWED
from workbook.checks.spec import CheckSpec, MetricPolicy
from workbook.core.clock import date_text
from workbook.core.layout import write_atomic
from workbook.core.quoting import value_text
from workbook.core.values import number_text
from workbook.history.changes import Change
from workbook.history.ledger import Entry
from workbook.history.proposal import MetricChange, Rejudged, Selection
from workbook.metrics.model import RunMetrics
from workbook.plots.catalog import unit_of
from workbook.plots.compared import Band, StepRange
from workbook.plots.review import review_chart
from workbook.report.links import report_href
from workbook.report.page import page
from workbook.report.section import encoded
from workbook.report.template import environment
from workbook.report.view import read_metrics

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
class PassedOverLine:
    """A green night left out for its machine."""

    run_id: str
    date: str
    href: str | None
    why: str
    text: str


@dataclass(frozen=True)
class DifferLine:
    """One fact the source runs differ on, with each run's value (in the sources' order)."""

    kind: str
    name: str
    values: tuple[str, ...]


@dataclass(frozen=True)
class Chart:
    """One headline metric drawn: the source nights' curves under both baselines' bands."""

    metric: str
    src: str  # a data: URI (the page is one file)
    drawn: str  # what the figure shows, as its alt text says


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
    passed_over: tuple[PassedOverLine, ...] = ()
    left_out: str = ""
    source_ids: tuple[str, ...] = ()  # the columns of ``differ``
    differ: tuple[DifferLine, ...] = ()
    charts: tuple[Chart, ...] = ()


def review(*, scenario: str, hardware: str, candidate: Baseline, blessed: Baseline,
           next_step: str, metrics: Sequence[MetricChange], changes: Sequence[Change],
           selection: Selection, rejudged: Sequence[Rejudged], runs_root: Path,
           page_dir: Path, spec: CheckSpec) -> Review:
    """The page's data; links to each night's report are relative to ``page_dir``."""
    def href(entry: Entry) -> str | None:
        return report_href(entry.run_dir(runs_root), page_dir)

    sources = selection.sources
    ids = tuple(str(i) for i in candidate.provenance.get("run_ids") or [e.run_id for e in sources])
    curves = [(_day(e), read_metrics(e.run_dir(runs_root), quick=True)) for e in sources]
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
        passed_over=tuple(PassedOverLine(p.entry.run_id, p.entry.date, href(p.entry), p.why,
                                         p.text) for p in selection.passed_over),
        left_out=selection.left_out(),
        source_ids=ids, differ=tuple(_differ(candidate.provenance.get("runs_differ"), ids)),
        charts=tuple(_chart(m, curves, blessed, candidate, spec)
                     for m in headline_metrics(sources, blessed, candidate, spec)),
    )


def headline_metrics(sources: Sequence[Entry], blessed: Baseline, candidate: Baseline,
                     spec: CheckSpec) -> list[str]:
    """The metrics the source nights compared with their baseline (the ledger's headline
    numbers), in their order, that either baseline holds; where the nights compared none,
    those the scenario's checks would compare with the blessed baseline."""
    held = set(blessed.metrics) | set(candidate.metrics)
    named = dict.fromkeys(m for e in sources for m in e.headline if m in held)
    if named:
        return list(named)
    return [p.metric for p in spec.policies() if compares(p, blessed)]


def _chart(metric: str, curves: Sequence[tuple[str, RunMetrics]], blessed: Baseline,
           candidate: Baseline, spec: CheckSpec) -> Chart:
    policy = spec.policy(metric) or MetricPolicy(metric=metric, window=spec.window)
    sources = [(label, {s: v for s, v in m.series(metric).items() if math.isfinite(v)})
               for label, m in curves]
    bands = [(label, band, label == "candidate") for label, baseline in
             (("blessed", blessed), ("candidate", candidate))
             if (band := _band(policy, baseline.metrics.get(metric))) is not None]
    png = review_chart(metric, unit_of(metric), sources, bands)
    drawn = (f"{metric}: {len(sources)} source nights per step, "
             + (" and ".join(f"the {label} baseline's band" for label, _, _ in bands)
                or "no baseline band"))
    return Chart(metric, "data:image/png;base64," + encoded(png), drawn)


def _band(policy: MetricPolicy, entry: BaselineMetric | None) -> Band | None:
    """A baseline's metric as a night would be compared with it, in the plots' terms."""
    if entry is None:
        return None
    reference, band, steps = expected_bands(policy, entry)
    if steps:
        return Band(window=policy.window, reduce=policy.reduce, series=dict(entry.series),
                    per_step={s: StepRange(b.reference, b.lower, b.upper)
                              for s, b in steps.items()})
    if reference is None:
        return None
    return Band(value=reference, low=band.lower if band else None,
                high=band.upper if band else None, series=dict(entry.series),
                window=policy.window if policy.reduce in WINDOWED else None,
                reduce=policy.reduce)


def _differ(recorded: Any, ids: tuple[str, ...]) -> list[DifferLine]:
    """The candidate's ``runs_differ``, each fact's value per source run ("none": not there)."""
    lines = []
    for item in recorded if isinstance(recorded, list) else []:
        values = item.get("values") if isinstance(item, Mapping) else None
        if not isinstance(values, Mapping):
            continue
        lines.append(DifferLine(str(item.get("kind") or ""), str(item.get("name") or ""),
                                tuple(value_text(values.get(i), "none") for i in ids)))
    return lines


def _day(entry: Entry) -> str:
    return date_text(entry.date) if entry.date else entry.run_id


def review_html(data: Review) -> str:
    """The whole page (offline, redacted)."""
    macros = environment().get_template(TEMPLATE).module
    body = str(getattr(macros, MACRO)(data))
    return page(f"proposed baseline: {data.scenario} ({data.hardware})", body)


def write_review(path: Path, data: Review) -> Path:
    write_atomic(Path(path), review_html(data))
    return Path(path)


def _num(value: float | None, *, signed: bool = False) -> str:
    return number_text(value, 6, absent=NA, signed=signed)


__all__ = ["KEPT_RED", "NA", "TURNED_GREEN", "Chart", "DifferLine", "MetricLine", "NightLine",
           "PassedOverLine", "Review", "headline_metrics", "review", "review_html",
           "write_review"]
