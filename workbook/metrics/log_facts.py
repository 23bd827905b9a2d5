"""What a verl log says about the run itself, read line by line: the steps it logged, whether
one of them trained, how many it was to train, and which replayed a rollout dump.

verl states its target three ways: ``Total training steps: N``, the ``Training Progress: k/N``
bar (what the trainer really ran to) and the echoed config; a replayed step is announced by
``[RolloutTqSkip()] Injected ... at current step k``. So a bare log is judged against its own
expectations. Whether a training step completed is decided here, once, by :func:`trained`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from workbook.metrics.console import clean, strip_prefix
from workbook.metrics.model import RunMetrics
from workbook.metrics.progress import PROGRESS_RE
from workbook.metrics.rows import find_row

_TOTAL_RE = re.compile(r"Total training steps: (\d+)")
_CONFIG_TOTAL_RE = re.compile(r"['\"]?total_training_steps['\"]?\s*[:=]\s*(\d+)")
_REPLAYED_RE = re.compile(r"RolloutTqSkip\(\)\].*Injected .* at current step (\d+)")
VALIDATION_PREFIXES = ("val-", "val/")  # verl's validation metrics: logged before any training


def trained(metrics: RunMetrics | None, training_row_seen: bool = False) -> bool:
    """Whether a training step completed: the one test of "evidence of training".

    Some step logged a metric that is not validation (verl logs its initial validation at
    step 0 before it trains; old verl also trains at step 0). Without metrics (a diagnosis
    from lines alone) the reading of the step lines decides.
    """
    if metrics is None:
        return training_row_seen
    return any(not is_validation(name) for name in metrics.names())


def is_validation(name: str) -> bool:
    return name.startswith(VALIDATION_PREFIXES)


def positive_int(value: object) -> int | None:
    """``value`` as a positive int, None for anything else (a missing or garbled field)."""
    if isinstance(value, bool):
        return None
    try:
        number = int(value)  # type: ignore[call-overload]
    except (TypeError, ValueError, OverflowError):
        return None
    return number if number > 0 else None


@dataclass
class LogFacts:
    """Streaming: :meth:`feed` each physical line."""

    max_step: int | None = None
    training_row_seen: bool = False  # a step line with a metric that is not validation
    progress_total: int | None = None  # N of verl's "Training Progress: k/N" bar
    stated_total: int | None = None  # "Total training steps: N" or the echoed config
    replayed: set[int] = field(default_factory=set)

    def feed(self, raw: str) -> bool:
        """Read one line; True when it is a metrics row (progress, never an error)."""
        if "raining" in raw or "RolloutTqSkip" in raw:
            self._read_statements(raw)
        if "step:" not in raw:
            return False
        row = find_row(strip_prefix(clean(raw)))
        if row is None:
            return False
        step = int(row[5 : row.find(" ")] if " " in row else row[5:])
        self.max_step = step if self.max_step is None else max(self.max_step, step)
        if not self.training_row_seen:  # "step:N - name:value - ...", names checked once
            self.training_row_seen = any(
                not is_validation(pair.strip()) for pair in row.split(" - ")[1:])
        return True

    def _read_statements(self, raw: str) -> None:
        if "Training Progress" in raw:
            totals = [int(m.group(2)) for m in PROGRESS_RE.finditer(raw)]
            if totals:
                self.progress_total = max(totals + [self.progress_total or 0])
        elif "otal training steps" in raw or "total_training_steps" in raw:
            match = _TOTAL_RE.search(raw) or _CONFIG_TOTAL_RE.search(raw)
            if match and int(match.group(1)) > 0:
                self.stated_total = int(match.group(1))
        elif "Injected" in raw:
            match = _REPLAYED_RE.search(raw)
            if match:
                self.replayed.add(int(match.group(1)))

    @property
    def expected_steps(self) -> int | None:
        """The bar's total (what the trainer really ran to), else the stated total."""
        return self.progress_total or self.stated_total
