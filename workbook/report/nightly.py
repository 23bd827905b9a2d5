"""The index's nightly table: per scenario and hardware, what a maintainer asks first.

Which scenarios are red and since which night, what changed since the last green night, that
green night (its report and commits), the nights that came out improved, and whether the
baseline is stale, with a candidate ready for review or the command that proposes one. The
facts are :mod:`workbook.history.overview`'s, from the ledger and files only; this module turns
them into the rows of ``templates/nightly.html.j2``, links relative to the index.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from workbook.checks.baseline import Baseline, load_baseline
from workbook.core.clock import date_text
from workbook.core.layout import RUN_FILES
from workbook.errors import WorkbookError
from workbook.history.changes import Change
from workbook.history.ledger import Entry, file_sha256
from workbook.history.overview import BaselineState, Overview, overview
from workbook.history.proposal_record import recorded_proposals
from workbook.report.sparkline import Sparkline
from workbook.report.template import environment

TEMPLATE = "nightly.html.j2"
MACRO = "nightly"  # the template's one macro
SHOWN_CHANGES = 8  # what changed, listed in a cell; the red night's report lists them all
SHOWN_IMPROVED = 5
PROPOSE = "workbook baseline propose"
Link = Callable[[Path], str | None]  # a file of the runs root -> its href from the index


@dataclass(frozen=True)
class NightLink:
    """A night as a cell shows it: its date and run, linked to its report where there is one."""

    run_id: str
    date: str
    href: str | None


@dataclass(frozen=True)
class BaselineLine:
    """The baseline's state: ``current`` or ``stale`` (why), and what to do about it."""

    name: str
    path: str
    state: str
    reasons: tuple[str, ...] = ()
    candidate_href: str | None = None  # a proposal made against its current content
    candidate_date: str = ""
    command: str = ""  # the propose command, where a proposal would find enough nights
    note: str = ""  # why there is neither


@dataclass(frozen=True)
class NightlyRow:
    scenario: str
    hardware: str
    verdict: str
    latest: NightLink
    red_since: NightLink | None
    changes: tuple[Change, ...]  # the first SHOWN_CHANGES
    more_changes: int
    last_green: NightLink | None
    verl_commit: str
    workbook_commit: str
    improved: tuple[NightLink, ...]  # the newest, up to SHOWN_IMPROVED
    improved_count: int
    baseline: BaselineLine | None
    spark: Sparkline | None = None  # the headline number across the nights (the index draws it)
    spark_label: str = ""  # which number that is


def nightly_rows(ledgers: Mapping[tuple[str, str], Sequence[Entry]], runs_root: Path,
                 link: Link) -> list[NightlyRow]:
    """One row per scenario and hardware with a ledger, by name."""
    rows = []
    for (scenario, hardware), entries in sorted(ledgers.items()):
        if not entries:
            continue
        path = entries[-1].baseline.get("path")
        baseline, sha256 = _baseline(Path(path)) if path else (None, None)
        seen = overview(entries, baseline=baseline, baseline_sha256=sha256,
                        proposals=recorded_proposals(runs_root, scenario, hardware))
        rows.append(_row(seen, runs_root, link))
    return rows


def nightly_html(rows: Sequence[NightlyRow]) -> str:
    """The table (empty without a ledger)."""
    if not rows:
        return ""
    macros = environment().get_template(TEMPLATE).module
    return str(getattr(macros, MACRO)(rows)).strip()


def _row(seen: Overview, runs_root: Path, link: Link) -> NightlyRow:
    def night(entry: Entry) -> NightLink:
        report = entry.run_dir(runs_root) / RUN_FILES["report"]
        return NightLink(entry.run_id, date_text(entry.date) if entry.date else entry.run_id,
                         link(report))

    green = seen.last_green
    return NightlyRow(
        scenario=seen.scenario, hardware=seen.hardware, verdict=seen.latest.verdict,
        latest=night(seen.latest),
        red_since=night(seen.red_since) if seen.red_since else None,
        changes=tuple(seen.changes[:SHOWN_CHANGES]),
        more_changes=max(len(seen.changes) - SHOWN_CHANGES, 0),
        last_green=night(green) if green else None,
        verl_commit=(green.commits.get("verl") if green else None) or "unknown",
        workbook_commit=(green.commits.get("workbook") if green else None) or "unknown",
        improved=tuple(night(e) for e in seen.improved[:SHOWN_IMPROVED]),
        improved_count=len(seen.improved),
        baseline=_baseline_line(seen.scenario, seen.baseline, link) if seen.baseline else None)


def _baseline_line(scenario: str, state: BaselineState, link: Link) -> BaselineLine:
    reasons = []
    if state.improved:
        count = len(state.improved)
        reasons.append(f"{count} night{'s' if count != 1 else ''} improved since it was blessed")
    if state.moved:
        reasons.append("the environment moved: " + "; ".join(c.text for c in state.moved))
    candidate = state.candidate
    href = link(candidate.review) if candidate and candidate.review else None
    command = f"{PROPOSE} {scenario}" if state.stale and href is None and state.proposable \
        else ""
    note = "" if not state.stale or href or command else state.why_not
    return BaselineLine(
        name=Path(state.path).name, path=state.path,
        state="stale" if state.stale else "current", reasons=tuple(reasons),
        candidate_href=href,
        candidate_date=date_text(candidate.created) if candidate and candidate.created else "",
        command=command, note=note)


def _baseline(path: Path) -> tuple[Baseline | None, str | None]:
    """The baseline file as it is here, and its digest; (None, None) when it is not here (a
    published index, another machine's path) or cannot be read."""
    if not path.is_file():
        return None, None
    try:
        return load_baseline(path), file_sha256(path)
    except (WorkbookError, OSError):
        return None, file_sha256(path)


__all__ = ["BaselineLine", "NightLink", "NightlyRow", "nightly_html", "nightly_rows"]
