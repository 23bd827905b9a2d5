"""What a baseline must be to be used at all: refused with its line or field, never half-read.

A baseline decides what every later run is judged against, so a file that cannot be right is
refused rather than guessed at: an unresolved merge (git's conflict markers, where the last side
would silently win), a text line that is not ``key:value`` (dropping it drops a check), a NaN or
an infinity (``FAIL <= nan``), time, throughput or memory below zero, a fraction outside [0, 1],
a key the format does not have (a misspelt ``sigma`` would widen nothing and say nothing), a
file naming the workbook's format without saying where its numbers came from (its provenance).

verl's Ascend text is read line by line; the workbook's JSON/YAML document is a pydantic model,
:class:`Document`, beside the scenario's, the ``checks:`` section's and a suite's ``retry:``.
The same rules run when a baseline is read, imported and written, so ``bless`` and ``baseline
import`` never write a file that loading it would refuse. Every problem is listed at once; a
message quotes at most a short prefix of a value, and a document is sized within a fixed budget
of values before it is validated (a YAML alias bomb is refused, not expanded).
"""

from __future__ import annotations

import difflib
import itertools
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ModelWrapValidatorHandler,
    ValidationError,
    ValidationInfo,
    create_model,
    field_validator,
    model_validator,
)
from pydantic_core import InitErrorDetails, PydanticCustomError

from workbook.checks.domains import depends_on_hardware, domain
from workbook.checks.reductions import REDUCTIONS
from workbook.core.quoting import cut, short
from workbook.core.values import finite
from workbook.errors import BaselineError
from workbook.params.schema import rule

FORMAT = "verl-workbook-baseline/3"  # 3 adds each metric's per-step spread, ``series_sigma``
FORMATS = ("verl-workbook-baseline/1", "verl-workbook-baseline/2", FORMAT)
MAX_BYTES = 64 * 1024 * 1024  # the committed CPU baseline is 100 KB; 100 metrics x 5,000 steps fit
# Keys and values in one document, a shared (aliased) part counted each time it is reached: twice
# what a MAX_BYTES file written by ``Baseline.save`` holds, never a YAML alias bomb's billions.
MAX_VALUES = 10_000_000
MAX_SHOWN = 20                # problems listed in one message (and per series, or runs checked)
MAX_COLLECTED = 1000          # problems gathered before reading stops (a file of garbage lines)

# What a file naming its ``format`` says of where its numbers came from, by who wrote it: the keys
# it must have (a null value says the fact was not known, a missing key that it was never
# looked for) and the others it may have.
BLESSED, IMPORTED = "bless", "verl-ascend-text"
BLESS_REQUIRED = ("created", "workbook_version", "workbook_commit", "verl_version", "verl_commit",
                  "hardware", "packages", "runs")
BLESS_OPTIONAL = ("image", "cann_version", "hardware_detail", "host", "os", "python", "run_ids",
                  "package_versions_differ", "runs_differ", "tuning", "environment", "window",
                  "k_sigma", "skipped_metrics")
RUN_REQUIRED = ("run_id", "started")
RUN_OPTIONAL = ("path", "status", "ended", "host", "image", "versions", "commits", "tuning", "env")
IMPORT_REQUIRED = ("created", "sha256")
# origin: repository@commit:path upstream; origin_date: when upstream last changed that file
IMPORT_OPTIONAL = ("imported_from", "origin", "origin_date", "note")

# git writes its markers at the start of a line: <<<<<<< ours, ||||||| base, =======, >>>>>>> theirs
_CONFLICT = re.compile(r"(?:<{7}|\|{7}|>{7})(?:[ \t].*)?|={7}[ \t]*")
_NUMBER = r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?"
# check_npu.py reads a bare number or numpy's repr of one, ``np.float64(0.5)``
_VALUE = re.compile(rf"np\.float(?:16|32|64)?\(\s*({_NUMBER})\s*\)|({_NUMBER})")
_NOT_FINITE = re.compile(r"(?:np\.float\d*\(\s*)?[+-]?(?:nan|inf(?:inity)?)\s*\)?", re.IGNORECASE)
_STEP = re.compile(r"\d{1,12}")


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
        if (problem := value_problem(key, value)) is not None:
            problems.append(f"line {n}: {cut(key, 60)}: {problem}")
        if key in seen:
            problems.append(f"line {n}: duplicate key {short(key)} (first on line {seen[key]}); "
                            "which value is meant?")
            continue
        seen[key] = n
        lines.append(AscendLine(key, value, n))
    if problems:
        raise refuse(where, problems)
    return lines


