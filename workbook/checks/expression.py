"""Expression checks in NeMo-RL's vocabulary, parsed and evaluated without ``eval``.

A check is one comparison (or several joined by ``and``/``or``/``not``) over the run's metrics::

    median(data["training/rollout_probs_diff_mean"]) < 0.01
    data["critic/rewards/mean"][-1] > 0.3
    mean(data["timing_s/gen"], -5) < 1.2 * baseline("timing_s/gen")
    0 <= max(data["actor/pg_clipfrac"]) <= 1

Vocabulary, and nothing else:

- ``data["metric"]`` is the metric's series; ``data["metric"][step]`` one step's value (a negative
  step counts from the metric's last logged step, ``-1`` being the last);
- ``min(series)``/``max(series)`` or ``min(a, b, ...)`` on numbers; ``mean(series, start=1, end=0,
  ignore_top_p=0.0)`` and ``median(series, start=1, end=0)`` with NeMo-RL's range rules
  (1-indexed, end-exclusive, ``0`` = through the last step, negative from the end, resumed-run
  offset); ``ratio_above(series, x)``: share of steps ``>= x``; ``baseline("metric")``: the
  baseline's reduced value for that metric;
- numbers, ``+ - * /``, unary minus, comparisons (chained too), ``and``, ``or``, ``not``.

Every other construct (attribute access, imports, lambdas, comprehensions, dunder names, other
calls, f-strings, starred arguments, ``:=``, containers, subscripts of anything but ``data``) is
rejected by :func:`compile_expression` with the offending source text, before any run starts.
So is what the vocabulary allows but evaluation could never compute: a number literal no float
can hold (``1e999``, a 1,990-digit integer), a step or range bound beyond :data:`MAX_STEP`, an
``ignore_top_p`` outside [0, 1], a constant part that divides by zero or overflows. What is left
to fail at evaluation depends on the run (a metric or step missing) and is an
:class:`EvaluationError`, an ``error`` row, never an internal error.
The value a row reports is the computed left side of the (first) comparison, never split text.
"""

from __future__ import annotations

import ast
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from workbook.checks import reductions
from workbook.checks.vocabulary import ARITH, COMPARE, Validator, int_constant, is_data
from workbook.core.quoting import cut, short
from workbook.core.values import finite, number_text
from workbook.errors import ExpressionError, MetricsError
from workbook.metrics.model import RunMetrics

if TYPE_CHECKING:
    from workbook.checks.baseline import Baseline

MAX_LENGTH = 2000
MAX_NODES = 400
MAX_STEP = 10**9  # no run logs a billionth step: a larger step or range bound is a typo


class EvaluationError(MetricsError):
    """A valid expression cannot be computed on this run (metric or step missing, ...)."""


@dataclass(frozen=True)
class ExpressionResult:
    """Result of one expression on one run."""

    passed: bool
    value: float | None
    expected: str
    message: str


class Series(dict[int, float]):
    """A metric's ``{step: value}`` that remembers its name for messages."""

    def __init__(self, name: str, values: dict[int, float]) -> None:
        super().__init__(values)
        self.name = name


@dataclass(frozen=True)
class Expression:
    """A validated check expression; build it with :func:`compile_expression`."""

    text: str
    name: str
    tree: ast.Expression

    @property
    def metrics(self) -> list[str]:
        """Metric names the expression reads, in order of appearance."""
        seen: list[str] = []
        for node in ast.walk(self.tree):
            if is_data(node) and node.slice.value not in seen:  # type: ignore[attr-defined]
                seen.append(node.slice.value)  # type: ignore[attr-defined]
        return seen

    def evaluate(self, metrics: RunMetrics, baseline: Baseline | None = None) -> ExpressionResult:
        """Compute the check; raises :class:`EvaluationError` when it cannot be computed."""
        try:
            return self._evaluate(metrics, baseline)
        except (ArithmeticError, ValueError, RecursionError) as exc:  # never an internal error
            raise EvaluationError(f"cannot be computed on this run: {type(exc).__name__}: "
                                  f"{cut(str(exc))}") from None

    def _evaluate(self, metrics: RunMetrics, baseline: Baseline | None) -> ExpressionResult:
        env = _Env(metrics, baseline)
        passed = env.truth(self.tree.body)  # and/or short-circuit as in Python
        reported = _reported_compare(self.tree.body)
        value: float | None = None
        expected = "true"
        if reported is self.tree.body:
            operands = [reported.left, *reported.comparators]
            numbers = [env.number(op) for op in operands]
            index = _reported_index(operands)
            value, expected = numbers[index], _render_expected(reported, numbers, index)
        elif reported is not None:  # report the first part's left side when it can be computed
            operands = [reported.left, *reported.comparators]
            try:
                value = env.number(operands[_reported_index(operands)])
            except EvaluationError:
                value = None
        if passed:
            message = ""
        elif value is not None and math.isnan(value):
            message = "value is NaN"
        elif reported is self.tree.body and "value" not in expected:
            message = f"{_fmt(value)} is not {expected}"
        elif reported is self.tree.body:
            message = f"{expected} is false for value {_fmt(value)}"
        else:
            message = "expression is false"
        return ExpressionResult(passed, value, expected, message)


