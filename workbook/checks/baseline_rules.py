"""What a baseline must be to be used at all: refused with its line or field, never half-read.

A baseline decides what every later run is judged against, so a file that cannot be right is
refused rather than guessed at: an unresolved merge (git's conflict markers, where the last side
would silently win), a text line that is not ``key:value`` (dropping it drops a check), a NaN or
an infinity (``FAIL <= nan``), time, throughput or memory below zero, a fraction outside [0, 1],
a key the format does not have (a misspelt ``sigma`` would widen nothing and say nothing), a
file naming the workbook's format without saying where its numbers came from (its provenance).

The same rules run when a baseline is read, imported and written, so ``bless`` and ``baseline
import`` never write a file that loading it would refuse. Every problem is listed at once; a
message quotes at most a short prefix of a value, and a document is walked within a fixed budget
of values (a YAML alias bomb is refused, not expanded).
"""

from __future__ import annotations

import difflib
import itertools
import math
import re
import reprlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from workbook.checks.conditions import conditions_problems
from workbook.checks.domains import depends_on_hardware, domain
from workbook.checks.reductions import REDUCTIONS
from workbook.errors import BaselineError

FORMAT = "verl-workbook-baseline/3"  # 3 adds each metric's per-step spread, ``series_sigma``
FORMATS = ("verl-workbook-baseline/1", "verl-workbook-baseline/2", FORMAT)
MAX_BYTES = 64 * 1024 * 1024  # the committed CPU baseline is 100 KB; 100 metrics x 5,000 steps fit
# Keys and values in one document, a shared (aliased) part counted each time it is reached: twice
# what a MAX_BYTES file written by ``Baseline.save`` holds, never a YAML alias bomb's billions.
MAX_VALUES = 10_000_000
MAX_SHOWN = 20                # problems listed in one message
MAX_COLLECTED = 1000          # problems gathered before reading stops (a file of garbage lines)

TOP_KEYS = ("format", "scenario", "hardware", "hardware_key", "settings", "provenance", "metrics",
            "conditions")
METRIC_KEYS = ("value", "reduce", "window", "sigma", "n", "series", "series_sigma")

# What a file naming its ``format`` says of where its numbers came from, by who wrote it: the keys
# it must have (a null value says the fact was not known, a missing key that it was never
# looked for) and every key it may have.
BLESSED, IMPORTED = "bless", "verl-ascend-text"
BLESS_REQUIRED = ("created", "workbook_version", "workbook_commit", "verl_version", "verl_commit",
                  "hardware", "packages", "runs")
BLESS_KEYS = ("source", *BLESS_REQUIRED, "image", "cann_version", "hardware_detail", "host", "os",
              "python", "run_ids", "package_versions_differ", "runs_differ", "tuning",
              "environment", "window", "k_sigma", "skipped_metrics")
BLESS_RUN_REQUIRED = ("run_id", "started")
BLESS_RUN_KEYS = (*BLESS_RUN_REQUIRED, "path", "status", "ended", "host", "image", "versions",
                  "commits", "tuning", "env")
IMPORT_REQUIRED = ("created", "sha256")
# origin: repository@commit:path upstream; origin_date: when upstream last changed that file
IMPORT_KEYS = ("source", *IMPORT_REQUIRED, "imported_from", "origin", "origin_date", "note")
PROVENANCE_RULES = {BLESSED: (BLESS_REQUIRED, BLESS_KEYS), IMPORTED: (IMPORT_REQUIRED, IMPORT_KEYS)}

# git writes its markers at the start of a line: <<<<<<< ours, ||||||| base, =======, >>>>>>> theirs
_CONFLICT = re.compile(r"(?:<{7}|\|{7}|>{7})(?:[ \t].*)?|={7}[ \t]*")
_NUMBER = r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?"
# check_npu.py reads a bare number or numpy's repr of one, ``np.float64(0.5)``
_VALUE = re.compile(rf"np\.float(?:16|32|64)?\(\s*({_NUMBER})\s*\)|({_NUMBER})")
_NOT_FINITE = re.compile(r"(?:np\.float\d*\(\s*)?[+-]?(?:nan|inf(?:inity)?)\s*\)?", re.IGNORECASE)
_STEP = re.compile(r"\d{1,12}")

