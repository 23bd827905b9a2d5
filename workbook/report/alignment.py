"""The alignment page of two runs: what ``notebooks/align.ipynb``'s report cells show.

:func:`prepare` aligns run B with the reference run A (:mod:`workbook.align.runs`) and
records the result in its folder as ``alignment.json`` (``<runs root>/alignments/<id>/`` unless
told otherwise). Every section here reads that record, never the runs again, so the page says
exactly what the record and the exit code say. ``workbook align`` and the notebook's last cell
render the page the same way, from the notebook's report cells
(:func:`workbook.report.render.render_alignment`); in JupyterLab each cell shows its section.

The sections' markup is ``templates/alignment.html.j2``, one macro per section.
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, TypeVar

from workbook.align.compute import (
    BEYOND,
    MISSING,
    REPORTED,
    THROUGHPUT,
    UNDEFINED,
    WITHIN,
    percent_text,
    threshold_text,
)
from workbook.align.plot import aligned_curves
from workbook.align.runs import Alignment, RunSide, align_runs
from workbook.checks.evidence import read_run
from workbook.core.layout import (
    ALIGNMENT_FILE,
    ALIGNMENT_PAGE,
    ALIGNMENTS_DIR,
    default_root,
    new_run_id,
    write_json,
)
from workbook.core.quoting import value_text
from workbook.errors import InputError
from workbook.report.links import report_href
from workbook.report.palette import differs_style, warning_style
from workbook.report.section import Figure, Section, encoded
from workbook.report.template import environment

TEMPLATE = "alignment.html.j2"
D = TypeVar("D")
# a metric's status as a check-row colour: within/beyond a threshold pass/fail, no number error
SHOWN = {WITHIN: "pass", BEYOND: "fail", MISSING: "error", UNDEFINED: "error",
         REPORTED: "not_measured"}
# the groups of facts shown side by side, in this order
GROUPS = ("run", "settings", "overrides", "env", "versions", "commits", "hardware", "machine",
          "conditions")


@dataclass
class Record:
    """An alignment and the folder it is recorded in (``alignment.json``, the page)."""

    folder: Path
    alignment: Alignment

    @property
    def page(self) -> Path:
        return self.folder / ALIGNMENT_PAGE

    def _repr_html_(self) -> str:
        a = self.alignment
        return (f"<p>Aligning <code>{html.escape(a.b.label)}</code> with the reference "
                f"<code>{html.escape(a.a.label)}</code>: <b>{html.escape(a.status)}</b>. The page "
                f"goes to <code>{html.escape(str(self.page))}</code></p>")


def prepare(run_a: str | Path, run_b: str | Path, *, thresholds: Mapping[str, float] | None = None,
            metrics: Iterable[str] = (), min_throughput_ratio: float | None = None,
            out: str | Path = "") -> Record:
    """Align ``run_b`` with ``run_a`` and record it in ``out`` (default: a new folder under the
    runs' root, ``alignments/<id>/``)."""
    if not str(run_a) or not str(run_b):
        raise InputError("give both run directories: run_a (the reference) and run_b")
    metrics = list(metrics)
    alignment = align_runs(Path(run_a), Path(run_b), thresholds=thresholds, metrics=metrics,
                           min_throughput_ratio=min_throughput_ratio)
    folder = Path(out).resolve() if out else runs_root_of(alignment) / ALIGNMENTS_DIR / new_run_id()
    folder.mkdir(parents=True, exist_ok=True)
    inputs = {"run_a": alignment.a.path, "run_b": alignment.b.path,
              "thresholds": dict(thresholds or {}), "metrics": list(metrics),
              "min_throughput_ratio": min_throughput_ratio, "out": str(folder)}
    write_json(folder / ALIGNMENT_FILE, {**alignment.to_dict(), "inputs": inputs})
    return Record(folder, alignment)


def load(folder: str | Path) -> Record:
    """The alignment recorded in ``folder``."""
    folder = Path(folder).resolve()
    data = json.loads((folder / ALIGNMENT_FILE).read_text(encoding="utf-8"))
    return Record(folder, Alignment.from_dict(data))


def record_of(value: Record | Path | str) -> Record:
    return value if isinstance(value, Record) else load(Path(value))


def inputs_of(folder: Path) -> dict[str, Any]:
    """The parameters the alignment was made with (the notebook's, for the page)."""
    data = json.loads((Path(folder) / ALIGNMENT_FILE).read_text(encoding="utf-8"))
    return dict(data.get("inputs") or {})


def runs_root_of(alignment: Alignment) -> Path:
    """The runs root both runs recorded (``run.json``), else the one runs root."""
    roots = set()
    for side in (alignment.a, alignment.b):
        recorded = read_run(Path(side.path)).get("runs_root")
        roots.add(str(recorded) if recorded else str(Path(side.path).parents[1]))
    return Path(roots.pop()) if len(roots) == 1 else default_root()


class AlignmentSection(Section[D]):
    """A section of the alignment page (its macro is in ``alignment.html.j2``)."""

    @cached_property
    def html(self) -> str:
        macros = environment().get_template(TEMPLATE).module
        return str(getattr(macros, self.key.replace("-", "_"))(self.data)).strip()


@dataclass(frozen=True)
class AlignmentVerdict:
    status: str
    reason: str
    problems: tuple[str, ...]
    warnings: tuple[str, ...]
    facts: tuple[tuple[str, str], ...]
    warning_style: str


@dataclass(frozen=True)
class MetricLine:
    metric: str
    threshold: str
    mae: str
    max_error: str
    first_beyond: str
    steps: int
    status: str
    shown: str  # the check-row colour of the status
    paired: str
    note: str


@dataclass(frozen=True)
class Metrics:
    rows: tuple[MetricLine, ...]
    throughput: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Curves:
    figures: tuple[Figure, ...]


@dataclass(frozen=True)
class FactLine:
    group: str
    name: str
    a: str
    b: str
    differs: bool


@dataclass(frozen=True)
class Runs:
    a: RunSide
    b: RunSide
    a_report: str | None
    b_report: str | None
    rows: tuple[FactLine, ...]
    differing: int
    differs_style: str


def verdict(value: Record | Path | str) -> AlignmentSection[AlignmentVerdict]:
    """The banner: aligned or not, why, and the warnings (a run not made deterministic)."""
    a = record_of(value).alignment
    steps = sorted({s for m in a.metrics for s in m.steps})
    facts = (("run A (reference)", a.a.label.split(": ", 1)[1]),
             ("run B", a.b.label.split(": ", 1)[1]),
             ("steps compared", f"{steps[0]}-{steps[-1]} ({len(steps)})" if steps else "none"),
             ("steps reached", f"A {a.a.steps_reached}, B {a.b.steps_reached}"
              + (f" of {a.a.expected_steps}" if a.a.expected_steps else "")),
             ("throughput B/A", _number(a.throughput.ratio)))
    return AlignmentSection("alignment-verdict", AlignmentVerdict(
        a.status, a.judgement.reason, a.judgement.problems, a.judgement.warnings, facts,
        warning_style()))


def table(value: Record | Path | str) -> AlignmentSection[Metrics]:
    """One row per metric: threshold, mean and largest error, first step beyond, signs of B - A;
    then the throughput ratio."""
    a = record_of(value).alignment
    rows = []
    for m in a.metrics:
        test = m.paired
        rows.append(MetricLine(
            m.metric, threshold_text(m.threshold), percent_text(m.mae), percent_text(m.max_error),
            "-" if m.first_beyond is None else str(m.first_beyond),
            len(m.steps), m.status, SHOWN[m.status],
            "-" if test is None or not test.steps else
            f"B above A at {test.above} of {test.steps} steps, below at {test.below}",
            m.why or (test.note if test else "")))
    rate = a.throughput
    throughput = (("ratio B/A", _number(rate.ratio)),
                  ("steps", ", ".join(map(str, rate.steps)) or "none"),
                  (f"mean {THROUGHPUT}, A", _number(rate.a)), (f"mean {THROUGHPUT}, B", _number(rate.b)),
                  ("criterion", "reported only" if rate.minimum is None else
                   f"at least {rate.minimum:g}: {'holds' if rate.holds else 'does not hold'}"))
    return AlignmentSection("alignment-metrics", Metrics(tuple(rows), throughput))


def curves(value: Record | Path | str) -> AlignmentSection[Curves]:
    """Per metric both runs' curves, and B's error per step against the threshold."""
    a = record_of(value).alignment
    figures = tuple(
        Figure(f"align:{m.metric}", m.metric,
               encoded(aligned_curves(m.metric, m.a, m.b, m.errors, m.threshold)), (m.metric,))
        for m in a.metrics if m.steps)
    return AlignmentSection("alignment-curves", Curves(figures))


def runs(value: Record | Path | str) -> AlignmentSection[Runs]:
    """Both runs side by side: settings, overrides, environment, versions, commits, hardware,
    machine and the conditions each trained in; the rows that differ highlighted."""
    record = record_of(value)
    a, b = record.alignment.a, record.alignment.b
    rows = []
    for group in GROUPS:
        left, right = a.facts.get(group) or {}, b.facts.get(group) or {}
        for name in sorted(set(left) | set(right)):
            if left.get(name) is None and right.get(name) is None:
                continue  # recorded by neither run
            x, y = value_text(left.get(name), "-"), value_text(right.get(name), "-")
            rows.append(FactLine(group, name, x, y, x != y))
    return AlignmentSection("alignment-runs", Runs(
        a, b, report_href(a.path, record.folder), report_href(b.path, record.folder), tuple(rows),
        sum(r.differs for r in rows), differs_style()))


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.4g}"
