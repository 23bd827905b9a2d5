"""A proposed baseline refresh: which nights it is blessed from, and what it would change.

A baseline goes stale as the code under test gets faster (an ``improved`` night) or as the
environment moves. ``workbook baseline propose`` blesses a candidate from the scenario's last
green nights in the ledger and sets it beside the blessed baseline for review; this module
chooses and compares (the record left for the index is :mod:`workbook.history.proposal_record`'s,
the page :mod:`workbook.report.proposal`'s). The source nights are the last N green ones with the scenario's current
settings on one hardware key, measured on machines bless accepts together (the one rule is
:func:`workbook.checks.conditions.unlike_runs`; a night passed over says why): a night with
other settings is another experiment and never feeds the candidate; its tuning and env may
differ, and the candidate's provenance says where they do. The candidate is always compared
with the blessed baseline (the anchor), never with an earlier candidate, so a chain of
refreshes cannot drift unreviewed. Each red night since the blessed baseline was made is
judged again against the candidate, in process, by the one judgement closing and ``workbook
check`` use (:mod:`workbook.history.judgement`: with the nights before it), writing nothing.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workbook.checks.baseline import Baseline
from workbook.checks.conditions import BUSIER, OTHER_CPU, SLOWER, STOLEN, Unlike, unlike_runs
from workbook.core.clock import utc_time
from workbook.core.status import Verdict as Word
from workbook.core.values import finite
from workbook.errors import BaselineError, WorkbookError
from workbook.history.changes import Change, changes_since
from workbook.history.judgement import judge_night
from workbook.history.ledger import GREEN, Entry
from workbook.params.settings import changed

MIN_SOURCES = 3  # bless's minimum: fewer runs have no spread worth the name
DEFAULT_LAST = 5
MAX_ANCHORS = 30  # the newest green nights a set of alike nights may start from


class ProposalError(BaselineError):
    """Too few nights to propose from (exit 2), with why the others were left out."""


@dataclass(frozen=True)
class PassedOver:
    """A green night with the scenario's settings left out because its machine was unlike the
    chosen nights' (``why``: "a busier machine"; ``text``: the rule bless would refuse with)."""

    entry: Entry
    why: str
    text: str


@dataclass(frozen=True)
class Selection:
    """The nights a candidate is blessed from, and how many of the others were left out why."""

    sources: tuple[Entry, ...]
    red: int = 0
    other_settings: int = 0
    other_hardware: int = 0
    other: int = 0  # with these settings, neither green nor red (stopped)
    passed_over: tuple[PassedOver, ...] = ()  # green, but measured on an unlike machine

    def machines(self) -> list[tuple[str, int]]:
        """How many nights were passed over for each kind of machine, most first."""
        counts = Counter(p.why for p in self.passed_over)
        return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))

    def left_out(self) -> str:
        parts = [f"{self.red} {'was' if self.red == 1 else 'were'} red" if self.red else "",
                 f"{self.other_settings} had other settings" if self.other_settings else "",
                 f"{self.other_hardware} ran on other hardware" if self.other_hardware else "",
                 *(f"{n} measured on {why}" for why, n in self.machines()),
                 f"{self.other} had another verdict" if self.other else ""]
        return "; ".join(p for p in parts if p) or "none"


def select_sources(ledger: Sequence[Entry], settings: Mapping[str, Any], last: int) -> Selection:
    """The last ``last`` green nights with ``settings``, on the hardware key of the newest of them,
    whose machines bless accepts together (:func:`workbook.checks.conditions.unlike_runs`).

    Among the alike sets the one reaching back least far wins (:func:`_measured_alike`): a busy
    newest night is passed over for the idle nights before it rather than padded with old ones.
    A night passed over is one newer than the oldest chosen (or any, when too few are chosen).

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
    chosen = _measured_alike(usable, last)
    red = sum(1 for e in alike if e.red)
    oldest = chosen[0].sort_key if len(chosen) >= MIN_SOURCES else None
    selection = Selection(
        sources=tuple(chosen), red=red, other_settings=len(ordered) - len(alike),
        other_hardware=len(greens) - len(usable),
        other=len(alike) - len(greens) - red,
        passed_over=tuple(_passed_over(
            [e for e in usable if e not in chosen and (oldest is None or e.sort_key > oldest)],
            chosen)))
    if len(selection.sources) < MIN_SOURCES:
        found = len(selection.sources)
        alike_words = " measured alike" if selection.passed_over else ""
        raise ProposalError(
            f"{found} green run{'' if found == 1 else 's'} with these settings{alike_words} (at "
            f"least {MIN_SOURCES} needed to propose a baseline); of the other nights in the "
            f"ledger: {selection.left_out()}")
    return selection


def _unlike(nights: Sequence[Entry]) -> Unlike | None:
    """Why bless would refuse these nights' machines together, else None."""
    return unlike_runs([e.conditions for e in nights], [e.run_id for e in nights])


