"""Do two runs train alike? Per metric and step, how far run B is from run A, and one verdict.

The question an engineer porting a verl scenario from GPU to NPU (or to another verl) asks. verl's
docs once answered it with numbers (loss within 2 %, reward within 4 %, a throughput ratio over the
first 4 steps) and now with a procedure (pinned versions, data.shuffle=False, determinism, replay the
reference run's rollouts on the other chip, compare rewards, pg_loss and grad_norm); the numbers
are the default thresholds here, and ``workbook align --replay-from`` is the procedure.

The error of B at step t is ``|b_t - a_t| / s`` with ``s`` the mean of ``|a_t|`` over the compared
steps: the reference curve's own scale. A per-step ``|a_t|`` would explode wherever the curve
crosses zero, and GRPO's and GSPO's pg_loss does by construction (their advantages are zero-mean
within a group). The mean absolute error in % is ``100 * mean_t e_t``, i.e.
``sum |b - a| / sum |a|``. A metric A logged as 0 at every step has no scale: B agrees only by
being 0 too (else the error is undefined, and a thresholded metric is then not aligned).

Pure: this module reads no file (:mod:`workbook.align.runs` does).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

from workbook.checks.signed_rank import PairedTest, paired_shift
from workbook.errors import EXIT_PASSED, EXIT_REGRESSED, InputError

DEFAULT_METRICS = (
    "actor/pg_loss", "actor/grad_norm", "actor/entropy", "critic/rewards/mean",
    "response_length/mean",
    "training/rollout_probs_diff_mean",  # rollout vs actor probabilities of the same tokens
)  # fmt: skip
# verl's documented tolerances (removed from its docs in verl #3527): loss 2 %, reward 4 %
DEFAULT_THRESHOLDS = {"actor/pg_loss": 2.0, "critic/rewards/mean": 4.0}
THROUGHPUT = "perf/throughput"
THROUGHPUT_STEPS = 4  # the docs' ratio: mean throughput over the first 4 steps, B / A
ALIGNED, NOT_ALIGNED = "aligned", "not aligned"
# a metric's row: within / beyond its threshold, reported (no threshold), missing, undefined
WITHIN, BEYOND, REPORTED, MISSING, UNDEFINED = "within", "beyond", "reported", "missing", "undefined"


def parse_threshold(text: str) -> tuple[str, float]:
    """``METRIC=PCT`` (``actor/pg_loss=2``, ``actor/pg_loss=2%``) as ``(metric, pct)``.

    Raises:
        InputError: no metric, no number, or a number that is not finite and >= 0.
    """
    metric, sep, value = str(text).partition("=")
    metric, value = metric.strip(), value.strip().removesuffix("%").strip()
    if not sep or not metric:
        raise InputError(f"--threshold {text!r}: expected METRIC=PCT, e.g. actor/pg_loss=2")
    return metric, percent(value, f"--threshold {text!r}")


def percent(value: object, where: str) -> float:
    """A threshold in %: a finite number >= 0 (0 asks for identical curves). ``where`` names
    the value in the error (the option, or the scenario file's field)."""
    if isinstance(value, bool):
        raise InputError(f"{where}: must be a number, got {value}")
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise InputError(f"{where}: {value!r} is not a number") from None
    if not math.isfinite(number) or number < 0:
        raise InputError(f"{where}: must be a finite number >= 0, got {value}")
    return number


def percent_text(error: float | None) -> str:
    """An error in % as the terminal and the page show it: ``-`` when none was computed,
    ``undefined`` where run A gave no scale (see the module docstring)."""
    if error is None:
        return "-"
    return f"{error:.3g} %" if math.isfinite(error) else "undefined"


def threshold_text(threshold: float | None) -> str:
    """A metric's threshold as a table shows it (``-``: reported without one)."""
    return "-" if threshold is None else f"{threshold:g} %"


def positive(value: object, where: str) -> float:
    """A ratio: a finite number > 0."""
    number = percent(value, where)
    if number == 0:
        raise InputError(f"{where}: must be a finite number > 0, got {value}")
    return number


@dataclass(frozen=True)
class MetricAlignment:
    """One metric of both runs over the steps both logged it: the values, each step's error in %
    (``inf`` where undefined), their mean (``mae``), largest and the first step beyond the
    threshold (None: reported without one), and the paired test of a shift."""

    metric: str
    threshold: float | None
    in_a: bool
    in_b: bool
    a: dict[int, float] = field(default_factory=dict)
    b: dict[int, float] = field(default_factory=dict)
    errors: dict[int, float] = field(default_factory=dict)
    mae: float | None = None
    max_error: float | None = None
    first_beyond: int | None = None
    paired: PairedTest | None = None
    why: str = ""  # why the error is undefined or missing, in words

    @property
    def steps(self) -> list[int]:
        return sorted(self.errors)

    @property
    def status(self) -> str:
        if not self.errors:
            return MISSING
        if self.mae is None or not math.isfinite(self.mae):
            return UNDEFINED
        if self.threshold is None:
            return REPORTED
        return WITHIN if self.mae <= self.threshold else BEYOND

    @property
    def holds(self) -> bool:
        """Whether this metric lets the runs count as aligned (always, without a threshold)."""
        return self.threshold is None or self.status == WITHIN

    def problem(self) -> str:
        """Why this metric keeps the runs from being aligned ('' when it does not)."""
        if self.holds:
            return ""
        if self.status in (MISSING, UNDEFINED):
            return f"{self.metric}: {self.why}"
        beyond = f", beyond it from step {self.first_beyond}" if self.first_beyond else ""
        return f"{self.metric} {self.mae:.3g} % > {self.threshold:g} %{beyond}"


def align_metric(metric: str, a: Mapping[int, float], b: Mapping[int, float],
                 threshold: float | None) -> MetricAlignment:
    """Compare ``b`` with ``a`` (``{step: value}``) at the steps both logged."""
    steps = sorted(set(a) & set(b))
    pairs = {s: (a[s], b[s]) for s in steps}
    base = MetricAlignment(metric, threshold, bool(a), bool(b))
    if not steps:
        missing = [side for side, series in (("A", a), ("B", b)) if not series]
        why = (f"not logged by run {' nor run '.join(missing)}" if missing
               else "no step logged by both runs")
        return replace(base, why=why)
    broken = [(s, side) for s, (x, y) in pairs.items()
              for side, v in (("A", x), ("B", y)) if not math.isfinite(v)]
    sizes = [abs(x) for x, _ in pairs.values() if math.isfinite(x)]
    scale = statistics.fmean(sizes) if sizes else 0.0  # the reference curve's own scale
    errors = {s: _error(x, y, scale) for s, (x, y) in pairs.items()}
    finite = [e for e in errors.values() if math.isfinite(e)]
    mae = statistics.fmean(errors.values()) if len(finite) == len(errors) else math.inf
    why = ""
    if broken:
        why = f"not finite in run {broken[0][1]} at step {broken[0][0]}"
    elif not math.isfinite(mae):
        why = "run A is 0 at every compared step and run B is not: no scale to compare with"
    first = next((s for s in steps if threshold is not None and errors[s] > threshold), None)
    return replace(base, a={s: x for s, (x, _) in pairs.items()},
                 b={s: y for s, (_, y) in pairs.items()}, errors=errors, mae=mae,
                 max_error=max(errors.values()), first_beyond=first, why=why,
                 paired=paired_shift([y - x for x, y in pairs.values()]))


def _error(a: float, b: float, scale: float) -> float:
    """Step error in % of the reference's scale (0 when equal, also at scale 0)."""
    if not (math.isfinite(a) and math.isfinite(b)):
        return math.inf
    if a == b:
        return 0.0
    return 100.0 * abs(b - a) / scale if scale > 0 else math.inf


@dataclass(frozen=True)
class Throughput:
    """Mean ``perf/throughput`` of B over A's over the first steps both logged it (the docs'
    ratio); ``minimum`` makes it a criterion (None: reported only)."""

    ratio: float | None
    steps: tuple[int, ...]
    a: float | None
    b: float | None
    minimum: float | None = None

    @property
    def holds(self) -> bool:
        if self.minimum is None:
            return True
        return self.ratio is not None and self.ratio >= self.minimum

    def problem(self) -> str:
        if self.holds:
            return ""
        if self.ratio is None:
            return (f"throughput ratio not measured ({THROUGHPUT} not logged by both runs), "
                    f"at least {self.minimum:g} asked")
        return f"throughput ratio B/A {self.ratio:.3g} < {self.minimum:g}"


def throughput(a: Mapping[int, float], b: Mapping[int, float],
               minimum: float | None = None) -> Throughput:
    steps = [s for s in sorted(set(a) & set(b))
             if math.isfinite(a[s]) and math.isfinite(b[s])][:THROUGHPUT_STEPS]
    if not steps:
        return Throughput(None, (), None, None, minimum)
    mean_a, mean_b = statistics.fmean(a[s] for s in steps), statistics.fmean(b[s] for s in steps)
    ratio = mean_b / mean_a if mean_a > 0 else None
    return Throughput(ratio, tuple(steps), mean_a, mean_b, minimum)


@dataclass(frozen=True)
class Judgement:
    """The verdict (``aligned`` or ``not aligned``), why, and what it does not decide but the
    reader must know (a run not made deterministic, a reference short of its own steps)."""

    status: str
    reason: str
    problems: tuple[str, ...]
    warnings: tuple[str, ...]

    @property
    def exit_code(self) -> int:
        return EXIT_PASSED if self.status == ALIGNED else EXIT_REGRESSED


def judge_alignment(metrics: Iterable[MetricAlignment], rate: Throughput, *, steps_b: int,
          expected: int, warnings: Iterable[str] = ()) -> Judgement:
    """Aligned when B reached the steps A expected, every thresholded metric is within its
    threshold and the throughput criterion (if any) holds; else not aligned, each problem named."""
    metrics = list(metrics)
    problems = [p for p in (steps_problem(steps_b, expected),) if p]
    problems += [m.problem() for m in metrics if not m.holds]
    if not rate.holds:
        problems.append(rate.problem())
    judged = [m for m in metrics if m.threshold is not None]
    if problems:
        return Judgement(NOT_ALIGNED, "; ".join(problems), tuple(problems), tuple(warnings))
    within = ", ".join(f"{m.metric} {m.mae:.3g} % <= {m.threshold:g} %" for m in judged)
    reason = (f"every thresholded metric within its threshold: {within}" if judged
              else "no metric has a threshold: nothing was judged but the steps reached")
    return Judgement(ALIGNED, reason, (), tuple(warnings))


def steps_problem(steps_b: int, expected: int) -> str:
    """Why run B's length keeps the runs from being aligned ('' when it reached ``expected``):
    a run that stopped early compares only the steps it has, which is not alignment."""
    if steps_b < expected:
        return f"run B reached {steps_b} of the {expected} steps run A expected"
    return ""


def thresholds_of(*layers: Mapping[str, float] | None) -> dict[str, float]:
    """The defaults, then each layer on top (the scenario's, then the command line's)."""
    merged = dict(DEFAULT_THRESHOLDS)
    for layer in layers:
        merged.update(layer or {})
    return merged


def metric_names(thresholds: Mapping[str, float], *extra: Iterable[str]) -> list[str]:
    """The defaults, then every thresholded or named metric, each once, in that order."""
    names = [*DEFAULT_METRICS, *thresholds]
    for more in extra:
        names += list(more)
    return list(dict.fromkeys(names))
