"""The history block of a run's report: the baseline it was judged against and where its numbers
came from; for a red night, the last green night before it in this runs root and what changed
since, and the bisect that would find verl's culprit. Its macro is its own template file."""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path
from typing import Any

from workbook.checks.baseline_rules import BLESSED, IMPORTED
from workbook.core.clock import date_text
from workbook.core.layout import RUN_FILES, RunRef
from workbook.core.status import RED
from workbook.history.bisect_hint import BisectHint, hint_for
from workbook.history.changes import Change, changes_since
from workbook.history.ledger import Entry, entry_of, last_green, read_ledger
from workbook.report.links import report_href
from workbook.report.section import D, Section, kept_section
from workbook.report.template import environment
from workbook.report.view import RunView

HISTORY_TEMPLATE = "history.html.j2"
NO_PROVENANCE = "no provenance"


@dataclass(frozen=True)
class LastGreen:
    """The last green night before a red one, and what changed since."""

    date: str
    run_id: str
    href: str | None  # its report, relative to this one's (None: not in this runs root)
    verl_commit: str
    workbook_commit: str
    changes: tuple[Change, ...] = ()  # the rows of "What changed since"


@dataclass(frozen=True)
class History:
    """What the history block shows: the baseline and, for a red night, its last green night."""

    baseline: str = ""  # the baseline file the run was judged against ('' without one)
    provenance: str = NO_PROVENANCE  # where its numbers came from
    blessed: bool = False  # its provenance is bless's record of runs and versions
    red: bool = False  # regressed or failed: the last green night is shown
    green: LastGreen | None = None  # None on a red night: never green in this runs root
    bisect: BisectHint | None = None  # a red night: the command that finds verl's culprit


@dataclass(frozen=True)
class HistorySection(Section[D]):
    """A section whose macro lives in its own template file."""

    @cached_property
    def html(self) -> str:
        macros = environment().get_template(HISTORY_TEMPLATE).module
        return str(getattr(macros, self.key)(self.data)).strip()


def history(run: RunRef) -> Section[History]:
    """The baseline the run was judged against and where its numbers came from; for a red
    night, the last green night before it in this runs root and what changed since."""
    return kept_section("history", run, _history, kind=HistorySection)


def _history(v: RunView) -> History:
    used = v.checks.get("baseline")  # what the checks were judged against (checks.json)
    used = used if isinstance(used, dict) else {}
    record = used.get("provenance")
    shown = History(baseline=str(used.get("path") or ""), provenance=_provenance_text(record),
                    blessed=isinstance(record, dict) and record.get("source") == BLESSED)
    status, _ = v.verdict
    if status not in RED:
        return shown
    root = _runs_root(v)
    this = entry_of(v.path, root, verdict=status, judged_now=True)  # judged with the file as it is
    green = last_green(read_ledger(root, this.scenario, this.hardware), before=this) if this else None
    hint = hint_for(v.run, this, green) if this else None
    if this is None or green is None:
        return replace(shown, red=True, bisect=hint)
    changes = tuple(changes_since(green, this))
    return replace(shown, red=True, bisect=hint, green=LastGreen(
        date=date_text(green.date) if green.date else "unknown", run_id=green.run_id,
        href=_report_link(v.path, root, green), verl_commit=green.commits.get("verl") or "unknown",
        workbook_commit=green.commits.get("workbook") or "unknown", changes=changes))


def _runs_root(v: RunView) -> Path:
    """The runs root the run joined (run.json's ``runs_root``), else the folder above its
    scenario's."""
    recorded = v.run.get("runs_root")
    if recorded and Path(str(recorded)).is_dir():
        return Path(str(recorded))
    return v.path.parents[1]


def _report_link(run_dir: Path, root: Path, green: Entry) -> str | None:
    """The green night's report relative to this run's, when it is a file of this runs root."""
    night = green.run_dir(root)
    if Path(root).resolve() not in (night / RUN_FILES["report"]).resolve().parents:
        return None
    return report_href(night, run_dir)


def _provenance_text(record: Any) -> str:
    """Where a baseline's numbers came from, in one line; NO_PROVENANCE when it does not say."""
    if not isinstance(record, dict) or record.get("source") not in (BLESSED, IMPORTED):
        return NO_PROVENANCE
    if record["source"] == IMPORTED:
        origin = record.get("origin") or record.get("imported_from")
        return (f"{NO_PROVENANCE}: verl's Ascend baseline text" + (f" ({origin})" if origin else "")
                + "; it records no versions or runs")
    runs = record.get("runs") or record.get("run_ids") or []
    created = record.get("created")
    facts = [f"verl {record['verl_version']}" if record.get("verl_version") else None,
             f"verl commit {str(record['verl_commit'])[:12]}" if record.get("verl_commit") else None,
             f"workbook commit {str(record['workbook_commit'])[:12]}"
             if record.get("workbook_commit") else None,
             f"image {_image_text(record['image'])}" if record.get("image") else None]
    shown = ", ".join(f for f in facts if f)
    return (f"blessed {date_text(str(created)) if created else '(date not recorded)'} from "
            f"{len(runs)} runs" + (f" ({shown})" if shown else "") + _runs_differ_text(record))


def _runs_differ_text(record: dict[str, Any]) -> str:
    """What the blessed runs differed in among themselves (bless records the first run's):
    ``runs_differ``, else the older ``package_versions_differ``; '' when they agreed."""
    differ = record.get("runs_differ")
    names = ([str(d.get("name")) for d in differ if isinstance(d, dict)]
             if isinstance(differ, list) else [str(n) for n in
                                               record.get("package_versions_differ") or []])
    if not names:
        return ""
    listed = ", ".join(names[:6]) + (f" and {len(names) - 6} more" if len(names) > 6 else "")
    return f"; its runs differed in {listed} (the first run's are recorded)"


def _image_text(image: Any) -> str:
    if not isinstance(image, dict):
        return str(image)
    return str(image.get("ref") or image.get("digest") or image.get("id") or "unknown")
