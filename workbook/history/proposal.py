"""A proposed baseline refresh: which nights it is blessed from, and what it would change.

A baseline goes stale as the code under test gets faster (an ``improved`` night) or as the
environment moves. ``workbook baseline propose`` blesses a candidate from the scenario's last
green nights in the ledger and sets it beside the blessed baseline for review; this module
holds the pure parts. The source nights are the last N green ones with the scenario's current
settings on one hardware key: a night with other settings is another experiment and never
feeds the candidate. The candidate is always compared with the blessed baseline (the anchor),
never with an earlier candidate, so a chain of refreshes cannot drift unreviewed. Each red
night since the blessed baseline was made is judged again against the candidate, in process,
by the judging ``workbook check`` does.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from workbook.checks.baseline import Baseline
from workbook.checks.runner import check_path
from workbook.core.status import Verdict as Word
from workbook.errors import BaselineError, WorkbookError
from workbook.history.changes import Change, changes_since
from workbook.history.ledger import GREEN, Entry
from workbook.params.settings import changed

MIN_SOURCES = 3  # bless's minimum: fewer runs have no spread worth the name
DEFAULT_LAST = 5


class ProposalError(BaselineError):
    """Too few nights to propose from (exit 2), with why the others were left out."""


@dataclass(frozen=True)
class Selection:
    """The nights a candidate is blessed from, and how many of the others were left out why."""

    sources: tuple[Entry, ...]
    red: int = 0
    other_settings: int = 0
    other_hardware: int = 0
    other: int = 0  # with these settings, neither green nor red (stopped)

    def left_out(self) -> str:
        parts = [f"{self.red} {'was' if self.red == 1 else 'were'} red" if self.red else "",
                 f"{self.other_settings} had other settings" if self.other_settings else "",
                 f"{self.other_hardware} ran on other hardware" if self.other_hardware else "",
                 f"{self.other} had another verdict" if self.other else ""]
        return "; ".join(p for p in parts if p) or "no other nights"


def select_sources(ledger: Sequence[Entry], settings: Mapping[str, Any], last: int) -> Selection:
    """The last ``last`` green nights with ``settings``, on the hardware key of the newest of them.

    Raises:
        ProposalError: fewer than :data:`MIN_SOURCES` such nights (the message counts the rest).
    """
    if last < MIN_SOURCES:
        raise ProposalError(f"--last {last}: a baseline needs at least {MIN_SOURCES} runs")
    ordered = sorted(ledger, key=lambda e: e.sort_key)
    alike = [e for e in ordered if not changed(e.settings, settings)]
    greens = [e for e in alike if e.verdict in GREEN]
    key = greens[-1].hardware_key if greens else None
    usable = [e for e in greens if e.hardware_key == key]
    red = sum(1 for e in alike if e.red)
    selection = Selection(
        sources=tuple(usable[-last:]), red=red, other_settings=len(ordered) - len(alike),
        other_hardware=len(greens) - len(usable),
        other=len(alike) - len(greens) - red)
    if len(selection.sources) < MIN_SOURCES:
        found = len(selection.sources)
        raise ProposalError(
            f"{found} green run{'' if found == 1 else 's'} with these settings (at least "
            f"{MIN_SOURCES} needed to propose a baseline); of the other nights in the ledger: "
            f"{selection.left_out()}")
    return selection


@dataclass(frozen=True)
class MetricChange:
    """One metric of the baseline, blessed and proposed (None: absent on that side)."""

    metric: str
    old: float | None
    old_sigma: float | None
    new: float | None
    new_sigma: float | None

    @property
    def delta(self) -> float | None:
        return None if self.old is None or self.new is None else self.new - self.old

    @property
    def delta_sigmas(self) -> float | None:
        """The move in the blessed runs' own spread; None when it had none (sigma 0)."""
        delta = self.delta
        if delta is None or not self.old_sigma:
            return None
        return delta / self.old_sigma

    @property
    def symmetric_kl(self) -> float | None:
        """KL(old || new) + KL(new || old) of N(value, sigma^2), closed form (the logs of the
        sigmas cancel); None when either sigma is 0 or unknown (a point has no density)."""
        delta = self.delta
        if delta is None or not self.old_sigma or not self.new_sigma:
            return None
        a, b = self.old_sigma ** 2, self.new_sigma ** 2
        return (a + delta ** 2) / (2 * b) + (b + delta ** 2) / (2 * a) - 1.0


