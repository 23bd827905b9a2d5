"""RunMetrics out as text: the file logger's JSONL, a wide CSV, a short human table."""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Iterator
from typing import IO

from workbook.metrics.model import RunMetrics

HEADLINE = (
    "actor/pg_loss",
    "actor/pg_clipfrac",
    "critic/score/mean",
    "timing_s/step",
    "timing_s/gen",
    "perf/throughput",
)


def jsonl_lines(run: RunMetrics) -> Iterator[str]:
    """One ``{"step": N, "data": {...}}`` per step in step order, NaN/inf as ``null``."""
    for record in run.records():
        yield json.dumps(record, allow_nan=False, separators=(",", ":"))


def write_csv(run: RunMetrics, handle: IO[str]) -> None:
    """A wide table: one row per step, one column per metric; missing is empty, NaN is ``nan``."""
    names = run.names()
    writer = csv.writer(handle, lineterminator="\n")
    writer.writerow(["step", *names])
    for step in run.step_numbers:
        data = run.steps[step]
        writer.writerow([step, *(_cell(data[n]) if n in data else "" for n in names)])


def summary_table(run: RunMetrics, title: str = "") -> str:
    """Steps, metric count and first/last value of the headline metrics, for a terminal."""
    steps = run.step_numbers
    span = f"{steps[0]}..{steps[-1]}" if steps else "none"
    lines = [title] if title else []
    lines.append(f"steps: {len(steps)} ({span})   metrics: {len(run.names())}")
    for kind, values in sorted(run.validation.items()):
        lines.append(f"{kind} validation: {len(values)} metrics")
    width = max(len(n) for n in HEADLINE)
    lines.append(f"{'metric':<{width}}  {'first':>12}  {'last':>12}")
    for name in HEADLINE:
        series = list(run.series(name).values())
        if series:
            lines.append(f"{name:<{width}}  {_short(series[0]):>12}  {_short(series[-1]):>12}")
        else:
            lines.append(f"{name:<{width}}  {'-':>12}  {'-':>12}")
    return "\n".join(lines)


def _cell(value: float) -> str:
    return repr(value) if math.isfinite(value) else str(value)


def _short(value: float) -> str:
    return f"{value:.6g}"