_short_repr = reprlib.Repr()
_short_repr.maxstring = _short_repr.maxother = 60
_short_repr.maxlevel, _short_repr.maxdict, _short_repr.maxlist = 2, 4, 4


def short(value: Any) -> str:
    """A value as a message may quote it: a bounded prefix, whatever its size."""
    return _short_repr.repr(value)


def label(key: Any) -> str:
    """A key as a field path shows it: its text, cut to a short prefix."""
    text = str(key)
    return text if len(text) <= 60 else text[:57] + "..."


def refuse(where: str, problems: list[str]) -> BaselineError:
    """One error listing every problem (the first ``MAX_SHOWN``)."""
    if len(problems) == 1:
        return BaselineError(f"{where}: {problems[0]}")
    lines = [f"{where}: {len(problems)} problems:"]
    lines += [f"  - {p}" for p in problems[:MAX_SHOWN]]
    if len(problems) > MAX_SHOWN:
        lines.append(f"  ... and {len(problems) - MAX_SHOWN} more")
    return BaselineError("\n".join(lines))


def conflict_lines(text: str) -> list[str]:
    """One problem per git merge-conflict marker line (an unresolved merge holds both sides)."""
    markers = ((n, line.strip()) for n, line in enumerate(text.splitlines(), 1)
               if _CONFLICT.fullmatch(line.strip()))
    return [f"line {n}: git merge-conflict marker {short(marker[:20])}; resolve the merge (the "
            "file holds both sides, and one would silently win)"
            for n, marker in itertools.islice(markers, MAX_COLLECTED)]


@dataclass(frozen=True)
class AscendLine:
    """One ``key:value`` line of verl's Ascend baseline text."""

    key: str
    value: float
    line: int


def parse_ascend_lines(text: str, where: str) -> list[AscendLine]:
    """The ``key:value`` lines of verl's Ascend baseline, every bad line refused with its number.

    verl's own files (``baseline/<a2|a3>/nightly_log/*/baseline_*.txt``) hold only ``key:value``
    lines; blank lines and ``#`` comments are allowed too, as nothing reads them as a metric.
    Unlike ``check_npu.py``, which skips a line it cannot read, a line that is neither is an
    error: skipping it would drop that metric's check without a word.
    """
    lines: list[AscendLine] = []
    problems = conflict_lines(text)
    seen: dict[str, int] = {}
    for n, raw in enumerate(text.splitlines(), 1):
        if len(problems) >= MAX_COLLECTED:
            problems.append(f"stopped reading at line {n}, after {len(problems)} problems")
            break
        line = raw.strip()
        if not line or line.startswith("#") or _CONFLICT.fullmatch(line):
            continue
        key, sep, rest = line.partition(":")
        key, rest = key.strip(), rest.strip()
        if not sep or not key or any(c.isspace() for c in key):
            problems.append(f"line {n}: expected `key:value` (a metric name, a colon, a number), "
                            f"got {short(line)}")
            continue
        match = _VALUE.fullmatch(rest)
        if match is None:
            why = "is not finite" if _NOT_FINITE.fullmatch(rest) else "is not a number"
            problems.append(f"line {n}: {short(key)}: value {short(rest)} {why}")
            continue
        value = float(match.group(1) or match.group(2))
        problems += [f"line {n}: {p}" for p in value_problems(key, value, label(key))]
        if key in seen:
            problems.append(f"line {n}: duplicate key {short(key)} (first on line {seen[key]}); "
                            "which value is meant?")
            continue
        seen[key] = n
        lines.append(AscendLine(key, value, n))
    if problems:
        raise refuse(where, problems)
    return lines