def value_problem(metric: str, value: float) -> str | None:
    """Why a baseline cannot hold ``value`` for ``metric`` (None: it can): it is not finite, or
    outside a range that is certain: time, throughput and memory are never below 0, fractions
    within [0, 1]. The other ranges in :mod:`workbook.checks.domains` are a validation aid and
    too loose a guess to refuse a file by (DAPO's ``critic/score/min`` is -1)."""
    if not math.isfinite(value):
        return f"{value} is not finite; a baseline holds measured numbers"
    lo, hi = domain(metric)
    if (lo, hi) == (0.0, math.inf) and depends_on_hardware(metric) and value < 0:
        return f"{value:g} is below 0; time, throughput and memory are never negative"
    if (lo, hi) == (0.0, 1.0) and not 0 <= value <= 1:
        return f"{value:g} is outside [0, 1], the range of a fraction"
    return None


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


# --- the JSON/YAML document ---------------------------------------------------------------------

Found = list[tuple[tuple[int | str, ...], str]]  # (where below the field validated, message)
_EXPECTED = {"dict_type": "a mapping", "string_type": "a string"}  # pydantic's type errors


def _problems(found: Found) -> ValidationError:
    """Problems found below one field, each at its own place, as one pydantic error."""
    return ValidationError.from_exception_data("baseline", [
        InitErrorDetails(type=PydanticCustomError("baseline", "{text}", {"text": text}),
                         loc=loc, input=None) for loc, text in found])


class _Strict(BaseModel):
    """A part of the document: no key it does not have, every problem in the baseline's words."""

    model_config = ConfigDict(extra="forbid")
    missing: ClassVar[str] = "missing"  # what a required key left out is told
    closest: ClassVar[bool] = True      # an unknown key is told the closest known one, else all

    @model_validator(mode="wrap")
    @classmethod
    def _in_words(cls, data: Any, handler: ModelWrapValidatorHandler[Any]) -> Any:
        if not isinstance(data, (Mapping, cls)):
            raise ValueError(f"expected a mapping, got {type(data).__name__}")
        try:
            return handler(data)
        except ValidationError as exc:
            raise _problems([(e["loc"], cls._text(e))
                             for e in exc.errors(include_url=False)]) from None

    @classmethod
    def _text(cls, err: Any) -> str:
        kind = err["type"]
        if kind in ("extra_forbidden", "invalid_key"):  # a key it does not have, or not text
            known = list(cls.model_fields)
            close = difflib.get_close_matches(str(err["loc"][-1])[:64], known, n=1, cutoff=0.6)
            return (f"unknown key; did you mean {close[0]!r}?" if close and cls.closest
                    else f"unknown key; known: {', '.join(known)}")
        if kind == "missing":
            return cls.missing
        if kind in _EXPECTED:
            return f"expected {_EXPECTED[kind]}, got {type(err['input']).__name__}"
        return str(err["msg"]).removeprefix("Value error, ")


