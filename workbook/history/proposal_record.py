"""``proposal.json``: what ``workbook baseline propose`` leaves beside its candidate for the index.

The index says a stale baseline has a candidate ready for review only while the blessed file
still has the content the candidate was proposed against; the record names that content by its
SHA-256 (and the nights the candidate came from, and those passed over), so a proposal made
against an earlier content, or one already copied over the baseline, is never offered again.
The record is read forgivingly: a folder without a readable one is no proposal.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from workbook.core.clock import utc_time
from workbook.core.layout import PROPOSAL_FILE, PROPOSAL_PAGE, proposals_of, read_json_object
from workbook.history.proposal import Selection

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)  # a record without a date sorts oldest


@dataclass(frozen=True)
class Recorded:
    """A proposal as ``propose`` left it: its folder, when it was made, the blessed baseline's
    content it was made against (its SHA-256) and its review page (None: not there)."""

    folder: Path
    created: str
    blessed_sha256: str | None
    review: Path | None


def proposal_record(*, scenario: str, hardware: str, created: str, blessed: Path,
                    blessed_sha256: str | None, candidate: Path,
                    selection: Selection) -> dict[str, Any]:
    """What ``propose`` writes beside the candidate (:data:`~workbook.core.layout.PROPOSAL_FILE`)
    for the index: a candidate is ready while the blessed baseline still has this content."""
    return {"scenario": scenario, "hardware": hardware, "created": created,
            "blessed": {"path": str(blessed), "sha256": blessed_sha256},
            "candidate": candidate.name, "review": PROPOSAL_PAGE,
            "sources": [e.run_id for e in selection.sources],
            "passed_over": [{"run_id": p.entry.run_id, "why": p.why} for p in selection.passed_over]}


def recorded_proposals(runs_root: Path, scenario: str, hardware: str) -> list[Recorded]:
    """The proposals of a scenario on one hardware in the runs root, newest first (a folder
    without a readable record is not one)."""
    found = []
    folder = proposals_of(runs_root, scenario, hardware)
    try:
        folders = [p for p in folder.iterdir() if p.is_dir() and not p.is_symlink()]
    except OSError:
        return []
    for path in folders:
        data = read_json_object(path / PROPOSAL_FILE)
        blessed = data.get("blessed")
        if not data or not isinstance(blessed, Mapping):
            continue
        review = path / str(data.get("review") or PROPOSAL_PAGE)
        sha = blessed.get("sha256")
        found.append(Recorded(path, str(data.get("created") or ""),
                              str(sha) if sha else None, review if review.is_file() else None))
    return sorted(found, key=lambda r: (utc_time(r.created) or _EPOCH, r.folder.name), reverse=True)


__all__ = ["Recorded", "proposal_record", "recorded_proposals"]