def value_problems(metric: str, value: float, field: str) -> list[str]:
    """A metric's reference number: finite, and within what that kind of metric can measure."""
    if not math.isfinite(value):
        return [f"{field}: {value} is not finite; a baseline holds measured numbers"]
    bounds = checked_bounds(metric)
    if bounds is None or bounds[0] <= value <= bounds[1]:
        return []
    lo, hi = bounds
    if hi == math.inf:
        return [f"{field}: {value:g} is below {lo:g}; time, throughput and memory are never "
                "negative"]
    return [f"{field}: {value:g} is outside [{lo:g}, {hi:g}], the range of a fraction"]


def checked_bounds(metric: str) -> tuple[float, float] | None:
    """The range a baseline value of ``metric`` is refused outside, or None.

    Only where the range is certain: time, throughput and memory (never below 0) and fractions
    ([0, 1]). The other ranges in :mod:`workbook.checks.domains` are a validation aid and too
    loose a guess to refuse a file by (DAPO's ``critic/score/min`` is -1).
    """
    lo, hi = domain(metric)
    if (depends_on_hardware(metric) and lo == 0.0) or (lo, hi) == (0.0, 1.0):
        return lo, hi
    return None


def document_problems(data: Any) -> list[str]:
    """Every problem of a JSON/YAML baseline document, each with its field path."""
    if isinstance(data, (dict, list, tuple)) and not within_budget(data):
        return [f"more than {MAX_VALUES:,} values (or YAML aliases that expand to that many, or "
                "a structure that contains itself); not a baseline"]
    if not isinstance(data, Mapping):
        return [f"expected a mapping with a 'metrics' mapping, got {type(data).__name__}"]
    problems = unknown_keys(data, TOP_KEYS, "")
    fmt = data.get("format", FORMAT)
    if fmt not in FORMATS:
        problems.append(f"format: unknown format {short(fmt)}, expected {FORMAT}")
    for key in ("scenario", "hardware"):
        if data.get(key) is not None and not isinstance(data[key], str):
            problems.append(f"{key}: expected a string, got {type(data[key]).__name__}")
    problems += _flat_mapping(data.get("hardware_key"), "hardware_key")
    problems += _flat_mapping(data.get("settings"), "settings")
    problems += conditions_problems(data.get("conditions"))  # the blessed runs' machine
    if data.get("provenance") is not None and not isinstance(data["provenance"], Mapping):
        problems.append(f"provenance: expected a mapping, got {type(data['provenance']).__name__}")
    metrics = data.get("metrics")
    if not isinstance(metrics, Mapping):
        problems.append("metrics: expected a mapping of metric name -> reference values")
        return problems
    if not metrics:
        problems.append("metrics: names no metric")
    for name, entry in metrics.items():
        if not isinstance(name, str) or not name:
            problems.append(f"metrics: metric name {short(name)} is not a non-empty string")
            continue
        problems += metric_problems(name, entry, f"metrics.{label(name)}")
        if len(problems) >= MAX_COLLECTED:
            problems.append(f"stopped reading at metric {label(name)}, after {MAX_COLLECTED} "
                            "problems")
            break
    return problems


