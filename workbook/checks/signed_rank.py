"""Whether one run sits above or below another, step for step: the signs of ``b_t - a_t``.

Two runs on the same rollouts pair up by step. Counting the steps where B is above A and where it
is below shows a one-sided shift (every step on one side) that a mean error hides. It informs the
alignment page and never decides its verdict (the mean error against a threshold does that).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class PairedTest:
    """How many steps were paired, at how many of them B was above and below A, and a sentence
    saying what that means."""

    steps: int
    above: int
    below: int
    note: str

    def to_dict(self) -> dict[str, object]:
        return {"steps": self.steps, "above": self.above, "below": self.below, "note": self.note}


def paired_shift(differences: Sequence[float]) -> PairedTest:
    """The signs of ``differences`` (B - A per step; non-finite ones left out). Steps where the
    runs agree exactly carry no sign."""
    finite = [d for d in differences if math.isfinite(d)]
    above, below = sum(d > 0 for d in finite), sum(d < 0 for d in finite)
    if not above and not below:
        note = ("B equals A at every step" if finite else "no step where both runs logged a "
                "finite value")
    elif not below or not above:
        note = f"B is consistently {'above' if above else 'below'} A where they differ"
    else:
        note = f"B is above A at {above} steps and below at {below}"
    return PairedTest(len(finite), above, below, note)
