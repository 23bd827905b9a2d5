"""Noisy metrics confirmed across nights: a failed comparison is ``suspect`` until it repeats.

A metric whose policy says ``confirm_nights: N`` (N > 1) regresses a run only when its
baseline comparison failed tonight and on each of the N-1 nights of the scenario, on its
hardware, before it; with fewer, tonight's row is ``suspect`` (exit 0, amber), so one noisy
night on a shared machine does not page anyone, and a second one beyond the band does.

The checks know nothing of the ledger (it lives above them): the caller passes the previous
nights as plain data, ``{metric: [status of its baseline row, newest night first]}``, ``None``
for a night that had no such row. A previous night counts as failed when its row was ``fail``
or ``suspect`` (both are a comparison that did not hold).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from workbook.checks.rows import FAIL, SUSPECT, CheckRow
from workbook.checks.spec import CheckSpec

FAILED_BEFORE = (FAIL, SUSPECT)  # a previous night's row whose comparison did not hold
Previous = Mapping[str, Sequence[str | None]]


def decide(confirm_nights: int, previous: Sequence[str | None]) -> str:
    """``fail`` when the N-1 newest previous nights (``previous``, newest first) all failed
    the comparison too, else ``suspect``; ``confirm_nights`` 1 is always ``fail``."""
    needed = confirm_nights - 1
    if needed <= 0:
        return FAIL
    recent = list(previous[:needed])
    if len(recent) == needed and all(status in FAILED_BEFORE for status in recent):
        return FAIL
    return SUSPECT


def asks_confirmation(spec: CheckSpec) -> bool:
    """Whether any policy waits for more than one night (so the caller reads the history)."""
    return any(p.confirm_nights > 1 for p in spec.policies())


def confirm(rows: list[CheckRow], spec: CheckSpec, previous: Previous) -> list[CheckRow]:
    """The rows with each failed baseline comparison of a policy that asks for confirmation
    made ``suspect`` when the previous nights do not confirm it (other rows as they are)."""
    out = []
    for row in rows:
        policy = spec.policy(row.metric) if row.metric and row.kind == "baseline" else None
        if row.status == FAIL and policy is not None and policy.confirm_nights > 1:
            before = previous.get(row.metric or "", ())
            if decide(policy.confirm_nights, before) == SUSPECT:
                row = replace(row, status=SUSPECT, message=(
                    f"{row.message}; suspect: beyond its band {_in_a_row(before) + 1} of the "
                    f"{policy.confirm_nights} nights in a row that make it a failure"))
        out.append(row)
    return out


def _in_a_row(previous: Sequence[str | None]) -> int:
    """How many of the newest previous nights failed the comparison, one after another."""
    count = 0
    for status in previous:
        if status not in FAILED_BEFORE:
            break
        count += 1
    return count
