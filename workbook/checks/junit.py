"""JUnit XML for CI systems, through junitparser (the one module that imports it).

A verdict becomes one ``<testsuite>``: a test case for the run itself (an error when the run
failed or was stopped, with the diagnosis; a failure when it regressed) and one per check row
(``fail`` a failure, ``error`` an error, ``not_measured``/``not_comparable`` skipped with the
reason, ``improved`` a pass whose ``system-out`` says by how much; an improved run's case passes
and the suite's ``verdict`` property says ``improved``; ``suspect`` likewise a pass whose
``system-out`` says it waits for another night beyond the band). A suite of scenarios writes one file
holding a suite per scenario. CI uploads the file, so every message, property and output in it
is redacted, element by element, on the way out.

An alignment of two runs (``workbook align --junit``) is a suite of its own: one test case per
metric, a failure for each thresholded metric beyond its threshold (its mean error and the first
step beyond), a case for the steps B reached and, when judged, the throughput ratio; the
warnings (a run not made deterministic) are the suite's ``system-out``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from junitparser import Error, Failure, JUnitXml, Skipped, SystemOut, TestCase, TestSuite

from workbook.checks.rows import ERROR, FAIL, IMPROVED, SUSPECT
from workbook.checks.verdict import Verdict
from workbook.core.layout import write_redacted
from workbook.core.status import Verdict as Word

if TYPE_CHECKING:  # only workbook align loads the alignment
    from workbook.checks.aligned_runs import Alignment


def verdict_suite(verdict: Verdict, name: str, *, time_s: float | None = None,
                  properties: Mapping[str, object] | None = None) -> TestSuite:
    """One ``<testsuite>`` for a judged run (``properties`` such as the report path)."""
    suite = TestSuite(name)
    for key, value in {"verdict": verdict.status, "reason": verdict.reason,
                       "last_step": verdict.last_step, "required_step": verdict.required_step,
                       **dict(properties or {})}.items():
        suite.add_property(key, "" if value is None else str(value))
    suite.add_testcase(_run_case(verdict, name, time_s))
    for row in verdict.rows:
        case = TestCase(row.name, classname=f"{name}.{row.kind}")
        detail = f"value: {row.value}\nexpected: {row.expected}\n{row.message}".strip()
        if row.status == FAIL:
            case.result = [_text(Failure(row.message or "check failed", row.kind), detail)]
        elif row.status == ERROR:
            case.result = [_text(Error(row.message or "could not be computed", row.kind), detail)]
        elif row.status == IMPROVED:  # a pass: CI stays green, the log says the baseline is stale
            case.system_out = f"{IMPROVED}: {detail}"
        elif row.status == SUSPECT:  # a pass until the nights after it confirm the failure
            case.system_out = f"{SUSPECT}: {detail}"
        elif not row.judged:
            case.result = [Skipped(row.message or row.status.replace("_", " "))]
        suite.add_testcase(case)
    suite.update_statistics()
    return suite


def skipped_suite(name: str, why: str) -> TestSuite:
    """A ``<testsuite>`` for a scenario that did not run (its run case skipped with ``why``)."""
    suite = TestSuite(name)
    case = TestCase("run", classname=name)
    case.result = [Skipped(why)]
    suite.add_testcase(case)
    suite.update_statistics()
    return suite


def alignment_suite(alignment: Alignment, *, page: str | None = None) -> TestSuite:
    """One ``<testsuite>`` named ``alignment <A> vs <B>`` (run ids; the scenario a property)."""
    from workbook.checks.aligned_runs import steps_expected
    from workbook.checks.alignment import steps_problem

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
    return "n/a" if value is None else f"{value:.3g} %"


def write_junit(suites: Iterable[TestSuite], path: Path) -> Path:
    """Write ``<testsuites>`` holding ``suites`` to ``path`` (atomically)."""
    xml = JUnitXml("workbook")
    for suite in suites:
        xml.add_testsuite(suite)
    xml.update_statistics()
    body = xml.tostring()
    text = body.decode("utf-8") if isinstance(body, bytes) else str(body)
    return write_redacted(Path(path), text, form="xml")  # messages quote logs: by element


def _run_case(verdict: Verdict, name: str, time_s: float | None) -> TestCase:
    case = TestCase("run", classname=name, time=time_s)
    diagnosis = verdict.diagnosis or {}
    detail = "\n".join([str(diagnosis.get("summary") or ""),
                        *[str(line) for line in diagnosis.get("evidence") or []]]).strip()
    if verdict.status in (Word.FAILED, Word.STOPPED):
        case.result = [_text(Error(verdict.reason, verdict.status), detail)]
    elif verdict.status == Word.REGRESSED:
        case.result = [_text(Failure(verdict.reason, Word.REGRESSED.value), detail)]
    case.system_out = f"verdict: {verdict.status}: {verdict.reason}"
    return case


def _text(result: Failure | Error, text: str) -> Failure | Error:
    if text:  # a new result has no text; leave it so when there is none
        result.text = text
    return result

