"""The verdict on a run: every check as a row, then passed, regressed or failed.

- ``failed`` (exit 3): the run crashed, was stopped or timed out, produced no metrics, or stopped
  before the step the checks need (``min_steps``, by default the end of the widest window a
  baseline comparison uses) -- with the diagnosis summary when there is one;
- ``regressed`` (exit 1): a check failed, or could not be computed (an ``error`` row: a missing
  metric, a window the run does not cover); never a silent pass;
- ``passed`` (exit 0): every row passed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workbook.checks.baseline import Baseline
from workbook.checks.comparison import active_policies, compares, policy_rows
from workbook.checks.expression import EvaluationError, Expression
from workbook.checks.rows import CheckRow, error_row
from workbook.checks.spec import CheckSpec
from workbook.errors import EXIT_PASSED, EXIT_REGRESSED, EXIT_RUN_FAILED
from workbook.metrics.model import RunMetrics
from workbook.runs import write_atomic

VERDICTS = {"passed": EXIT_PASSED, "regressed": EXIT_REGRESSED, "failed": EXIT_RUN_FAILED}


@dataclass
class Verdict:
    """Rows plus the one-word outcome and a one-line reason."""

    status: str
    reason: str
    rows: list[CheckRow] = field(default_factory=list)
    last_step: int | None = None
    required_step: int | None = None
    baseline: dict[str, Any] | None = None
    diagnosis: dict[str, Any] | None = None
    run_status: str | None = None

    @property
    def exit_code(self) -> int:
        return VERDICTS[self.status]

    def count(self, status: str) -> int:
        return sum(1 for row in self.rows if row.status == status)

    def summary(self) -> dict[str, Any]:
        """``{"status", "reason", "exit_code", "counts"}``: what run.json and an index need."""
        return {"status": self.status, "reason": self.reason, "exit_code": self.exit_code,
                "counts": {s: self.count(s) for s in ("pass", "fail", "error")}}

    def to_dict(self) -> dict[str, Any]:
        """checks.json: the summary under ``verdict``, then context and every row."""
        return {
            "verdict": self.summary(),
            "last_step": self.last_step, "required_step": self.required_step,
            "run_status": self.run_status, "baseline": self.baseline,
            "diagnosis": self.diagnosis, "rows": [row.to_dict() for row in self.rows],
        }

    def write_json(self, path: Path) -> Path:
        """Write ``checks.json`` atomically (readers never see half a file)."""
        return write_atomic(Path(path), json.dumps(self.to_dict(), indent=2, default=str) + "\n")

    def write_junit(self, path: Path, suite: str = "workbook.checks") -> Path:
        from workbook.checks.junit import junit_xml  # stdlib XML only, kept out of the hot path

        return write_atomic(Path(path), junit_xml(self, suite))


def judge(metrics: RunMetrics, spec: CheckSpec, *, baseline: Baseline | None,
          run: dict[str, Any] | None = None, diagnosis: dict[str, Any] | None = None) -> Verdict:
    """Judge one run's metrics against the spec and baseline; ``run`` is run.json's content."""
    run = run or {}
    diagnosis = diagnosis or run.get("diagnosis") or None
    rows: list[CheckRow] = []
    if run:
        rows.append(_run_row(run, diagnosis))
    required = _required_step(spec, baseline)
    last = metrics.last_step
    if last is None:
        rows.append(CheckRow(name="metrics produced", kind="run", status="fail",
                             expected="at least one step", message="no metrics were produced"))
    else:
        if required is not None:
            rows.append(_step_row(last, required, spec))
        rows += policy_rows(metrics, spec, baseline)
        rows += [expression_row(e, metrics, baseline) for e in spec.expressions]
    verdict = Verdict(*_outcome(rows, diagnosis), rows=rows, last_step=last,
                      required_step=required, run_status=run.get("status"),
                      diagnosis=diagnosis)
    if baseline is not None:
        verdict.baseline = {"path": str(baseline.path) if baseline.path else None,
                            "scenario": baseline.scenario, "hardware": baseline.hardware,
                            "provenance": baseline.provenance}
    return verdict


def expression_row(expression: Expression, metrics: RunMetrics,
                   baseline: Baseline | None) -> CheckRow:
    names = expression.metrics
    info = {"metric": names[0] if names else None, "source": expression.text}
    try:
        outcome = expression.evaluate(metrics, baseline)
    except EvaluationError as exc:
        return error_row(expression.name, "expression", str(exc), **info)
    return CheckRow(name=expression.name, kind="expression",
                    status="pass" if outcome.passed else "fail", value=outcome.value,
                    expected=outcome.expected, message=outcome.message, **info)


def _required_step(spec: CheckSpec, baseline: Baseline | None) -> int | None:
    if spec.min_steps is not None:
        return spec.min_steps
    ends = [p.window[1] for p in active_policies(spec, baseline)
            if p.uses_window and compares(p, baseline)]
    return max(ends) if ends else None


def _run_row(run: dict[str, Any], diagnosis: dict[str, Any] | None) -> CheckRow:
    status, code = run.get("status"), run.get("exit_code")
    if status is None and code is None:
        ok, message = False, "run.json records neither a status nor an exit code"
    else:
        ok = status in (None, "succeeded") and code in (None, 0)
        message = "" if ok else f"run {status or 'ended'}" + (
            f" with exit code {code}" if code not in (None, 0) else "")
    summary = _failure_summary(diagnosis)
    if not ok and summary:
        message += f": {summary}"
    return CheckRow(name="run completed", kind="run", status="pass" if ok else "fail",
                    value=None if code is None else float(code), expected="succeeded, exit code 0",
                    message=message)


def _step_row(last: int, required: int, spec: CheckSpec) -> CheckRow:
    why = "min_steps" if spec.min_steps is not None else "end of the widest checks window"
    ok = last >= required
    return CheckRow(
        name=f"reached step {required}", kind="run", status="pass" if ok else "fail",
        value=float(last), expected=f">= {required} ({why})",
        message="" if ok else f"run stopped at step {last}, before the required step {required} "
                              f"({why})")


def _outcome(rows: list[CheckRow], diagnosis: dict[str, Any] | None) -> tuple[str, str]:
    run_failures = [r for r in rows if r.kind == "run" and r.status != "pass"]
    if run_failures:
        reason = "; ".join(r.message for r in run_failures)
        summary = _failure_summary(diagnosis)
        if summary and summary not in reason:
            reason += f" ({summary})"
        return "failed", reason
    checks = [r for r in rows if r.kind != "run"]
    bad = [r for r in checks if r.status != "pass"]
    if bad:
        failed, errors = sum(r.status == "fail" for r in bad), sum(r.status == "error" for r in bad)
        counts = " and ".join(p for p in (f"{failed} failed" if failed else "",
                                          f"{errors} could not be computed" if errors else "") if p)
        first = f"{bad[0].name}: {bad[0].message}"
        return "regressed", f"{counts} of {len(checks)} checks; first: {first}"
    if not checks:
        return "passed", "run completed; no checks apply (no baseline, no expressions)"
    return "passed", f"all {len(checks)} checks passed"


def _failure_summary(diagnosis: dict[str, Any] | None) -> str | None:
    """The diagnosis' one line, unless it found nothing wrong."""
    if not diagnosis or diagnosis.get("status") == "succeeded":
        return None
    return diagnosis.get("summary") or None