def _number(value: Any, metric: str | None) -> float | None:
    """A value of ``metric`` (within what it can measure), or a spread (``metric`` None: never
    below 0); null stays None."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"expected a number, got {short(value)}")
    try:
        number = float(value)
    except OverflowError:  # an int too large for a float
        number = math.inf
    problem = value_problem(metric or "", number)
    if problem is None and metric is None and number < 0:
        problem = f"{number:g} is below 0"
    if problem:
        raise ValueError(problem)
    return number


def _steps(series: Any, metric: str | None) -> dict[int, float]:
    """A per-step series: whole-number steps, each a number (see :func:`_number`) or null (not
    logged: NaN); at most ``MAX_SHOWN`` problems named."""
    if series is None:
        return {}
    if not isinstance(series, Mapping):
        raise ValueError(f"expected a mapping of step -> value, got {type(series).__name__}")
    steps: dict[int, float] = {}
    found: Found = []
    for step, value in series.items():
        if not (type(step) is int and step >= 0 or isinstance(step, str) and _STEP.fullmatch(step)):
            found.append(((), f"step {short(step)} is not a whole number >= 0"))
        else:
            try:
                number = _number(value, metric)
                steps[int(step)] = math.nan if number is None else number
            except ValueError as exc:
                found.append(((step,), str(exc)))
        if len(found) > MAX_SHOWN:
            break
    if found:
        raise _problems(found)
    return steps


def _reduction(value: Any) -> Any:
    if value is not None and value not in REDUCTIONS:
        raise ValueError(f"unknown reduction {short(value)}; use one of {', '.join(REDUCTIONS)}")
    return value


def _whole(value: Any) -> bool:
    return value is None or type(value) is int and 1 <= value <= 10**9


class MetricEntry(_Strict):
    """One metric's reference values, validated knowing the metric (``context={"metric":
    name}``): its value and steps must be within what it can measure; sigma and each step's
    spread are never below 0."""

    value: Annotated[float | None, BeforeValidator(
        lambda v, i: _number(v, i.context["metric"]))] = None
    reduce: Annotated[str | None, BeforeValidator(_reduction)] = None
    window: Annotated[tuple[int, int] | None, rule(
        lambda v: v is None or isinstance(v, (list, tuple)) and len(v) == 2
        and all(type(s) is int for s in v) and 0 <= v[0] <= v[1] <= 10**12,
        "expected [first step, last step] with 0 <= first <= last")] = None
    sigma: Annotated[float | None, BeforeValidator(lambda v: _number(v, None))] = None
    n: Annotated[int | None, rule(_whole, "expected a whole number of runs (1 or more)")] = None
    series: Annotated[dict[int, float], BeforeValidator(
        lambda v, i: _steps(v, i.context["metric"]))] = {}
    series_sigma: Annotated[dict[int, float], BeforeValidator(lambda v: _steps(v, None))] = {}


def _metrics(value: Any) -> dict[str, MetricEntry]:
    """Each metric's entry; reading stops after ``MAX_COLLECTED`` problems."""
    if not isinstance(value, Mapping):
        raise ValueError("expected a mapping of metric name -> reference values")
    if not value:
        raise ValueError("names no metric")
    entries: dict[str, MetricEntry] = {}
    found: Found = []
    for name, entry in value.items():
        if not isinstance(name, str) or not name:
            found.append(((), f"metric name {short(name)} is not a non-empty string"))
            continue
        try:
            entries[name] = MetricEntry.model_validate(entry, context={"metric": name})
        except ValidationError as exc:
            found += [((name, *e["loc"]), e["msg"]) for e in exc.errors(include_url=False)]
        if len(found) >= MAX_COLLECTED:
            found.append(((), f"stopped reading at metric {cut(name, 60)}, after "
                              f"{MAX_COLLECTED} problems"))
            break
    if found:
        raise _problems(found)
    return entries


def _fact(item: Any) -> Any:
    """A hardware-key fact or a setting: a value or a list of values, numbers finite."""
    for one in item if isinstance(item, list) else [item]:
        if one is not None and not isinstance(one, (str, int, float, bool)):
            raise ValueError(f"expected a value or a list of values, got {type(one).__name__}")
        if not isinstance(one, (str, bool)) and one is not None and finite(one) is None:
            raise ValueError(f"{short(one)} is not finite")
    return item


Facts = dict[Any, Annotated[Any, BeforeValidator(_fact)]] | None
Measure = Annotated[float | None, rule(lambda v: v is None or finite(v) is not None and v >= 0,
                                       "expected a finite number >= 0")]
Count = Annotated[int | None, rule(_whole, "expected a whole number (1 or more)")]


class Conditions(_Strict):
    """The blessed runs' machine (:func:`workbook.checks.conditions.blessed_conditions`)."""

    closest: ClassVar[bool] = False
    others_cores: Measure = None
    others_cores_max: Measure = None
    calibration_s: Measure = None
    steal_cores: Measure = None
    steal_cores_max: Measure = None
    cpus: Count = None
    cpu: Annotated[str | None, rule(lambda v: v is None or isinstance(v, str) and 0 < len(v) <= 200,
                                    "expected text (1-200 characters)")] = None
    n: Count = None


def _record(name: str, required: tuple[str, ...], optional: tuple[str, ...],
            source: str | None = None, **checked: Any) -> type[_Strict]:
    """A provenance record's model: the keys ``source`` writes, ``required`` (null allowed) and
    ``optional``, and the type of each key ``checked``."""
    fields: dict[str, Any] = {"source": (Any, None), **{k: (Any, ...) for k in required},
                              **{k: (Any, None) for k in optional}}
    fields.update({key: (kind, fields[key][1]) for key, kind in checked.items()})
    model = create_model(name, __base__=_Strict, **fields)
    if source:
        model.missing = f"missing; {source} records it (null when not known)"
    return model


