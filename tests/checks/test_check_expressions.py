"""The safe evaluator: NeMo-RL's vocabulary works, everything else is refused before a run."""

from __future__ import annotations

import pytest

from workbook.checks.baseline import Baseline, BaselineMetric
from workbook.checks.expression import EvaluationError, compile_expression
from workbook.errors import ExpressionError
from workbook.metrics.model import RunMetrics

HOSTILE = [
    '__import__("os")',
    '__import__("os").system("true") == 0',
    'data.__class__ > 1',
    'data["x"].__class__ == 1',
    '(lambda: 1)() > 0',
    '[x for x in ()]',
    '{x: 1 for x in ()} == 1',
    'sum(x for x in (1,)) > 0',
    'open("f")',
    'open("/etc/passwd").read() == ""',
    'eval("1") == 1',
    'exec("import os") == None',
    'globals()["data"] > 1',
    'getattr(data, "keys") == 1',
    'mean(*[data["x"]]) > 0',
    'mean(data["x"], **{"range_start": 1}) > 0',
    '(y := 1) > 0',
    'f"{data}" == "x"',
    '().__class__.__bases__[0] == 1',
    '[1, 2][0] > 0',
    '1 if data else 2',
    'data["__class__"][1] > 0',
    'mean.__globals__ == 1',
    'import os',
    'x = 1',
    'True == 1',
    'data["x"] > 1',
    'mean(data["x"]) ** 1000 > 1',
    'data > 1',
    'baseline(data["x"]) > 1',
    'mean(data["x"], "1") > 1',
    'mean(data["x"])',
    'max(1) > 0',
    '1 in data',
]


@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_expression_is_rejected_with_its_text(text: str) -> None:
    with pytest.raises(ExpressionError) as raised:
        compile_expression(text)
    assert text.strip()[:20] in raised.value.message


def test_rejection_names_the_offending_part() -> None:
    with pytest.raises(ExpressionError, match=r"attribute access.*`data\.__class__`"):
        compile_expression("data.__class__ > 1")
    with pytest.raises(ExpressionError, match=r"only min, max.*`open\(\"f\"\)`"):
        compile_expression('open("f") > 1')


def run_with(series: dict[int, float], name: str = "m") -> RunMetrics:
    run = RunMetrics()
    for step, value in series.items():
        run.put(step, name, value, "test")
    return run


RUN = run_with({s: float(s) for s in range(1, 11)})  # m = 1..10 at steps 1..10


@pytest.mark.parametrize("text,value,passed", [
    ('data["m"][3] == 3', 3.0, True),
    ('data["m"]["7"] == 7', 7.0, True),              # NeMo-RL writes steps as strings
    ('data["m"][-1] == 10', 10.0, True),
    ('min(data["m"]) >= 1', 1.0, True),
    ('max(data["m"]) < 10', 10.0, False),
    ('max(data["m"][2], data["m"][5]) == 5', 5.0, True),
    ('mean(data["m"]) == 5.5', 5.5, True),
    ('mean(data["m"], 3, 6) == 4', 4.0, True),        # steps 3, 4, 5: end-exclusive
    ('mean(data["m"], -5) == 8', 8.0, True),          # the last five: 6..10
    ('mean(data["m"], -6, -1) == 7', 7.0, True),      # NeMo-RL's example: 5..9
    ('mean(data["m"], ignore_top_p=0.2) == 4.5', 4.5, True),
    ('mean(data["m"], range_start=9) == 9.5', 9.5, True),
    ('median(data["m"], 1, 4) == 2', 2.0, True),
    ('median(data["m"]) > 6', 5.5, False),
    ('ratio_above(data["m"], 8) == 0.3', 0.3, True),
    ('-data["m"][2] + 2 * 3 / 2 == 1', 1.0, True),
    ('0 <= mean(data["m"]) <= 1', 5.5, False),        # the literal bound is not the value
    ('-0.5 * 2 < mean(data["m"]) < 10', 5.5, True),
    ('mean(data["m"]) > 5 and not max(data["m"]) > 100', 5.5, True),
    ('mean(data["m"]) > 50 or data["m"][1] == 1', 5.5, True),
    ('mean(data["m"]) < 1.2 * baseline("m")', 5.5, True),
])
def test_vocabulary_computes_the_left_side(text: str, value: float, passed: bool) -> None:
    baseline = Baseline({"m": BaselineMetric(value=5.0)})

    outcome = compile_expression(text).evaluate(RUN, baseline)

    assert outcome.value == pytest.approx(value)
    assert outcome.passed is passed


def test_resumed_run_offsets_negative_ranges() -> None:
    resumed = run_with({s: float(s) for s in range(101, 105)})  # resumed from step 100

    assert compile_expression('mean(data["m"], -2) == 103.5').evaluate(resumed).passed
    assert compile_expression('data["m"][-1] == 104').evaluate(resumed).passed


def test_expected_shows_the_computed_right_side() -> None:
    outcome = compile_expression('mean(data["m"]) < 1.2 * baseline("m")').evaluate(
        RUN, Baseline({"m": BaselineMetric(value=4.0)}))

    assert not outcome.passed
    assert outcome.expected == "< 4.8"
    assert outcome.message == "5.5 is not < 4.8"


@pytest.mark.parametrize("text,why", [
    ('data["absent"][1] > 0', "'absent' was not logged"),
    ('data["m"][42] > 0', "not logged at step 42"),
    ('mean(data["m"], 20, 30) > 0', "no value in range"),
    ('baseline("m") > 0', "needs a baseline"),
    ('mean(data["m"]) / (data["m"][1] - 1) > 0', "division by zero"),
    # a literal out of range is refused when the check is compiled (test_expression_limits.py);
    # one computed from the run can only fail here
    ('mean(data["m"], ignore_top_p=data["m"][2]) > 0', "ignore_top_p"),
])
def test_uncomputable_check_says_why(text: str, why: str) -> None:
    with pytest.raises(EvaluationError, match=why):
        compile_expression(text).evaluate(RUN, None)


def test_nan_never_passes() -> None:
    run = run_with({1: 0.1, 2: float("nan"), 3: 0.2})

    outcome = compile_expression('max(data["m"]) < 1').evaluate(run)

    assert not outcome.passed and outcome.message == "value is NaN"


def test_or_short_circuits_past_a_missing_metric() -> None:
    outcome = compile_expression('data["m"][1] == 1 or data["absent"][1] > 0').evaluate(RUN)

    assert outcome.passed and outcome.value == 1.0 and outcome.expected == "true"


@pytest.mark.parametrize("text", ["-" * 1990 + "1 < 2", "(" * 500 + "1" + ")" * 500 + " < 2",
                                  "1" + " + 1" * 600 + " < 2", "x\x00 < 1", ""])
def test_oversized_or_unparsable_expression_is_rejected(text: str) -> None:
    with pytest.raises(ExpressionError):
        compile_expression(text)