def provenance_problems(data: Any) -> list[str]:
    """Where a baseline file's numbers came from, when it names a workbook ``format``.

    Only ``bless`` and ``baseline import`` write that name, and both record where the numbers
    came from: a file naming it without that record was edited by hand or cut short. A document
    without ``format`` (hand-made, in tests) and verl's ``.txt`` files are not asked for one:
    they load, and a report marks them as having no provenance.
    """
    if not isinstance(data, Mapping) or "format" not in data:
        return []
    record = data.get("provenance")
    if not record:
        return ["provenance: missing; a file naming a verl-workbook format is written by "
                "`workbook bless` or `workbook baseline import`, which record where its numbers "
                "came from"]
    if not isinstance(record, Mapping):
        return []  # named by document_problems
    source = record.get("source")
    rules = PROVENANCE_RULES.get(source) if isinstance(source, str) else None
    if rules is None:
        what = "missing" if source is None else f"unknown source {short(source)}"
        return [f"provenance.source: {what}; expected {' or '.join(PROVENANCE_RULES)}"]
    required, known = rules
    problems = unknown_keys(record, known, "provenance")
    problems += [f"provenance.{key}: missing; {source} records it (null when not known)"
                 for key in required if key not in record]
    if record.get("created") is not None and not isinstance(record["created"], str):
        problems.append(f"provenance.created: expected a date, got {short(record['created'])}")
    if source == BLESSED:
        problems += _packages(record.get("packages"), "provenance.packages")
        problems += _source_runs(record.get("runs"))
    return problems


