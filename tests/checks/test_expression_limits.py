"""Expressions are validated with their evaluation limits, and evaluating one never crashes.

What the vocabulary allows but no run could compute (a literal no float holds, a step no run
reaches, an ``ignore_top_p`` outside [0, 1], a constant that divides by zero) is refused when the
check is compiled, so ``validate`` catches it instead of an error row after a night of training.
What depends on the run is an EvaluationError (an ``error`` row), never an internal error.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workbook.checks.expression import MAX_LENGTH, EvaluationError, compile_expression
from workbook.checks.spec import parse_checks
from workbook.errors import ExpressionError
from workbook.metrics.model import RunMetrics

HUGE = "1" * 1980  # a 1,980-digit literal: valid Python, no float holds it

REFUSED = [
    (f'data["m"][1] < {HUGE}', "must be finite"),
    (f'data["m"][1] > -{HUGE}', "must be finite"),
    ('mean(data["m"]) < 1e999', "must be finite"),
    ('mean(data["m"]) < 1e308 * 10', "overflows"),
    ('mean(data["m"]) < -1e308 - 1e308', "overflows"),
    ('mean(data["m"]) < 1 / 0', "division by zero"),
    ('mean(data["m"]) < 2 / (1 - 1)', "division by zero"),
    ('mean(data["m"], ignore_top_p=2) < 1', "ignore_top_p"),
    ('mean(data["m"], ignore_top_p=-0.5) < 1', "ignore_top_p"),
    ('mean(data["m"], 1, 0, 1.5) < 1', "ignore_top_p"),
    ('mean(data["m"], 1, 0, 0.5 + 0.6) < 1', "ignore_top_p"),
    ('data["m"][10000000000] > 0', "a step"),
    ('data["m"][-10000000000] > 0', "a step"),
    ('data["m"]["99999999999"] > 0', "a step"),
    ('mean(data["m"], 10000000000) > 0', "a range bound"),
    ('median(data["m"], range_end=-10000000000) > 0', "a range bound"),
    ('not ' * 300 + 'data["m"][1] > 0', "too large"),
    ('data["m"][1] > ' + "1" * MAX_LENGTH, "longer than"),
]


@pytest.mark.parametrize("text, words", REFUSED, ids=[t[:40] + "|" + w for t, w in REFUSED])
def test_what_evaluation_could_never_compute_is_refused_when_compiled(text: str,
                                                                      words: str) -> None:
    with pytest.raises(ExpressionError) as raised:
        compile_expression(text)
    assert words in raised.value.message
    assert len(raised.value.message) < 400  # a prefix of the source, not all of it


ACCEPTED = [
    'mean(data["m"]) < 1e308',
    'mean(data["m"], ignore_top_p=0) < 11',
    'mean(data["m"], ignore_top_p=1) < 11',
    'mean(data["m"], 1, 0, 0.25 + 0.25) < 11',
    'data["m"][1] > 0 or data["m"][1000000000] > 0',
    'mean(data["m"], -1000000000) < 11',
    'mean(data["m"]) / (data["m"][1] - 0.5) > 0',  # the divisor is the run's: judged then
]


@pytest.mark.parametrize("text", ACCEPTED)
def test_the_limits_themselves_are_accepted_and_evaluate(text: str) -> None:
    metrics = _run({s: float(s) for s in range(1, 11)})
    outcome = compile_expression(text).evaluate(metrics)
    assert outcome.passed


def _run(values: dict[int, float], name: str = "m") -> RunMetrics:
    run = RunMetrics()
    for step, value in values.items():
        run.put(step, name, value, "test")
    return run


OVERFLOWING_RUNS = [
    ({1: 1e308, 2: 1e308}, 'mean(data["m"]) < 1'),
    ({1: math.inf, 2: -math.inf}, 'mean(data["m"]) < 1'),
    ({1: 1e308, 2: 1e308, 3: 1e308, 4: 1e308}, 'mean(data["m"], 1, 0, 0.5) < 1'),
]


@pytest.mark.parametrize("values, text", OVERFLOWING_RUNS, ids=[t for _, t in OVERFLOWING_RUNS])
def test_a_run_whose_numbers_overflow_fails_its_check_not_the_workbook(
        values: dict[int, float], text: str) -> None:
    # fsum raises on 1e308 + 1e308 and on inf - inf; the mean is a number (or NaN) instead
    assert not compile_expression(text).evaluate(_run(values)).passed


def test_a_scenario_check_with_a_huge_literal_is_a_problem_of_its_field() -> None:
    spec, problems = parse_checks(
        {"expressions": ['data["m"][-1] > 0', {"name": "big", "expr": f'data["m"][1] < {HUGE}'}]},
        params_dir=Path("."))

    assert [field for field, _ in problems] == ["checks.expressions[1]"]
    assert "must be finite" in problems[0][1]
    assert len(spec.expressions) == 1


FLOATS = st.floats(allow_nan=True, allow_infinity=True) | st.sampled_from(
    [1e308, -1e308, 5e-324, 0.0, -0.0])
EXPRESSIONS = [
    'mean(data["m"]) < 1', 'median(data["m"], -3) >= 0', 'max(data["m"]) <= 1e308',
    'min(data["m"]) > -1e308', 'ratio_above(data["m"], 0.5) <= 1', 'data["m"][-1] * 1e308 < 1',
    'mean(data["m"], 1, 0, 0.5) != 0', 'mean(data["m"]) / data["m"][1] > 0',
    'data["m"][1] - data["m"][-1] == 0 and mean(data["m"]) > 0',
    'mean(data["m"], ignore_top_p=data["m"][1]) > 0',
]


@settings(max_examples=200, deadline=None)
@given(values=st.lists(FLOATS, min_size=1, max_size=12), text=st.sampled_from(EXPRESSIONS))
def test_evaluating_a_compiled_check_on_any_numbers_never_raises_anything_else(
        values: list[float], text: str) -> None:
    metrics = _run(dict(enumerate(values, start=1)))
    try:
        outcome = compile_expression(text).evaluate(metrics)
    except EvaluationError as exc:
        assert str(exc)
    else:
        assert isinstance(outcome.passed, bool)


@settings(max_examples=300, deadline=None)
@given(text=st.text(alphabet=st.sampled_from(list('data["m"]()[]<>=!-+*/ .,0123456789e'
                                                  'meanmaxinotrd_'), ), max_size=80))
def test_compiling_any_text_is_a_check_or_an_expression_error(text: str) -> None:
    try:
        compile_expression(text)
    except ExpressionError as exc:
        assert len(exc.message) < 400


@pytest.mark.parametrize(
    "values, expected",
    [
        pytest.param([1e308, 1e308], 1e308, id="finite-sum-beyond-a-float"),
        pytest.param([math.inf, -math.inf], math.nan, id="both-infinities"),
        pytest.param([math.inf, 1.0], math.inf, id="one-infinity"),
        pytest.param([-math.inf, -math.inf], -math.inf, id="the-same-infinity-twice"),
        pytest.param([math.nan, 1.0], math.nan, id="nan"),
        pytest.param([0.1, 0.2, 0.3], 0.2, id="plain"),
    ],
)
def test_a_window_mean_is_a_number_never_an_exception(values, expected):
    from workbook.checks.reductions import reduce_series

    got, _ = reduce_series(dict(enumerate(values, 1)), "mean", (1, len(values)))
    assert (math.isnan(got) and math.isnan(expected)) or got == pytest.approx(expected)
