"""One step row of verl's console output: ``step:N - key:value - ...`` as names and numbers.

verl prints one line per step (``LocalLogger``: ``"step:{N} - " + " - ".join(f"{k}:{v}")``).
``console`` takes off Ray's prefixes and ANSI colours and joins hard-wrapped rows; this module
finds the row in what is left of a line and reads it, whatever form its values take:

* values as ``0.123``, ``-0.000``, ``1e-06``, ``nan``, ``inf``, ``np.float64(0.1)``,
  ``np.int32(2)``;
* lines cut mid-value (the cut pair is dropped) and Ray's ``[repeated 3x across cluster]``
  suffix.

Everything else that merely looks like a step (``training/global_step:6 - `` inside a wrapped
row, ``ValueError: step 0 - ``, ``epoch 0, step 1``, wandb summaries) is not a step line: a step
line starts with ``step:`` right after the prefixes, a ``\\r`` or a tqdm bar's closing ``]``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from struct import error as StructError
from typing import Any

import orjson

from workbook.metrics.model import pack, packer
from workbook.metrics.names import canonical, plan_for


def loads_json(raw: str | bytes) -> Any:
    """orjson (verl's JSON library, about 3x the standard library here), then the standard
    library for what only it reads: ``NaN`` and ``Infinity`` literals."""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return json.loads(raw)


REPEATED_RE = re.compile(r"\s*\[repeated \d+x across cluster\]\s*$")
STEP_AT_RE = re.compile(r"step:(\d+)(?= - |\s*$)")
NUMPY_RE = re.compile(r"^np\.[a-z]+\d*_?\((.*)\)$")
NUMPY_ANYWHERE_RE = re.compile(r"np\.[a-z]+\d*_?\(([^()]*)\)")  # literal prefix: fast scan
SEP = " - "
_BOOLS = {"True": 1.0, "False": 0.0, "np.True_": 1.0, "np.False_": 0.0, "true": 1.0, "false": 0.0}


@dataclass(slots=True)
class StepLine:
    """The metrics one step row carried (distinct canonical names) and where the row started.

    The values stay packed (see ``model.pack``) until someone asks for :attr:`values`: the
    readers hand them to ``RunMetrics.put_row`` as they are.
    """

    step: int
    names: tuple[str, ...]
    packed: bytes
    originals: dict[str, str]
    line: int

    @property
    def values(self) -> dict[str, float]:
        return dict(zip(self.names, packer(len(self.names)).unpack(self.packed), strict=True))

    @classmethod
    def of(cls, step: int, values: dict[str, float], originals: dict[str, str], line: int) -> StepLine:
        return cls(step, tuple(values), pack(list(values.values())), originals, line)


def parse_value(raw: str) -> float | None:
    """A logged value as a float, or None when it is not a (complete) number."""
    if raw[:3] != "np.":  # float() of a numpy repr would fail, and exceptions are slow
        try:
            return float(raw)
        except ValueError:
            return _BOOLS.get(raw)
    match = NUMPY_RE.match(raw)
    if match:
        inner = match.group(1)
        if inner in _BOOLS:
            return _BOOLS[inner]
        try:
            return float(inner)
        except ValueError:
            return None
    return _BOOLS.get(raw)


def parse_pair(pair: str) -> tuple[str, float] | None:
    """``key:value`` -> (key, value); None for a fragment (cut line) or a non-number."""
    key, sep, raw = pair.rpartition(":")
    key = key.strip()
    if not sep or not key or " " in key or ":" in key:
        return None
    value = parse_value(raw.strip())
    return None if value is None else (key, value)


def parse_row(text: str, line: int) -> StepLine | None:
    """Parse a full (joined) row that starts with ``step:N``.

    A regular row (one colon per pair, every value a number) takes a fast path that stays in
    C; anything unusual (a cut pair, a key with a space, ``nan``, ``True``) is read pair by pair.
    """
    match = STEP_AT_RE.match(text)
    if match is None:
        return None
    return parse_matched_row(text, int(match.group(1)), match.end(), line)


def parse_matched_row(text: str, step: int, body: int, line: int) -> StepLine:
    """:func:`parse_row` once ``step:N`` was matched; the pairs start at ``text[body:]``.

    ``ConsoleParser`` calls it with the match it located the row by, rather than match twice.
    """
    # "(" is a cheap test (memchr); split() keeps the values without a match object for each
    row = "".join(NUMPY_ANYWHERE_RE.split(text)) if "(" in text else text
    row = row.rstrip()
    parsed = _parse_as_json(step, row, line)
    if parsed is None:
        parsed = _parse_by_colons(step, row, line)
    return parsed if parsed is not None else _parse_row_slowly(step, text[body:], line)


def _parse_as_json(step: int, row: str, line: int) -> StepLine | None:
    """Quote the keys and a regular row is a JSON object: one orjson call reads all its numbers.

    ``step:5 - a:0.1 - b:2`` becomes ``{"step":5,"a":0.1,"b":2}``. With no quote or backslash
    in the row, valid JSON means one colon per pair. orjson reuses the key strings it saw last
    (the same every step), so the row's :class:`KeyPlan` is found by identity. JSON has no
    ``nan``, ``1.`` or ``True``: such rows, and any with a non-number value, return None.
    """
    if "\\" in row or '"' in row:
        return None
    try:
        text = row.encode()  # bytes: their replace() is a third cheaper than str's
        data = orjson.loads(b'{"' + text.replace(b":", b'":').replace(b" - ", b',"') + b"}")
    except ValueError:  # not JSON, or a lone surrogate that has no UTF-8
        return None
    if data.pop("step", None) != step:  # "step:5 - step:6" is not a row JSON reads alike
        return None
    plan = plan_for(tuple(data))
    if not (plan.valid and plan.distinct):
        return None
    values: Any = data.values()
    try:
        if plan.scales:
            values = list(values)
            for position, scale in plan.scales:
                values[position] *= scale
        packed = packer(len(plan.names)).pack(*values)
    except (StructError, TypeError, OverflowError):  # a string, null, list, object or 1e400
        return None
    return StepLine(step, plan.names, packed, plan.originals, line)


def _parse_by_colons(step: int, row: str, line: int) -> StepLine | None:
    """Turn each `` - `` into a colon and split on colons: keys and values alternate."""
    pairs = row.count(SEP)
    if not pairs or row.count(":") != pairs + 1:  # "step:N" plus one colon per pair
        return None
    tokens = row.replace(SEP, ":").split(":")
    plan = plan_for(tuple(tokens[2::2]))
    if not (plan.valid and plan.distinct):
        return None
    try:
        numbers = list(map(float, tokens[3::2]))
    except ValueError:
        return None
    for position, scale in plan.scales:
        numbers[position] *= scale
    return StepLine(step, plan.names, packer(len(numbers)).pack(*numbers), plan.originals, line)


def _parse_row_slowly(step: int, body: str, line: int) -> StepLine:
    """Pair by pair, dropping fragments (cut lines) and values that are not numbers."""
    values: dict[str, float] = {}
    originals: dict[str, str] = {}
    for pair in body.split(SEP):
        if not pair:
            continue
        parsed = parse_pair(pair)
        if parsed is None:
            continue
        name, scale = canonical(parsed[0])
        values[name] = parsed[1] * scale if scale != 1.0 else parsed[1]
        if name != parsed[0]:
            originals[name] = parsed[0]
    return StepLine.of(step, values, originals, line)


def find_row(content: str) -> str | None:
    """The step row inside a line's content (after prefixes), or None if there is none.

    ``step:`` starts a row only at the start of the content, of a ``\\r`` segment, or right
    after a tqdm bar's ``]``; ``training/global_step:6`` or ``ValueError: step:0`` do not.
    """
    found = locate_row(content)
    return None if found is None else unrepeated(found[0][found[1].start() :])


def locate_row(content: str) -> tuple[str, re.Match[str]] | None:
    """The text that holds the row (the last ``\\r`` segment with one) and its ``step:N``."""
    if "\r" in content:
        rows = [seg for seg in content.split("\r") if "step:" in seg]
        content = rows[-1] if rows else ""
    pos = content.find("step:")
    while pos >= 0:
        before = content[:pos].rstrip(" \t") if pos else ""
        if not before or before[-1] == "]":
            match = STEP_AT_RE.match(content, pos)
            if match:
                return content, match
        pos = content.find("step:", pos + 5)
    return None


def unrepeated(row: str) -> str:
    """The row without trailing space and Ray's ``[repeated 3x across cluster]`` suffix."""
    row = row.rstrip()
    return REPEATED_RE.sub("", row).rstrip() if row[-8:] == "cluster]" else row
