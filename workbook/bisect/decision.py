"""The arithmetic of a bisect: which verdict is bad, which commit to test next, when to stop.

Pure functions over the candidates (``good..bad`` along the first-parent line, oldest first, the
bad night's commit last) and the outcome of each commit tested so far, so a test can predict
every step. The rules, those of ``git bisect`` with its ``skip``:

* **outcome of a run** (:func:`classify`): the verdict the bad night had is ``bad``; ``passed``,
  ``improved`` and ``suspect`` are ``good``; any other verdict is ``skip`` (a run that failed
  when the bad night regressed cannot say whether the regression is there). When the bad night
  *failed*, a failed run is ``bad`` only when it failed the same way (its diagnosis category, if
  the bad night's is known); a failure on the infrastructure, a run the workbook could not start
  or finish (no diagnosis), or one that failed otherwise is ``skip``: a commit where verl did not
  import, say, is no evidence of the failure being hunted. A ``stopped`` run is no outcome at all.
* **the remaining range**: after the newest good candidate before the earliest bad one (the
  commit before the first candidate is GOOD, good by definition; the last candidate is BAD, bad
  by definition), up to that bad one.
* **next commit** (:func:`decide`): of the untested candidates inside that range, the one
  nearest to its middle, the later on a tie; a skipped candidate is never tested again.
* **done**: nothing untested is left inside the range. With nothing inside it, the earliest bad
  candidate is the first bad commit; with only skipped candidates inside, the first bad commit
  is one of them or that bad one, and no more can be said.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from workbook.core.status import StatusWord, Verdict
from workbook.metrics.failures import INFRASTRUCTURE

GREEN_VERDICTS = (Verdict.PASSED.value, Verdict.IMPROVED.value, Verdict.SUSPECT.value)


class CommitOutcome(StatusWord):
    """What one tested commit says: the regression is there, is not, or cannot be told."""

    GOOD = "good"
    BAD = "bad"
    SKIP = "skip"


@dataclass(frozen=True)
class BadVerdict:
    """The verdict that counts as bad: the bad night's (``regressed`` or ``failed``) and, for a
    failed night, its diagnosis category when known."""

    status: str
    category: str | None = None

    def describe(self) -> str:
        return self.status + (f" ({self.category})" if self.category else "")


def classify(verdict: str, category: str | None,
             bad: BadVerdict) -> tuple[CommitOutcome | None, str]:
    """The outcome of a run judged ``verdict`` (its diagnosis ``category``, if any) and why;
    ``None`` for a stopped run (not an outcome: its commit is tested again)."""
    if verdict == Verdict.STOPPED.value:
        return None, "stopped before its verdict: the commit is tested again"
    if verdict in GREEN_VERDICTS:
        return CommitOutcome.GOOD, f"green: the bad night's {bad.status} verdict is not there"
    if category == INFRASTRUCTURE:
        return CommitOutcome.SKIP, "failed on the infrastructure, not the code"
    if verdict != bad.status:
        return CommitOutcome.SKIP, (f"{verdict or 'no verdict'} where the bad night {bad.status}: "
                              "says nothing of its regression")
    if verdict == Verdict.REGRESSED.value:
        return CommitOutcome.BAD, "regressed, as the bad night did"
    if not category:
        return CommitOutcome.SKIP, "failed without a diagnosis (the workbook could not run it)"
    if bad.category and category != bad.category:
        return CommitOutcome.SKIP, (f"failed otherwise ({category}) than the bad night "
                                    f"({bad.category})")
    return CommitOutcome.BAD, f"failed ({category}), as the bad night did"


@dataclass(frozen=True)
class Decision:
    """Where a bisect stands: the commit to test next, or how it ended."""

    next: str | None = None  # the candidate to test now
    first_bad: str | None = None  # found: the first bad commit
    one_of: tuple[str, ...] = ()  # only skipped candidates left: the first bad is one of these

    @property
    def done(self) -> bool:
        return self.next is None


def remaining(candidates: Sequence[str], outcomes: Mapping[str, CommitOutcome]) -> tuple[int, int]:
    """``(lo, hi)``: the index of the newest good candidate before the earliest bad one (-1:
    GOOD itself) and of that bad one (the last candidate, BAD, when none tested bad)."""
    if not candidates:
        raise ValueError("a bisect needs at least one candidate (the bad commit)")
    last = len(candidates) - 1
    hi = next((i for i, sha in enumerate(candidates[:last])
               if outcomes.get(sha) == CommitOutcome.BAD), last)
    lo = max((i for i, sha in enumerate(candidates[:hi])
              if outcomes.get(sha) == CommitOutcome.GOOD), default=-1)
    return lo, hi


def decide(candidates: Sequence[str], outcomes: Mapping[str, CommitOutcome]) -> Decision:
    """The next candidate to test, or the result (see the module docstring)."""
    lo, hi = remaining(candidates, outcomes)
    inside = range(lo + 1, hi)
    untested = [i for i in inside if candidates[i] not in outcomes]
    if untested:  # nearest to the middle (lo + hi) / 2, the later one on a tie
        chosen = min(untested, key=lambda i: (abs(2 * i - (lo + hi)), -i))
        return Decision(next=candidates[chosen])
    if not inside:
        return Decision(first_bad=candidates[hi])
    return Decision(one_of=tuple(candidates[i] for i in inside) + (candidates[hi],))


def states(candidates: Sequence[str], outcomes: Mapping[str, CommitOutcome]) -> list[str]:
    """Each candidate's state for a page: its outcome, or ``untested`` inside the remaining
    range, or ``not needed`` outside it; the last candidate without a step is ``bad`` (the night)."""
    lo, hi = remaining(candidates, outcomes)
    shown = []
    for i, sha in enumerate(candidates):
        if sha in outcomes:
            shown.append(str(outcomes[sha]))
        elif i == len(candidates) - 1:
            shown.append(CommitOutcome.BAD.value)
        else:
            shown.append("untested" if lo < i < hi else "not needed")
    return shown


__all__ = ["GREEN_VERDICTS", "BadVerdict", "CommitOutcome", "Decision", "classify",
           "decide", "remaining", "states"]