def metric_changes(old: Baseline, new: Baseline) -> list[MetricChange]:
    """Every metric either baseline holds, by name."""
    rows = []
    for name in sorted(set(old.metrics) | set(new.metrics)):
        before, after = old.metrics.get(name), new.metrics.get(name)
        rows.append(MetricChange(
            name, _finite(before.value if before else None),
            _finite(before.sigma if before else None),
            _finite(after.value if after else None), _finite(after.sigma if after else None)))
    return rows


def provenance_changes(old: Baseline, new: Baseline) -> list[Change]:
    """What differs between the runs each baseline was blessed from: packages, commits, image,
    host, hardware key and settings (read as :func:`changes_since` reads two nights)."""
    return changes_since(_as_entry(old), _as_entry(new))


@dataclass(frozen=True)
class Rejudged:
    """A red night judged again against the candidate."""

    entry: Entry
    status: str  # the verdict against the candidate
    reason: str

    @property
    def turned_green(self) -> bool:
        return self.status in GREEN


def red_since(ledger: Sequence[Entry], blessed: Baseline) -> list[Entry]:
    """The regressed nights since the blessed baseline was made (all of them, when it does not
    say when)."""
    created = _when(str(blessed.provenance.get("created") or ""))
    return [e for e in ledger if e.verdict == Word.REGRESSED.value
            and (created is None or (_when(e.date) or created) >= created)]


def rejudge(nights: Sequence[Entry], runs_root: Path, candidate: Path,
            scenario: tuple[Mapping[str, Any], Path]) -> list[Rejudged]:
    """Each night judged as ``workbook check RUN --scenario S --baseline CANDIDATE`` would (its
    checks.json is not touched); a night whose directory is gone or unreadable says so."""
    found = []
    for entry in nights:
        path = Path(entry.path)
        path = path if path.is_absolute() else Path(runs_root) / path
        try:
            verdict, _ = check_path(path, baseline=candidate, scenario=scenario)
        except BaselineError:
            raise
        except WorkbookError as exc:  # a night left half-written is reported, not fatal
            found.append(Rejudged(entry, "unjudged", f"cannot judge {path}: {exc}"))
            continue
        found.append(Rejudged(entry, verdict.status, verdict.reason))
    return found


def _as_entry(baseline: Baseline) -> Entry:
    """A baseline's provenance in the shape of a ledger entry, for :func:`changes_since`."""
    info = baseline.provenance
    versions = {str(k): str(v) for k, v in (info.get("packages") or {}).items() if v}
    if info.get("cann_version"):
        versions["CANN"] = str(info["cann_version"])
    commits = {k: str(info[f"{k}_commit"]) for k in ("verl", "workbook") if info.get(f"{k}_commit")}
    return Entry(scenario=str(baseline.scenario or ""), hardware=str(baseline.hardware or ""),
                 run_id="", path="", date=str(info.get("created") or ""), verdict="",
                 versions=versions, commits=commits, image=info.get("image"),
                 host=str(info["host"]) if info.get("host") else None,
                 hardware_key=baseline.hardware_key, settings=dict(baseline.settings or {}))


def _when(date: str) -> datetime | None:
    """An ISO date as an aware UTC time (None when absent or unreadable)."""
    try:
        parsed = datetime.fromisoformat(date.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


__all__ = ["DEFAULT_LAST", "MIN_SOURCES", "MetricChange", "ProposalError", "Rejudged",
           "Selection", "metric_changes", "provenance_changes", "red_since", "rejudge",
           "select_sources"]