def _packages(value: Any, field: str) -> list[str]:
    if value is None or isinstance(value, Mapping) and all(
            isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        return []
    return [f"{field}: expected a mapping of package name -> version"]


def _source_runs(runs: Any) -> list[str]:
    """The blessed runs: one entry each, with its id and when it started."""
    if runs is None:
        return []  # named as missing
    if not isinstance(runs, list) or not runs:
        return ["provenance.runs: expected the list of blessed runs, got "
                f"{short(runs)}"]
    problems: list[str] = []
    for i, run in enumerate(runs[:MAX_SHOWN]):
        where = f"provenance.runs.{i}"
        if not isinstance(run, Mapping):
            problems.append(f"{where}: expected a mapping, got {type(run).__name__}")
            continue
        problems += unknown_keys(run, BLESS_RUN_KEYS, where)
        problems += [f"{where}.{key}: missing" for key in BLESS_RUN_REQUIRED if key not in run]
        if "run_id" in run and not isinstance(run["run_id"], str):
            problems.append(f"{where}.run_id: expected a run id, got {short(run['run_id'])}")
    return problems


def metric_problems(metric: str, entry: Any, where: str) -> list[str]:
    """One metric's entry: known keys, finite numbers within the metric's range."""
    if not isinstance(entry, Mapping):
        return [f"{where}: expected a mapping, got {type(entry).__name__}"]
    problems = unknown_keys(entry, METRIC_KEYS, where)
    for key in ("value", "sigma"):
        problems += _number(metric if key == "value" else "", entry.get(key), f"{where}.{key}",
                            optional=True, at_least=0.0 if key == "sigma" else None)
    if entry.get("reduce") is not None and entry["reduce"] not in REDUCTIONS:
        problems.append(f"{where}.reduce: unknown reduction {short(entry['reduce'])}; use one of "
                        f"{', '.join(REDUCTIONS)}")
    problems += _window(entry.get("window"), f"{where}.window")
    problems += _count(entry.get("n"), f"{where}.n")
    problems += _steps(metric, entry.get("series"), f"{where}.series")
    # a spread, not a value of the metric: never below 0, whatever range the metric has
    problems += _steps("", entry.get("series_sigma"), f"{where}.series_sigma", at_least=0.0)
    return problems


def unknown_keys(data: Mapping[Any, Any], allowed: tuple[str, ...], where: str) -> list[str]:
    """Keys the format does not have, each with the closest known key when one is close."""
    problems = []
    for key in data:
        if key in allowed:
            continue
        close = difflib.get_close_matches(str(key)[:64], allowed, n=1, cutoff=0.6)
        hint = f"; did you mean {close[0]!r}?" if close else f"; known: {', '.join(allowed)}"
        problems.append(f"{where + '.' if where else ''}{label(key)}: unknown key{hint}")
    return problems


def within_budget(data: Any, budget: int = MAX_VALUES) -> bool:
    """Whether ``data`` spells out at most ``budget`` keys and values, a shared part (a YAML
    alias) counted each time it is reached, and contains no cycle.

    Each distinct dict or list is sized once (its length plus its children's sizes), so an alias
    bomb is measured in as many steps as it has distinct parts, never expanded.
    """
    sizes: dict[int, int] = {}
    active: set[int] = set()
    stack: list[tuple[Any, list[Any] | None]] = [(data, None)]
    while stack:
        item, sized = stack.pop()
        key = id(item)
        if sized is not None:  # its nested containers are sized now
            weight = 2 if isinstance(item, dict) else 1
            total = weight * len(item) + sum(sizes[id(c)] for c in sized)
            sizes[key] = min(total, budget + 1)
            active.discard(key)
            continue
        if key in sizes:
            continue
        if key in active:  # reached again below itself: a recursive YAML structure
            return False
        active.add(key)
        nested = [c for c in _children(item) if isinstance(c, _CONTAINERS)]
        stack.append((item, nested))
        stack += [(c, None) for c in nested if id(c) not in sizes]
    return sizes.get(id(data), 0) <= budget


_CONTAINERS = (dict, list, tuple)


def _children(item: Any) -> Iterable[Any]:
    return item.values() if isinstance(item, dict) else item


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def as_float(value: Any) -> float | None:
    """A JSON/YAML number as a float (an int too large for a float is not one)."""
    if not is_number(value):
        return None
    try:
        return float(value)
    except OverflowError:
        return math.inf


def _number(metric: str, value: Any, field: str, *, optional: bool = False,
            at_least: float | None = None) -> list[str]:
    if value is None:
        return [] if optional else [f"{field}: missing"]
    number = as_float(value)
    if number is None:
        return [f"{field}: expected a number, got {short(value)}"]
    problems = value_problems(metric, number, field)
    if not problems and at_least is not None and number < at_least:
        problems.append(f"{field}: {number:g} is below {at_least:g}")
    return problems


def _count(value: Any, field: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= 10**9:
        return [f"{field}: expected a whole number of runs (1 or more), got {short(value)}"]
    return []


def _window(value: Any, field: str) -> list[str]:
    if value is None:
        return []
    ok = (isinstance(value, (list, tuple)) and len(value) == 2
          and all(isinstance(v, int) and not isinstance(v, bool) for v in value))
    if not ok or not 0 <= value[0] <= value[1] <= 10**12:
        return [f"{field}: expected [first step, last step] with 0 <= first <= last, got "
                f"{short(value)}"]
    return []


def _steps(metric: str, series: Any, field: str, at_least: float | None = None) -> list[str]:
    """A per-step series: whole-number steps, each a finite number or null (not logged)."""
    if series is None:
        return []
    if not isinstance(series, Mapping):
        return [f"{field}: expected a mapping of step -> value, got {type(series).__name__}"]
    problems: list[str] = []
    for step, value in series.items():
        if not (isinstance(step, int) and not isinstance(step, bool) and step >= 0
                or isinstance(step, str) and _STEP.fullmatch(step)):
            problems.append(f"{field}: step {short(step)} is not a whole number >= 0")
        elif value is not None:
            problems += _number(metric, value, f"{field}.{step}", at_least=at_least)
        if len(problems) > MAX_SHOWN:
            break
    return problems


def _flat_mapping(value: Any, field: str) -> list[str]:
    """``hardware_key`` and ``settings``: names -> scalars (or lists of them), numbers finite."""
    if value is None:
        return []
    if not isinstance(value, Mapping):
        return [f"{field}: expected a mapping, got {type(value).__name__}"]
    problems = []
    for key, item in value.items():
        items: Iterable[Any] = item if isinstance(item, list) else [item]
        for one in items:
            if one is not None and not isinstance(one, (str, int, float, bool)):
                problems.append(f"{field}.{label(key)}: expected a value or a list of values, "
                                f"got {type(one).__name__}")
                break
            number = as_float(one)
            if number is not None and not math.isfinite(number):
                problems.append(f"{field}.{label(key)}: {short(one)} is not finite")
                break
    return problems