def compile_expression(text: str, name: str | None = None) -> Expression:
    """Parse and validate ``text``; raises :class:`ExpressionError` naming the offending part."""
    if not isinstance(text, str) or not text.strip():
        raise ExpressionError("empty check expression")
    source = text.strip()
    if len(source) > MAX_LENGTH:
        raise ExpressionError(f"check {short(source)} is longer than {MAX_LENGTH} characters")
    try:
        tree = ast.parse(source, mode="eval")
    except SyntaxError as exc:
        raise ExpressionError(f"check {short(source)} is not valid: {exc.msg}") from None
    except (ValueError, RecursionError, MemoryError):
        raise ExpressionError(f"check {short(source)} is not valid: it cannot be parsed") from None
    if sum(1 for _ in ast.walk(tree)) > MAX_NODES:
        raise ExpressionError(f"check {short(source)} is too large (more than {MAX_NODES} parts)")
    try:
        kind = Validator(source).kind(tree.body)
        if kind == "bool":
            _Limits(source).check(tree.body)
    except RecursionError:
        raise ExpressionError(f"check {short(source)} is nested too deeply") from None
    if kind != "bool":
        raise ExpressionError(
            f"check {short(source)} must be a comparison such as "
            '`mean(data["timing_s/step"]) < 10`')
    return Expression(source, name or source, tree)


def finite_number(value: Any) -> bool:
    """An int or float a float can hold finitely (not a bool, nan, inf or a 400-digit int)."""
    return finite(value) is not None


