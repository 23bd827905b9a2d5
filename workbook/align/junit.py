"""An alignment as a JUnit suite (``workbook align --junit``): a case per metric (a failure beyond
its threshold), for the steps B reached and the throughput ratio; warnings in ``system-out``."""

from __future__ import annotations

from junitparser import Failure, SystemOut, TestCase, TestSuite

from workbook.align.compute import steps_problem
from workbook.align.runs import Alignment, steps_expected
from workbook.core.values import EMPTY, number_text


def alignment_suite(alignment: Alignment, *, page: str | None = None) -> TestSuite:
    """One ``<testsuite>`` named ``alignment <A> vs <B>`` (run ids; the scenario a property)."""
    a, b = alignment.a, alignment.b
    name = f"alignment {a.run_id} vs {b.run_id}"
    suite = TestSuite(name)
    for key, value in {"verdict": alignment.status, "reason": alignment.judgement.reason,
                       "scenario": a.scenario, "run_a": a.path, "run_b": b.path,
                       "page": page}.items():
        suite.add_property(key, "" if value is None else str(value))
    steps = TestCase("steps reached", classname=name)
    short_of = steps_problem(b.steps_reached, steps_expected(a))
    if short_of:
        steps.result = [Failure(short_of, "steps")]
    suite.add_testcase(steps)
    for m in alignment.metrics:
        case = TestCase(m.metric, classname=name)
        case.system_out = (f"{m.status}: mean error {_pct(m.mae)}, largest {_pct(m.max_error)}"
                           f"{'' if m.threshold is None else f', threshold {m.threshold:g} %'}"
                           f" over {len(m.steps)} steps; paired test: "
                           f"{m.paired.note if m.paired else 'not computed'}")
        if not m.holds:
            case.result = [Failure(m.problem(), m.status)]
        suite.add_testcase(case)
    rate = alignment.throughput
    if rate.minimum is not None:
        case = TestCase("throughput ratio", classname=name)
        if not rate.holds:
            case.result = [Failure(rate.problem(), "throughput")]
        suite.add_testcase(case)
    if alignment.judgement.warnings:
        suite.append(SystemOut("\n".join(alignment.judgement.warnings)))
    suite.update_statistics()
    return suite


def _pct(value: float | None) -> str:
    return EMPTY if value is None else f"{number_text(value, 3)} %"