def _runs(value: Any) -> Any:
    """The blessed runs, the first ``MAX_SHOWN`` checked."""
    if value is not None and (not isinstance(value, list) or not value):
        raise ValueError(f"expected the list of blessed runs, got {short(value)}")
    return value and value[:MAX_SHOWN]


_DATE = Annotated[Any, rule(lambda v: v is None or isinstance(v, str), "expected a date")]
_VERSIONS = Annotated[Any, rule(lambda v: v is None or isinstance(v, Mapping) and all(
    isinstance(k, str) and isinstance(x, str) for k, x in v.items()),
    "expected a mapping of package name -> version")]
BlessedRun = _record("BlessedRun", RUN_REQUIRED, RUN_OPTIONAL,
                     run_id=Annotated[Any, rule(lambda v: isinstance(v, str), "expected a run id")])
_RUNS = Annotated[list[BlessedRun] | None, BeforeValidator(_runs)]  # type: ignore[valid-type]
RECORDS = {  # by the source that writes them
    BLESSED: _record("Blessed", BLESS_REQUIRED, BLESS_OPTIONAL, BLESSED, created=_DATE,
                     packages=_VERSIONS, runs=_RUNS),
    IMPORTED: _record("Imported", IMPORT_REQUIRED, IMPORT_OPTIONAL, IMPORTED, created=_DATE),
}


def _format(value: Any) -> Any:
    if value not in FORMATS:
        raise ValueError(f"unknown format {short(value)}, expected {FORMAT}")
    return value


class Document(_Strict):
    """A baseline file's JSON/YAML document (``context={"claimed": True}``: a file's, naming a
    workbook format, so it must say where its numbers came from)."""

    format: Annotated[str | None, BeforeValidator(_format)] = None
    scenario: str | None = None
    hardware: str | None = None
    hardware_key: Facts = None
    settings: Facts = None
    provenance: dict[Any, Any] | None = Field(default=None, validate_default=True)
    metrics: Annotated[dict[str, MetricEntry], BeforeValidator(_metrics)] = Field(
        default=None, validate_default=True)
    conditions: Conditions | None = None

    @field_validator("provenance")
    @classmethod
    def _source(cls, record: dict[Any, Any] | None, info: ValidationInfo) -> Any:
        """Only ``bless`` and ``baseline import`` write a format's name, and both record where
        the numbers came from: a file naming it without that record was edited by hand or cut
        short."""
        if not (info.context or {}).get("claimed"):
            return record
        if not record:
            raise ValueError("missing; a file naming a verl-workbook format is written by "
                             "`workbook bless` or `workbook baseline import`, which record "
                             "where its numbers came from")
        source = record.get("source")
        model = RECORDS.get(source) if isinstance(source, str) else None
        if model is None:
            what = "missing" if source is None else f"unknown source {short(source)}"
            raise _problems([(("source",), f"{what}; expected {' or '.join(RECORDS)}")])
        model.model_validate(record)
        return record


def read_document(data: Any, where: str, *, from_file: bool) -> Document:
    """``data`` as a :class:`Document`; BaselineError listing every problem with its field path.

    ``from_file``: the document is a file's, which judges runs: naming a workbook format, it
    must also say where its numbers came from. A document built in code need not, nor one
    without ``format`` (hand-made, in tests) or verl's ``.txt``: they load, and a report marks
    them as having no provenance.
    """
    if isinstance(data, _CONTAINERS) and not within_budget(data):
        problems = [f"more than {MAX_VALUES:,} values (or YAML aliases that expand to that many, "
                    "or a structure that contains itself); not a baseline"]
    elif not isinstance(data, Mapping):
        problems = [f"expected a mapping with a 'metrics' mapping, got {type(data).__name__}"]
    else:
        claimed = from_file and "format" in data
        try:
            return Document.model_validate(data, context={"claimed": claimed})
        except ValidationError as exc:
            problems = [".".join(cut(str(p), 60) for p in e["loc"]) + ": " + e["msg"] if e["loc"]
                        else e["msg"] for e in exc.errors(include_url=False)]
    raise refuse(where, problems)
