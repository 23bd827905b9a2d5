"""One row of a verdict: a check, its value, what was expected, and whether it held."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

STATUSES = ("pass", "fail", "error")
# what produced a row; "run" rows (status, required step) decide a *failed* verdict
KINDS = ("run", "baseline", "finite", "bounds", "expression")


@dataclass
class CheckRow:
    """A check's outcome, plus what a plot of a regression needs (baseline value and band)."""

    name: str
    kind: str
    status: str
    value: float | None = None
    expected: str = ""
    message: str = ""
    metric: str | None = None
    baseline: float | None = None  # the reference value compared with
    lower: float | None = None     # allowed range of `value` (None: open)
    upper: float | None = None
    reduce: str | None = None
    window: tuple[int, int] | None = None
    steps: list[int] = field(default_factory=list)  # steps the value was computed from
    source: str | None = None      # the expression text, for expression rows
    baseline_series: dict[int, float] = field(default_factory=dict)  # per step, to draw the curve

    @property
    def passed(self) -> bool:
        return self.status == "pass"

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        for key in ("value", "baseline", "lower", "upper"):
            if data[key] is not None and not math.isfinite(data[key]):
                data[key] = str(data[key])  # JSON has no NaN/inf; keep them visible as text
        data["window"] = list(self.window) if self.window else None
        data["baseline_series"] = {str(s): (v if math.isfinite(v) else None)
                                   for s, v in sorted(self.baseline_series.items())}
        return data


def error_row(name: str, kind: str, message: str, **extra: Any) -> CheckRow:
    return CheckRow(name=name, kind=kind, status="error", message=message, **extra)
