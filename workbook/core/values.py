"""Numbers as every file is read and every page shows them, so a field reads and prints the same
way everywhere.

A number in run.json, a ledger line or a baseline is trusted only when it is a finite int or
float: a bool, text, NaN, infinity or an int too large for a float reads as None. A number is
shown in ``g`` form with a few significant digits, and a value that is not there as ``EMPTY``.
"""

from __future__ import annotations

import math

EMPTY = "-"
"""How a page or a terminal table shows a value that is not there."""


def finite(value: object) -> float | None:
    """``value`` as a finite float, else None (a bool, text, NaN, inf, a 400-digit int)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def number_text(value: float | None, digits: int = 4, *, absent: str = EMPTY,
                signed: bool = False) -> str:
    """``value`` with ``digits`` significant digits (``+`` first when ``signed``), None as
    ``absent``."""
    if value is None:
        return absent
    return f"{value:+.{digits}g}" if signed else f"{value:.{digits}g}"
