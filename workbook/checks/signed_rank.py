"""Whether one run sits systematically above or below another, step for step: the one module that
imports scipy (``scipy.stats.wilcoxon``).

Two runs on the same rollouts pair up by step, so the question "is B shifted from A?" is a paired
one, and the Wilcoxon signed-rank test on the differences ``b_t - a_t`` asks it without assuming
the differences are normal (a loss curve's are not). It answers whether a shift is *consistent*,
not whether it is *large*: over a long run a harmless 0.1 % offset from another kernel is
significant, and consecutive steps of one training are not independent draws. So it informs the
alignment page and never decides its verdict (the mean error against a threshold does that).
"""

from __future__ import annotations

import math
import statistics
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

from scipy.stats import wilcoxon

LEVEL = 0.05  # the p below which the page calls a shift consistent
# The smallest two-sided p of the exact test on n non-zero differences is 2 / 2**n: 0.0625 at
# n = 5, 0.031 at n = 6. Below this many, no data can reach LEVEL.
MIN_STEPS = 6


@dataclass(frozen=True)
class PairedTest:
    """The signed-rank test on B - A: ``p`` (None when not computed), how many steps were paired,
    how many of them B was above and below A, and a sentence saying what that means."""

    p: float | None
    steps: int
    above: int
    below: int
    note: str

    @property
    def shifted(self) -> bool:
        return self.p is not None and self.p < LEVEL

    def to_dict(self) -> dict[str, object]:
        return {"p": self.p, "steps": self.steps, "above": self.above, "below": self.below,
                "shifted": self.shifted, "note": self.note}


def paired_shift(differences: Sequence[float]) -> PairedTest:
    """The two-sided signed-rank test on ``differences`` (B - A per step; non-finite ones left
    out). Steps where the runs agree exactly carry no sign and are dropped, as Wilcoxon did."""
    finite = [d for d in differences if math.isfinite(d)]
    signed = [d for d in finite if d != 0]
    above, below = sum(d > 0 for d in signed), sum(d < 0 for d in signed)
    if not signed:
        note = ("B equals A at every step" if finite else "no step where both runs logged a "
                "finite value")
        return PairedTest(1.0 if finite else None, len(finite), 0, 0, note)
    with warnings.catch_warnings():  # ties make scipy fall back to the normal approximation
        warnings.simplefilter("ignore", RuntimeWarning)
        p = float(wilcoxon(signed, alternative="two-sided").pvalue)
    if len(signed) < MIN_STEPS:
        note = (f"{len(signed)} steps differ: with fewer than {MIN_STEPS} the test cannot reach "
                f"p < {LEVEL}, whatever the shift")
    elif p < LEVEL:
        side = "above" if statistics.median(signed) > 0 else "below"
        note = f"B is consistently {side} A (p = {p:.2g} < {LEVEL})"
    else:
        note = f"no consistent shift (p = {p:.2g})"
    return PairedTest(p, len(finite), above, below, note)
