"""The check vocabulary: which Python syntax a check expression may use, checked statically.

:class:`Validator` walks the parsed tree once, before any run: every node must be in the
vocabulary (see :mod:`workbook.checks.expression`) and carry the right kind of value (a number,
a series, a truth value), so ``data["m"] > 1`` (a series compared with a number) is refused up
front, like ``data.__class__``, rather than failing at 3 a.m. The message quotes the offending
source text.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable
from typing import Any

from workbook.errors import ExpressionError

COMPARE: dict[type, tuple[str, Callable[[Any, Any], bool]]] = {
    ast.Lt: ("<", operator.lt), ast.LtE: ("<=", operator.le), ast.Gt: (">", operator.gt),
    ast.GtE: (">=", operator.ge), ast.Eq: ("==", operator.eq), ast.NotEq: ("!=", operator.ne),
}
ARITH: dict[type, Callable[[float, float], float]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
}
FUNCTIONS = ("min", "max", "mean", "median", "ratio_above", "baseline")
# what a rejected construct is called in the message
FORBIDDEN = {
    ast.Attribute: "attribute access", ast.Lambda: "lambda", ast.ListComp: "comprehension",
    ast.SetComp: "comprehension", ast.DictComp: "comprehension", ast.GeneratorExp: "generator",
    ast.Starred: "starred argument", ast.NamedExpr: "assignment expression",
    ast.JoinedStr: "f-string",
    ast.IfExp: "conditional expression", ast.List: "list", ast.Tuple: "tuple", ast.Dict: "dict",
    ast.Set: "set", ast.Slice: "slice", ast.Await: "await", ast.Yield: "yield",
    ast.YieldFrom: "yield", ast.FormattedValue: "f-string",
}


def is_data(node: ast.AST) -> bool:
    return (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name)
            and node.value.id == "data" and isinstance(node.slice, ast.Constant)
            and isinstance(node.slice.value, str))


def int_constant(node: ast.AST) -> int | None:
    """An integer literal, possibly negated, else None."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = int_constant(node.operand)
        return None if inner is None else -inner
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.isdigit():
        return int(node.value)  # NeMo-RL writes steps as strings: data["m"]["30"]
    return None


class Validator:
    """Static walk: every node must be in the vocabulary and have the right kind of value."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, node: ast.AST, why: str) -> ExpressionError:
        part = ast.get_source_segment(self.source, node) or type(node).__name__
        return ExpressionError(f"check {self.source!r} is not allowed: {why}: `{part}`")

    def kind(self, node: ast.AST) -> str:
        for forbidden, label in FORBIDDEN.items():
            if isinstance(node, forbidden):
                raise self.fail(node, f"{label} is outside the check vocabulary")
        if isinstance(node, ast.Compare):
            if not all(type(op) in COMPARE for op in node.ops):
                raise self.fail(node, "only <, <=, >, >=, ==, != compare")
            for operand in (node.left, *node.comparators):
                self.number(operand)
            return "bool"
        if isinstance(node, ast.BoolOp):
            for value in node.values:
                self.boolean(value)
            return "bool"
        if isinstance(node, ast.UnaryOp):
            if isinstance(node.op, ast.Not):
                self.boolean(node.operand)
                return "bool"
            if isinstance(node.op, (ast.USub, ast.UAdd)):
                self.number(node.operand)
                return "number"
            raise self.fail(node, "operator outside the check vocabulary")
        if isinstance(node, ast.BinOp):
            if type(node.op) not in ARITH:
                raise self.fail(node, "only + - * / are allowed")
            self.number(node.left)
            self.number(node.right)
            return "number"
        if isinstance(node, ast.Constant):
            if type(node.value) in (int, float):
                return "number"
            if isinstance(node.value, str):
                return "str"
            raise self.fail(node, "only numbers and metric names are allowed as literals")
        if isinstance(node, ast.Name):
            if "__" in node.id:
                raise self.fail(node, "dunder names are outside the check vocabulary")
            if node.id == "data":
                return "data"
            if node.id in FUNCTIONS:
                raise self.fail(node, f"{node.id} must be called")
            raise self.fail(node, f"name {node.id!r} is not in the vocabulary "
                                  f"(data, {', '.join(FUNCTIONS)})")
        if isinstance(node, ast.Subscript):
            return self.subscript(node)
        if isinstance(node, ast.Call):
            return self.call(node)
        raise self.fail(node, f"{type(node).__name__} is outside the check vocabulary")

    def number(self, node: ast.AST) -> None:
        kind = self.kind(node)
        if kind == "series":
            raise self.fail(node, "a series must be reduced first (mean, median, min, max, "
                                  "ratio_above) or indexed by a step")
        if kind != "number":
            raise self.fail(node, "expected a number")

    def boolean(self, node: ast.AST) -> None:
        if self.kind(node) != "bool":
            raise self.fail(node, "and/or/not join comparisons only")

    def subscript(self, node: ast.Subscript) -> str:
        base = self.kind(node.value)
        if base == "data":
            if isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
                if "__" in node.slice.value:
                    raise self.fail(node, "dunder names are outside the check vocabulary")
                return "series"
            raise self.fail(node, "data is indexed by a metric name string")
        if base == "series":
            if int_constant(node.slice) is None:
                raise self.fail(node, "a series is indexed by an integer step literal")
            return "number"
        raise self.fail(node, "only data[...] can be subscripted")

    def call(self, node: ast.Call) -> str:
        if isinstance(node.func, ast.Name) and "__" in node.func.id:
            raise self.fail(node, "dunder names are outside the check vocabulary")
        if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS:
            raise self.fail(node, f"only {', '.join(FUNCTIONS)} can be called")
        name, args = node.func.id, node.args
        allowed_kw = {"mean": {"range_start", "range_end", "ignore_top_p"},
                      "median": {"range_start", "range_end"}}.get(name, set())
        for kw in node.keywords:
            if kw.arg is None or kw.arg not in allowed_kw:
                raise self.fail(node, f"{name}() takes no keyword {kw.arg or '**'!r}")
        if name == "baseline":
            if len(args) != 1 or node.keywords or not (
                    isinstance(args[0], ast.Constant) and isinstance(args[0].value, str)):
                raise self.fail(
                    node, 'baseline() takes one metric name, e.g. baseline("timing_s/step")')
            return "number"
        if name in ("min", "max"):
            if len(args) == 1 and self.kind(args[0]) == "series":
                return "number"
            if len(args) < 2:
                raise self.fail(node, f"{name}() takes one series or several numbers")
            for arg in args:
                self.number(arg)
            return "number"
        if name == "ratio_above":
            if len(args) != 2:
                raise self.fail(node, "ratio_above() takes a series and a threshold")
            self.series(args[0])
            self.number(args[1])
            return "number"
        limit = 4 if name == "mean" else 3
        if not args or len(args) > limit:
            raise self.fail(node, f"{name}() takes a series and up to {limit - 1} more arguments")
        self.series(args[0])
        ranges = list(args[1:3]) + [kw.value for kw in node.keywords if kw.arg != "ignore_top_p"]
        for bound in ranges:
            if int_constant(bound) is None or isinstance(bound, ast.Constant) and isinstance(
                    bound.value, str):
                raise self.fail(bound, "a range bound is an integer literal")
        for extra in args[3:] + [kw.value for kw in node.keywords if kw.arg == "ignore_top_p"]:
            self.number(extra)
        return "number"

    def series(self, node: ast.AST) -> None:
        if self.kind(node) != "series":
            raise self.fail(node, 'expected a series such as data["actor/pg_loss"]')
