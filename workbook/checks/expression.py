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
The value a row reports is the computed left side of the (first) comparison, never split text.
"""

from __future__ import annotations

import ast
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from workbook.checks import reductions
from workbook.checks.vocabulary import ARITH, COMPARE, Validator, int_constant, is_data
from workbook.errors import ExpressionError
from workbook.metrics.model import RunMetrics

if TYPE_CHECKING:
    from workbook.checks.baseline import Baseline

MAX_LENGTH = 2000
MAX_NODES = 400


class EvaluationError(Exception):
    """A valid expression cannot be computed on this run (metric or step missing, ...)."""


@dataclass(frozen=True)
class Outcome:
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

    def evaluate(self, metrics: RunMetrics, baseline: Baseline | None = None) -> Outcome:
        """Compute the check; raises :class:`EvaluationError` when it cannot be computed."""
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
        return Outcome(passed, value, expected, message)


def compile_expression(text: str, name: str | None = None) -> Expression:
    """Parse and validate ``text``; raises :class:`ExpressionError` naming the offending part."""
    if not isinstance(text, str) or not text.strip():
        raise ExpressionError("empty check expression")
    source = text.strip()
    if len(source) > MAX_LENGTH:
        raise ExpressionError(f"check expression longer than {MAX_LENGTH} characters")
    try:
        tree = ast.parse(source, mode="eval")
    except SyntaxError as exc:
        raise ExpressionError(f"check {source!r} is not valid: {exc.msg}") from None
    except (ValueError, RecursionError, MemoryError):
        raise ExpressionError(f"check {source!r} is not valid: it cannot be parsed") from None
    if sum(1 for _ in ast.walk(tree)) > MAX_NODES:
        raise ExpressionError(f"check {source!r} is too large (more than {MAX_NODES} parts)")
    kind = Validator(source).kind(tree.body)
    if kind != "bool":
        raise ExpressionError(
            f"check {source!r} must be a comparison such as `mean(data[\"timing_s/step\"]) < 10`")
    return Expression(source, name or source, tree)


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
    return "n/a" if value is None else f"{value:.6g}"


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
