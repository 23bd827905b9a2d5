"""Reader for verl's file logger: one ``{"step": N, "data": {...}}`` object per line.

verl writes it with orjson (``trainer.logger=[...,'file']``): NaN becomes ``null``, some forks log
strings (``"resize/mode": "schedule"``) next to numbers, and a run that dies mid-write leaves a
truncated last line. ``null`` is kept as NaN, strings and other non-numbers are not metrics, and a
line that does not parse is skipped (its number is kept in ``bad_lines``), never fatal.
"""

from __future__ import annotations

import json
import math
from typing import Any, Iterable

from workbook.metrics.console import StepLine
from workbook.metrics.model import RunMetrics
from workbook.metrics.names import canonical

try:  # verl's own writer; about 3x faster than the standard library on these lines
    import orjson

    def _loads(raw: str | bytes) -> Any:
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:
            return json.loads(raw)  # the standard library also reads NaN/Infinity literals
except ImportError:  # pragma: no cover - orjson comes with verl
    _loads = json.loads

NAN = math.nan


def parse_record(raw: str | bytes, line: int) -> StepLine | None:
    """One JSONL line as a step row, or None if it is not a complete file-logger record."""
    try:
        record = _loads(raw)
    except ValueError:
        return None
    if not isinstance(record, dict):
        return None
    step, data = record.get("step"), record.get("data")
    if isinstance(step, bool) or not isinstance(step, (int, float)) or not isinstance(data, dict):
        return None
    values: dict[str, float] = {}
    originals: dict[str, str] = {}
    for key, value in data.items():
        if value is None:
            number = NAN
        elif isinstance(value, (int, float)):  # bool included: verl logs numbers.Number
            number = float(value)
        else:
            continue
        name, scale = canonical(key)
        values[name] = number * scale if scale != 1.0 else number
        if name != key:
            originals[name] = key
    return StepLine(int(step), values, originals, line)


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
    for line in lines:
        for row in parser.feed(line):
            run.put_many(row.step, row.values, f"{source}:{row.line}", row.originals)
    return run


def looks_like_jsonl(first_line: str | bytes) -> bool:
    """Sniff a file's first non-empty line: the file logger's records start ``{"step"``."""
    text = first_line.decode("utf-8", "replace") if isinstance(first_line, bytes) else first_line
    text = text.lstrip()
    return text.startswith("{") and '"step"' in text