def _measured_alike(usable: Sequence[Entry], last: int) -> list[Entry]:
    """Up to ``last`` of ``usable`` (oldest first) measured alike, oldest first: for each night
    from the newest, the newest nights that fit with it. Of the full sets the one reaching
    least far back wins (the last ``last`` alike nights, not a busy newest night padded with
    old ones), then the newer; without a full set, the largest. Only the newest
    :data:`MAX_ANCHORS` nights start a set: one starting further back is no recent baseline,
    and the index asks this of every scenario each time it is written."""
    newest_first = list(reversed(usable))
    best: list[Entry] = []
    for anchor in newest_first[:MAX_ANCHORS]:
        if len(best) >= last and anchor.sort_key <= best[-1].sort_key:
            break  # every set holding this night reaches back at least as far
        picked = [anchor]
        for night in newest_first:
            if len(picked) >= last:
                break
            if night is not anchor and _unlike([*picked, night]) is None:
                picked.append(night)
        picked.sort(key=lambda e: e.sort_key, reverse=True)
        if _better(picked, best, last):
            best = picked
    return sorted(best, key=lambda e: e.sort_key)


def _better(picked: list[Entry], best: list[Entry], last: int) -> bool:
    """Whether ``picked`` beats ``best`` (both newest first): full before short, then the one
    whose oldest night is newer, then the newer nights; a short one by its size."""
    if not best:
        return True
    full, was_full = len(picked) >= last, len(best) >= last
    if full != was_full:
        return full
    if not full:
        return len(picked) > len(best)
    return ((picked[-1].sort_key, [e.sort_key for e in picked])
            > (best[-1].sort_key, [e.sort_key for e in best]))


# What a night passed over was measured on, by the rule it broke and its end of it.
_MACHINES = {
    (OTHER_CPU, True): "another CPU", (OTHER_CPU, False): "another CPU",
    (STOLEN, True): "a host busy with other machines", (STOLEN, False): "a quieter host",
    (BUSIER, True): "a busier machine", (BUSIER, False): "an idler machine",
    (SLOWER, True): "a slower CPU", (SLOWER, False): "a faster CPU",
}


def _passed_over(nights: Sequence[Entry], chosen: Sequence[Entry]) -> list[PassedOver]:
    """Why each of ``nights`` did not fit with ``chosen`` (none when nothing was chosen)."""
    found = []
    for night in nights:
        unlike = _unlike([*chosen, night]) if chosen else None
        if unlike is not None:
            why = _MACHINES.get((unlike.kind, unlike.high == night.run_id), "an unlike machine")
            found.append(PassedOver(night, why, unlike.text))
    return found


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
            name, finite(before.value if before else None),
            finite(before.sigma if before else None),
            finite(after.value if after else None), finite(after.sigma if after else None)))
    return rows


def provenance_changes(old: Baseline, new: Baseline) -> list[Change]:
    """What differs between the runs each baseline was blessed from: packages, commits, image,
    host, hardware key and settings (read as :func:`changes_since` reads two nights)."""
    return changes_since(baseline_entry(old), baseline_entry(new))


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
    created = utc_time(str(blessed.provenance.get("created") or ""))
    return [e for e in ledger if e.verdict == Word.REGRESSED.value
            and (created is None or (utc_time(e.date) or created) >= created)]


def rejudge(nights: Sequence[Entry], runs_root: Path, candidate: Path,
            scenario: tuple[Mapping[str, Any], Path]) -> list[Rejudged]:
    """Each night judged as ``workbook check RUN --scenario S --baseline CANDIDATE`` would (with
    the nights before it, as its closing judged it; nothing is written); a night whose directory
    is gone or unreadable says so."""
    found = []
    for entry in nights:
        path = entry.run_dir(runs_root)
        try:
            verdict = judge_night(path, baseline=candidate, scenario=scenario)
        except BaselineError:
            raise
        except WorkbookError as exc:  # a night left half-written is reported, not fatal
            found.append(Rejudged(entry, "unjudged", f"cannot judge {path}: {exc}"))
            continue
        found.append(Rejudged(entry, verdict.status, verdict.reason))
    return found


def baseline_entry(baseline: Baseline) -> Entry:
    """A baseline's provenance in the shape of a ledger entry, for :func:`changes_since`; its
    tuning and env are None (not recorded) in a baseline blessed before they were."""
    info = baseline.provenance
    versions = {str(k): str(v) for k, v in (info.get("packages") or {}).items() if v}
    if info.get("cann_version"):
        versions["CANN"] = str(info["cann_version"])
    commits = {k: str(info[f"{k}_commit"]) for k in ("verl", "workbook") if info.get(f"{k}_commit")}
    return Entry(scenario=str(baseline.scenario or ""), hardware=str(baseline.hardware or ""),
                 run_id="", path="", date=str(info.get("created") or ""), verdict="",
                 versions=versions, commits=commits, image=info.get("image"),
                 host=str(info["host"]) if info.get("host") else None,
                 hardware_key=baseline.hardware_key, settings=dict(baseline.settings or {}),
                 tuning=_recorded(info.get("tuning")), env=_recorded(info.get("environment")))


def _recorded(value: Any) -> dict[str, Any] | None:
    return {str(k): v for k, v in value.items()} if isinstance(value, Mapping) else None


__all__ = ["DEFAULT_LAST", "MIN_SOURCES", "MetricChange", "PassedOver", "ProposalError",
           "Rejudged", "Selection", "baseline_entry", "metric_changes", "provenance_changes",
           "red_since", "rejudge", "select_sources"]
