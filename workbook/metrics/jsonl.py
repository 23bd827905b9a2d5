"""Reader for verl's file logger: one ``{"step": N, "data": {...}}`` object per line.

verl writes it with orjson (``trainer.logger=[...,'file']``): NaN becomes ``null``, some forks log
strings (``"resize/mode": "schedule"``) next to numbers, and a run that dies mid-write leaves a
truncated last line. ``null`` is kept as NaN, strings and other non-numbers are not metrics, and a
line that does not parse is skipped (its number is kept in ``bad_lines``), never fatal.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from operator import itemgetter
from typing import Any, NamedTuple

from workbook.metrics.lines import gc_paused
from workbook.metrics.model import RunMetrics, pack, packer
from workbook.metrics.names import plan_for
from workbook.metrics.rows import StepLine, loads_json

NAN = math.nan
_NUMBERS = {float, int, bool}  # bool too: verl logs any numbers.Number


def parse_record(raw: str | bytes, line: int) -> StepLine | None:
    """One JSONL line as a step row, or None if it is not a complete file-logger record."""
    try:
        record = loads_json(raw)
    except ValueError:
        return None
    if not isinstance(record, dict):
        return None
    step, data = record.get("step"), record.get("data")
    if isinstance(step, bool) or not isinstance(step, (int, float)) or not isinstance(data, dict):
        return None
    values = list(data.values())
    kinds = tuple(map(type, values))
    plan = _record_plan(tuple(data), kinds)
    numbers = list(plan.take(values)) if plan.take else []
    for position, scale in plan.scales:
        numbers[position] *= scale
    numbers += plan.nans
    if plan.distinct:
        return StepLine(int(step), plan.names, packer(len(numbers)).pack(*numbers), plan.originals, line)
    merged = dict(zip(plan.names, numbers, strict=True))  # two logged names, one canonical: the later wins
    return StepLine(int(step), tuple(merged), pack(list(merged.values())), plan.originals, line)


class _RecordPlan(NamedTuple):
    """Which values of a record (by position) are numbers and which are null, and their names."""

    take: Callable[[list[Any]], Iterable[Any]] | None
    names: tuple[str, ...]  # canonical names of the numbers, then of the nulls
    scales: tuple[tuple[int, float], ...]
    nans: list[float]  # a NaN per null
    originals: dict[str, str]
    distinct: bool


_record_plans: dict[tuple[tuple[str, ...], tuple[type, ...]], _RecordPlan] = {}


def _record_plan(keys: tuple[str, ...], kinds: tuple[type, ...]) -> _RecordPlan:
    """Cached per key set and value types: a run logs the same shape every step, so the
    selection of numbers runs in C (``itemgetter``) instead of a Python loop per value."""
    plan = _record_plans.get((keys, kinds))
    if plan is not None:
        return plan
    numeric = [i for i, kind in enumerate(kinds) if kind in _NUMBERS]
    nulls = [i for i, kind in enumerate(kinds) if kind is type(None)]
    take: Callable[[list[Any]], Iterable[Any]] | None = None
    if len(numeric) == 1:
        only = numeric[0]
        take = lambda values: (values[only],)  # noqa: E731 - itemgetter of one index is not a tuple
    elif numeric:
        take = itemgetter(*numeric)
    numbers, nans = (
        plan_for(tuple(keys[i] for i in numeric)),
        plan_for(tuple(keys[i] for i in nulls)),
    )
    names = numbers.names + nans.names
    plan = _RecordPlan(
        take, names, numbers.scales, [NAN] * len(nulls),
        {**numbers.originals, **nans.originals}, len(set(names)) == len(names),
    )
    if len(_record_plans) >= 4096:
        _record_plans.clear()
    _record_plans[(keys, kinds)] = plan
    return plan


class JsonlParser:
    """Streaming JSONL reader with the same ``feed``/``finish`` shape as the console parser."""

    def __init__(self) -> None:
        self.lineno = 0
        self.bad_lines: list[int] = []

    def feed(self, raw: str | bytes) -> list[StepLine]:
        self.lineno += 1
        raw = raw.strip()
        if not raw:
            return []
        row = parse_record(raw, self.lineno)
        if row is None:
            self.bad_lines.append(self.lineno)
            return []
        return [row]

    def finish(self) -> list[StepLine]:
        return []


def read_jsonl(lines: Iterable[str | bytes], source: str = "metrics.jsonl") -> RunMetrics:
    """A file-logger JSONL stream as :class:`RunMetrics` (later lines win for the same step)."""
    run = RunMetrics()
    parser = JsonlParser()
    with gc_paused():
        for line in lines:
            for row in parser.feed(line):
                run.put_row(row.step, row.names, row.packed, f"{source}:{row.line}", row.originals)
    return run


def looks_like_jsonl(first_line: str | bytes) -> bool:
    """Sniff a file's first non-empty line: the file logger's records start ``{"step"``."""
    text = first_line.decode("utf-8", "replace") if isinstance(first_line, bytes) else first_line
    text = text.lstrip()
    return text.startswith("{") and '"step"' in text