class _Limits:
    """What the vocabulary allows but evaluation could never compute, refused up front."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, node: ast.AST, why: str) -> ExpressionError:
        part = ast.get_source_segment(self.source, node) or type(node).__name__
        return ExpressionError(f"check {short(self.source)} cannot be evaluated: {why}: "
                               f"`{cut(part, 40)}`")

    def check(self, root: ast.AST) -> None:
        for node in ast.walk(root):
            if isinstance(node, ast.Constant) and type(node.value) in (int, float):
                if not finite_number(node.value):
                    raise self.fail(node, "a number must be finite and at most about 1.8e308")
            elif isinstance(node, ast.Subscript) and not is_data(node):
                self.step(node.slice, "a step")
            elif isinstance(node, (ast.BinOp, ast.UnaryOp)):
                value = self.constant(node)
                if value is not None and not math.isfinite(value):
                    raise self.fail(node, "this constant part overflows")
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                self.call(node.func.id, node)

    def call(self, name: str, node: ast.Call) -> None:
        if name not in ("mean", "median"):
            return
        keywords = {kw.arg: kw.value for kw in node.keywords}
        for bound in [*node.args[1:3], *(v for k, v in keywords.items() if k != "ignore_top_p")]:
            self.step(bound, "a range bound")
        top = node.args[3] if len(node.args) > 3 else keywords.get("ignore_top_p")
        value = None if top is None else self.constant(top)
        if top is not None and value is not None and not 0.0 <= value <= 1.0:
            raise self.fail(top, "ignore_top_p is a share of the steps, within [0, 1]")

    def step(self, node: ast.AST, what: str) -> None:
        value = int_constant(node)
        if value is not None and abs(value) > MAX_STEP:
            raise self.fail(node, f"{what} must be within +-{MAX_STEP}")

    def constant(self, node: ast.AST) -> float | None:
        """The value of a part made of number literals and + - * / only (else None)."""
        if isinstance(node, ast.Constant) and finite_number(node.value):
            return float(node.value)  # type: ignore[arg-type]  # finite_number: int or float
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            inner = self.constant(node.operand)
            return None if inner is None else -inner if isinstance(node.op, ast.USub) else inner
        if isinstance(node, ast.BinOp) and type(node.op) in ARITH:
            left, right = self.constant(node.left), self.constant(node.right)
            if left is None or right is None:
                return None
            if isinstance(node.op, ast.Div) and right == 0:
                raise self.fail(node, "division by zero")
            return ARITH[type(node.op)](left, right)
        return None


def _reported_compare(node: ast.AST) -> ast.Compare | None:
    """The comparison whose left side a row reports: the first one, reading left to right."""
    if isinstance(node, ast.Compare):
        return node
    if isinstance(node, ast.BoolOp):
        return _reported_compare(node.values[0])
    if isinstance(node, ast.UnaryOp):
        return _reported_compare(node.operand)
    return None


def _reported_index(operands: list[ast.expr]) -> int:
    """The left side, unless it is a literal bound as in ``0 <= x <= 1``."""
    for index, operand in enumerate(operands):
        if any(isinstance(n, (ast.Subscript, ast.Call)) for n in ast.walk(operand)):
            return index
    return 0


def _render_expected(node: ast.Compare, numbers: list[float], index: int) -> str:
    parts = ["value" if i == index else _fmt(n) for i, n in enumerate(numbers)]
    text = parts[0]
    for op, part in zip(node.ops, parts[1:], strict=True):
        text += f" {COMPARE[type(op)][0]} {part}"
    return text.removeprefix("value ") if index == 0 and len(numbers) == 2 else text


def _fmt(value: float | None) -> str:
    return number_text(value, 6, absent="n/a")


class _Env:
    """Evaluation of a validated tree against one run and its baseline."""

    def __init__(self, metrics: RunMetrics, baseline: Baseline | None) -> None:
        self.metrics = metrics
        self.baseline = baseline

    def truth(self, node: ast.AST) -> bool:
        if isinstance(node, ast.Compare):
            left = self.number(node.left)
            for op, right_node in zip(node.ops, node.comparators, strict=True):
                right = self.number(right_node)
                if not COMPARE[type(op)][1](left, right):
                    return False
                left = right
            return True
        if isinstance(node, ast.BoolOp):
            if isinstance(node.op, ast.And):
                return all(self.truth(v) for v in node.values)
            return any(self.truth(v) for v in node.values)
        assert isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not)
        return not self.truth(node.operand)

    def number(self, node: ast.AST) -> float:
        if isinstance(node, ast.Constant):
            assert isinstance(node.value, (int, float))  # the validator allows number literals only
            return float(node.value)
        if isinstance(node, ast.UnaryOp):
            value = self.number(node.operand)
            return -value if isinstance(node.op, ast.USub) else value
        if isinstance(node, ast.BinOp):
            left, right = self.number(node.left), self.number(node.right)
            if isinstance(node.op, ast.Div) and right == 0:
                raise EvaluationError("division by zero")
            return ARITH[type(node.op)](left, right)
        if isinstance(node, ast.Subscript):
            step = int_constant(node.slice)
            assert step is not None  # the validator allows integer literals only
            return self.step_value(self.series(node.value), step)
        assert isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
        return self.call(node.func.id, node)

    def series(self, node: ast.AST) -> Series:
        name = node.slice.value  # type: ignore[attr-defined]
        values = self.metrics.series(name)
        if not values:
            raise EvaluationError(f"metric {name!r} was not logged")
        return Series(name, values)

    @staticmethod
    def step_value(series: Series, step: int) -> float:
        steps = sorted(series)
        if step < 0:
            if -step > len(steps):
                raise EvaluationError(
                    f"{series.name} has only {len(steps)} steps, asked for {step}")
            step = steps[step]
        if step not in series:
            raise EvaluationError(f"{series.name} was not logged at step {step} "
                                  f"(logged steps {steps[0]}-{steps[-1]})")
        return float(series[step])

    def call(self, name: str, node: ast.Call) -> float:
        if name == "baseline":
            metric = node.args[0].value  # type: ignore[attr-defined]
            if self.baseline is None:
                raise EvaluationError(f'baseline("{metric}") needs a baseline; none was given')
            value = self.baseline.value(metric)
            if value is None:
                raise EvaluationError(f"the baseline has no value for {metric!r}")
            return value
        kwargs = {kw.arg: kw.value for kw in node.keywords}
        try:
            if name in ("min", "max"):
                if len(node.args) == 1:
                    return reductions.extreme(list(self.series(node.args[0]).values()), name)
                return reductions.extreme([self.number(a) for a in node.args], name)
            series = self.series(node.args[0])
            if name == "ratio_above":
                return reductions.ratio_above(series, self.number(node.args[1]))
            start_node = node.args[1] if len(node.args) > 1 else kwargs.get("range_start")
            end_node = node.args[2] if len(node.args) > 2 else kwargs.get("range_end")
            start = 1 if start_node is None else int_constant(start_node) or 0
            end = 0 if end_node is None else int_constant(end_node) or 0
            if name == "median":
                return reductions.nemo_median(series, start, end, name=series.name)
            top_node = node.args[3] if len(node.args) > 3 else kwargs.get("ignore_top_p")
            top = 0.0 if top_node is None else self.number(top_node)
            return reductions.nemo_mean(series, start, end, top, name=series.name)
        except reductions.ReductionError as exc:
            raise EvaluationError(str(exc)) from None
