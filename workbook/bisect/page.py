"""``bisect.html``: a bisect's answer and its evidence, as data for ``templates/bisect.html.j2``.

The page is made from ``bisect.json`` alone (and each step's own ``checks.json``), so it can be
written again from the file at any time: the first bad commit (sha, subject, author, date and
the files it changed) or the commits it may be, the bad night the bisect started from, every
step with its verdict, outcome and failing checks and a link to its report (relative to the
page), and every candidate commit with its state. Self-contained and redacted like every page
(:func:`workbook.report.page.page`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workbook.core.layout import RunDir, write_atomic
from workbook.core.quoting import cut
from workbook.report.links import report_href
from workbook.report.page import page
from workbook.report.palette import BISECT_BANNER
from workbook.report.template import environment

TEMPLATE = "bisect.html.j2"
MACRO = "bisect"
FAILING = ("fail", "error")  # check rows a step's run failed


@dataclass(frozen=True)
class FileLine:
    path: str
    added: str
    deleted: str


@dataclass(frozen=True)
class Culprit:
    """The first bad commit, as ``git show --stat`` tells it."""

    sha: str
    subject: str
    author: str
    date: str
    stat: str
    files: tuple[FileLine, ...]


@dataclass(frozen=True)
class StepLine:
    number: str
    sha: str
    subject: str
    verdict: str
    outcome: str
    why: str
    failing: tuple[str, ...]
    href: str | None
    started: str
    ended: str


@dataclass(frozen=True)
class CandidateLine:
    sha: str
    subject: str
    state: str
    first_bad: bool


@dataclass(frozen=True)
class BisectView:
    """What the page shows."""

    scenario: str
    status: str
    banner: str  # the verdict whose colours the result borrows
    message: str
    good: str
    bad: str
    repo: str
    sets: tuple[str, ...]
    night: tuple[tuple[str, str], ...]  # the bad night's facts
    night_href: str | None
    culprit: Culprit | None
    one_of: tuple[CandidateLine, ...]
    steps: tuple[StepLine, ...]
    candidates: tuple[CandidateLine, ...]


def bisect_view(data: Mapping[str, Any], directory: Path) -> BisectView:
    """The page's data from a bisect.json document; links relative to ``directory``."""
    result = _mapping(data.get("result"))
    status = str(result.get("status") or "running")
    candidates = [_mapping(c) for c in data.get("candidates") or []]
    first = _mapping(result.get("first_bad"))
    suspects = {str(s) for s in result.get("one_of") or []}
    lines = tuple(CandidateLine(str(c.get("sha") or ""), str(c.get("subject") or ""),
                                str(c.get("state") or ""), str(c.get("sha")) == first.get("sha")
                                or str(c.get("sha")) in suspects) for c in candidates)
    night = _mapping(data.get("bad_night"))
    facts = tuple((k, str(night[k])) for k in ("status", "category", "source", "run_dir", "reason")
                  if night.get(k))
    night_dir = night.get("run_dir")
    return BisectView(
        scenario=str(data.get("scenario") or ""), status=status,
        banner=BISECT_BANNER.get(status, "running"), message=str(result.get("message") or ""),
        good=str(data.get("good") or ""), bad=str(data.get("bad") or ""),
        repo=str(data.get("repo") or ""), sets=tuple(str(s) for s in data.get("sets") or []),
        night=facts, night_href=_report_href(night_dir, directory) if night_dir else None,
        culprit=_culprit(first) if status == "found" and first else None,
        one_of=tuple(c for c in lines if c.sha in suspects),
        steps=tuple(_step(_mapping(s), directory) for s in data.get("steps") or []),
        candidates=lines)


def bisect_html(view: BisectView) -> str:
    """The whole page (offline, redacted)."""
    macros = environment().get_template(TEMPLATE).module
    return page(f"bisect: {view.scenario}", str(getattr(macros, MACRO)(view)))


def write_bisect_page(path: Path, data: Mapping[str, Any], directory: Path) -> Path:
    """Write the page from a bisect.json document, atomically: it is written again after every
    step, and a reader refreshing it mid-bisect must never see half of it."""
    write_atomic(Path(path), bisect_html(bisect_view(data, directory)))
    return Path(path)


def _culprit(first: Mapping[str, Any]) -> Culprit:
    files = tuple(FileLine(str(f.get("path") or ""), _count(f.get("added")),
                           _count(f.get("deleted")))
                  for f in (_mapping(f) for f in first.get("files") or []))
    return Culprit(str(first.get("sha") or ""), str(first.get("subject") or ""),
                   str(first.get("author") or "unknown"), str(first.get("date") or "unknown"),
                   str(first.get("stat") or ""), files)


def _step(step: Mapping[str, Any], directory: Path) -> StepLine:
    run_dir = step.get("run_dir")
    return StepLine(number=str(step.get("step") or ""), sha=str(step.get("sha") or ""),
                    subject=str(step.get("subject") or ""),
                    verdict=str(step.get("status") or ""),
                    outcome=str(step.get("outcome") or "none"), why=str(step.get("why") or ""),
                    failing=_failing(run_dir), href=_report_href(run_dir, directory),
                    started=str(step.get("started") or ""), ended=str(step.get("ended") or ""))


def _failing(run_dir: Any) -> tuple[str, ...]:
    """The checks the run failed (checks.json rows that failed or could not be computed)."""
    if not run_dir:
        return ()
    rows = RunDir(Path(str(run_dir))).json_object("checks").get("rows") or []
    return tuple(cut(f"{r.get('name')}: {r.get('message') or r.get('status')}", 160)
                 for r in rows if isinstance(r, dict) and r.get("status") in FAILING)


def _report_href(run_dir: Any, directory: Path) -> str | None:
    """The run's report relative to the page, None when the step recorded no run."""
    return report_href(str(run_dir), directory) if run_dir else None


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _count(value: Any) -> str:
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else "-"


__all__ = ["BisectView", "CandidateLine", "Culprit", "StepLine", "bisect_html", "bisect_view",
           "write_bisect_page"]
