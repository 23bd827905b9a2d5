"""A scenario's nights at a glance: what a nightly maintainer asks the index first.

For one scenario on one hardware, from its ledger and files alone (nothing is read from a log):
its newest night's verdict; when red, since when (the first red night after the last green one)
and what changed since the last green night; that green night; the nights that came out
``improved``; and the state of the baseline the newest night was judged against.

A baseline is **stale** when nights judged against its current content came out improved (the
code got faster than its band allows), or when every recent green night ran with a package,
image, hardware, tuning or env its runs did not (the environment moved on; a verl commit moves
every night and is not a reason). A stale baseline has a **candidate ready** when a proposal
(``workbook baseline propose``) was made against its current content, which the proposal's
record names by SHA-256: one made against an earlier content, or before the candidate was
copied over it, is not ready for this one. Otherwise the index offers the command, when a
proposal would find enough alike green nights (:func:`workbook.history.proposal.select_sources`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from workbook.checks.baseline import Baseline
from workbook.core.clock import utc_time
from workbook.core.status import Verdict
from workbook.history.changes import (
    ENVIRONMENT,
    HARDWARE,
    IMAGE,
    PACKAGE,
    TUNING,
    Change,
    changes_since,
)
from workbook.history.ledger import Entry, last_green
from workbook.history.proposal import (
    DEFAULT_LAST,
    ProposalError,
    baseline_entry,
    select_sources,
)
from workbook.history.proposal_record import Recorded

RECENT_GREENS = 3  # the green nights whose environment must all differ for the baseline's to be old
MOVED_KINDS = (PACKAGE, IMAGE, HARDWARE, TUNING, ENVIRONMENT)
NOT_MOVED = ("verl-workbook",)  # the tool that judges: its version says nothing of the numbers


@dataclass(frozen=True)
class BaselineState:
    """The baseline the newest night was judged against, and whether it still describes it."""

    path: str
    sha256: str | None  # its content: the file's, else what the newest night recorded
    created: str | None  # when it was blessed (None: the file is not readable here)
    improved: tuple[Entry, ...] = ()  # nights judged against this content that improved
    moved: tuple[Change, ...] = ()  # what every recent green night ran with, and its runs did not
    candidate: Recorded | None = None  # a proposal made against this content
    proposable: bool = False  # a proposal would find enough alike green nights
    why_not: str = ""  # why it would not

    @property
    def stale(self) -> bool:
        return bool(self.improved or self.moved)


@dataclass(frozen=True)
class Overview:
    """One scenario on one hardware, as its ledger and files tell it."""

    scenario: str
    hardware: str
    latest: Entry
    last_green: Entry | None
    red_since: Entry | None  # the first red night after the last green one (the newest is red)
    changes: tuple[Change, ...]  # since the last green night (the newest is red)
    improved: tuple[Entry, ...]  # every improved night, newest first
    baseline: BaselineState | None  # None: the newest night was judged against none


def overview(entries: Sequence[Entry], *, baseline: Baseline | None = None,
             baseline_sha256: str | None = None, proposals: Sequence[Recorded] = ()
             ) -> Overview:
    """The overview of one ledger (``entries``, not empty). ``baseline`` is the file the newest
    night was judged against as it is now (None: not readable here), ``baseline_sha256`` its
    content's digest, ``proposals`` the scenario's proposals on this hardware, newest first."""
    ordered = sorted(entries, key=lambda e: e.sort_key)
    latest = ordered[-1]
    green = last_green(ordered)
    red_since = changes = None
    if latest.red:
        after = [e for e in ordered if green is None or e.sort_key > green.sort_key]
        red_since = next((e for e in after if e.red), latest)
        changes = tuple(changes_since(green, latest)) if green is not None else ()
    improved = tuple(e for e in reversed(ordered) if e.verdict == Verdict.IMPROVED.value)
    return Overview(
        scenario=latest.scenario, hardware=latest.hardware, latest=latest, last_green=green,
        red_since=red_since, changes=changes or (), improved=improved,
        baseline=_state(ordered, baseline, baseline_sha256, proposals))


def _state(ordered: list[Entry], baseline: Baseline | None, sha256: str | None,
           proposals: Sequence[Recorded]) -> BaselineState | None:
    latest = ordered[-1]
    path = latest.baseline.get("path")
    if not path:
        return None
    sha256 = sha256 or latest.baseline.get("sha256")
    created = str(baseline.provenance.get("created") or "") if baseline else ""
    try:
        select_sources(ordered, latest.settings, DEFAULT_LAST)
        proposable, why_not = True, ""
    except ProposalError as exc:
        proposable, why_not = False, str(exc)
    return BaselineState(
        path=str(path), sha256=sha256, created=created or None,
        improved=tuple(e for e in reversed(ordered) if e.verdict == Verdict.IMPROVED.value
                       and _judged_against(e, str(path), sha256, created)),
        moved=tuple(_moved(ordered, baseline)),
        candidate=next((p for p in proposals if sha256 and p.blessed_sha256 == sha256), None),
        proposable=proposable, why_not=why_not)


def _judged_against(entry: Entry, path: str, sha256: str | None, created: str | None) -> bool:
    """Whether a night was judged against this content of the baseline: its recorded digest,
    or, where it recorded none, its date after the blessing."""
    if entry.baseline.get("path") != path:
        return False
    recorded = entry.baseline.get("sha256")
    if recorded and sha256:
        return recorded == sha256
    night, blessed = utc_time(entry.date), utc_time(created or "")
    return night is not None and blessed is not None and night >= blessed


def _moved(ordered: list[Entry], baseline: Baseline | None) -> list[Change]:
    """What each of the recent green nights ran with that the baseline's runs did not (the same
    new value every night); nothing for a baseline that does not say what its runs ran with."""
    if baseline is None or baseline.provenance.get("source") != "bless":
        return []
    recent = [e for e in reversed(ordered) if e.green][:RECENT_GREENS]
    if not recent:
        return []
    blessed = baseline_entry(baseline)
    per_night = [{(c.kind, c.name, c.new): c for c in changes_since(blessed, night)
                  if c.kind in MOVED_KINDS and c.name not in NOT_MOVED} for night in recent]
    shared = set(per_night[0]).intersection(*per_night[1:])
    return [c for key, c in per_night[0].items() if key in shared]


__all__ = ["BaselineState", "Overview", "overview"]
