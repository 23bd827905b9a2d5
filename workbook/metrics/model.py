"""One metrics model for a run: per step, metric name -> number, and where each came from.

NaN stays NaN (verl writes it as JSON ``null``); a metric a step did not log is simply absent.
Names are canonical (see ``names.py``); the name as logged is kept in ``original_names``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Iterable, Iterator


@dataclass
class RunMetrics:
    """Metrics of one run, keyed by step then canonical metric name."""

    steps: dict[int, dict[str, float]] = field(default_factory=dict)
    # step -> metric -> where the value came from, e.g. "metrics.jsonl:3" or "run.log:120"
    sources: dict[int, dict[str, str]] = field(default_factory=dict)
    # canonical name -> name as it appeared in the log, when they differ
    original_names: dict[str, str] = field(default_factory=dict)
    # validation dicts verl pprints outside step lines: "initial" / "final" -> metric -> value
    validation: dict[str, dict[str, float]] = field(default_factory=dict)

    def put(self, step: int, name: str, value: float, source: str, original: str | None = None) -> None:
        """Record one value; a later put for the same step and name replaces the earlier."""
        self.steps.setdefault(step, {})[name] = value
        self.sources.setdefault(step, {})[name] = source
        if original is not None and original != name:
            self.original_names[name] = original

    def put_many(
        self, step: int, data: dict[str, float], source: str,
        originals: dict[str, str] | None = None, *, changes: bool = False,
    ) -> dict[str, float]:
        """Record one logged line's values at once (the readers' fast path).

        With ``changes=True`` returns the values that are new or changed, so a live reader
        yields a duplicated line (Ray job logs can repeat the trainer's lines) only once.
        """
        mine = self.steps.setdefault(step, {})
        changed = {k: v for k, v in data.items() if not _same(mine.get(k), v)} if changes else {}
        mine.update(data)
        self.sources.setdefault(step, {}).update(dict.fromkeys(data, source))
        if originals:
            self.original_names.update(originals)
        return changed

    def fill_from(self, other: "RunMetrics") -> None:
        """Add what ``other`` has and this lacks (this one wins where both have a value)."""
        for step, data in other.steps.items():
            mine = self.steps.setdefault(step, {})
            for name, value in data.items():
                if name not in mine:
                    self.put(step, name, value, other.sources.get(step, {}).get(name, ""),
                             other.original_names.get(name))
        for kind, values in other.validation.items():
            mine_val = self.validation.setdefault(kind, {})
            for name, value in values.items():
                mine_val.setdefault(name, value)

    def names(self) -> list[str]:
        """Every metric name logged at any step, sorted."""
        return sorted({n for data in self.steps.values() for n in data})

    def series(self, name: str) -> dict[int, float]:
        """``{step: value}`` in step order for one metric (steps without it are left out)."""
        return {s: d[name] for s, d in sorted(self.steps.items()) if name in d}

    def has(self, name: str) -> bool:
        return any(name in d for d in self.steps.values())

    @property
    def step_numbers(self) -> list[int]:
        return sorted(self.steps)

    @property
    def last_step(self) -> int | None:
        return max(self.steps) if self.steps else None

    def __len__(self) -> int:
        return len(self.steps)

    def records(self) -> Iterator[dict[str, object]]:
        """File-logger shaped records in step order, NaN and infinities as ``None``."""
        for step in sorted(self.steps):
            data = {k: (None if not math.isfinite(v) else v) for k, v in sorted(self.steps[step].items())}
            yield {"step": step, "data": data}

    @classmethod
    def from_records(cls, records: Iterable[dict[str, object]], source: str = "") -> "RunMetrics":
        """Inverse of :meth:`records` (``None`` becomes NaN)."""
        run = cls()
        for rec in records:
            step = int(rec["step"])  # type: ignore[arg-type]
            for name, value in dict(rec["data"]).items():  # type: ignore[arg-type]
                run.put(step, name, float("nan") if value is None else float(value), source)
        return run


def _same(old: float | None, new: float) -> bool:
    """Equal, counting NaN as equal to NaN (a repeated line is not news)."""
    if old is None:
        return False
    return old == new or (math.isnan(old) and math.isnan(new))
