"""The verdict on a run: every check as a row, then one outcome.

- ``stopped`` (exit 3): stopped by the user (stop button, Ctrl-C, ``stop.request``): shown
  neutrally with the steps reached; a stopped run never passes;
- ``failed`` (exit 3): the run's own evidence says it failed or did not finish: a fatal error
  after the last step (crash, collective timeout, dead worker, OOM, killed, timeout), a non-zero
  exit code, or fewer steps than expected (``min_steps``, else the scenario's steps, else the
  log's own total);
- ``regressed`` (exit 1): a check failed, or could not be computed (an ``error`` row: a missing
  metric, a window the run does not cover); never a silent pass. A NaN loss is a failed check
  with a ``diverged`` diagnosis;
- ``improved`` (exit 0): nothing failed, and at least one one-sided comparison (time,
  throughput, memory) is beyond its band on the good side (an ``improved`` row): the run is
  fine and the baseline is stale, so the reason proposes a refresh (:func:`refresh_hint`);
- ``suspect`` (exit 0): nothing failed, and a noisy metric's comparison (``confirm_nights``
  > 1) is beyond its band on fewer nights in a row than it asks (a ``suspect`` row,
  :mod:`workbook.checks.confirmation`): one more such night makes the run regressed. A run
  with a failed row and a suspect one is regressed; suspect wins over improved;
- ``passed`` (exit 0): every judged row passed. Rows that are ``not_measured`` or
  ``not_comparable`` are shown and counted apart, never as passes.

:func:`judge_checks` is pure: the same :class:`~workbook.checks.evidence.Evidence`, spec and
baseline give the same verdict in ``workbook run``, ``workbook check``, ``workbook report`` and the
notebook. Rendering (checks.json here; the table and JUnit XML in their own modules) reads a
finished verdict and never feeds back into it.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workbook.checks.bands import compares
from workbook.checks.baseline import Baseline
from workbook.checks.comparison import policy_rows
from workbook.checks.confirmation import Previous, confirm
from workbook.checks.evidence import Evidence
from workbook.checks.expression import EvaluationError, Expression
from workbook.checks.health import divergence, health_rows, required_step
from workbook.checks.rows import BAD, IMPROVED, STATUSES, SUSPECT, CheckRow, error_row
from workbook.checks.spec import CheckSpec
from workbook.core.layout import write_json
from workbook.core.status import RunStatus
from workbook.core.status import Verdict as Word
from workbook.errors import EXIT_PASSED, EXIT_REGRESSED, EXIT_RUN_FAILED

VERDICTS = {Word.PASSED.value: EXIT_PASSED, Word.IMPROVED.value: EXIT_PASSED,
            Word.SUSPECT.value: EXIT_PASSED,
            Word.REGRESSED.value: EXIT_REGRESSED, Word.FAILED.value: EXIT_RUN_FAILED,
            Word.STOPPED.value: EXIT_RUN_FAILED}


def exit_code_of(status: str | None) -> int:
    """The exit code of a verdict status; anything else (no verdict, unknown) is a failed run."""
    return VERDICTS.get(status or "", EXIT_RUN_FAILED)


def refresh_hint(scenario: str | None) -> str:
    """The command that proposes a fresh baseline for ``scenario`` from its last green nights:
    the one place its text is written, so every reason, page and log that suggests a refresh
    says the same."""
    name = shlex.quote(scenario) if scenario else "<scenario>"
    return f"workbook baseline propose {name}"


@dataclass
class RunVerdict:
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
                "counts": {s: self.count(s) for s in STATUSES}}

    def to_dict(self) -> dict[str, Any]:
        """checks.json: the summary under ``verdict``, then context and every row."""
        return {
            "verdict": self.summary(),
            "last_step": self.last_step, "required_step": self.required_step,
            "run_status": self.run_status, "baseline": self.baseline,
            "diagnosis": self.diagnosis, "rows": [row.to_dict() for row in self.rows],
        }

    def write_json(self, path: Path) -> Path:
        """Write ``checks.json``: redacted inside its structure (a message or reason can quote a
        log line holding a token; the counts and values stay exact), atomically."""
        return write_json(Path(path), self.to_dict())


def judge_checks(evidence: Evidence, spec: CheckSpec, *, baseline: Baseline | None,
          previous: Previous | None = None) -> RunVerdict:
    """Judge one run's evidence against the spec and baseline; ``previous`` is the previous
    nights' baseline-row statuses per metric, newest first (none known: a failure of a policy
    that asks for ``confirm_nights`` is suspect)."""
    metrics = evidence.metrics
    window_end = max([p.window[1] for p in spec.policies() if p.uses_window
                      and compares(p, baseline)] or [0]) or None
    rows = health_rows(evidence, spec.min_steps, window_end)
    if len(metrics):
        rows += confirm(policy_rows(evidence, spec, baseline), spec, previous or {})
        rows += [expression_row(e, evidence, baseline) for e in spec.expressions]
    required, _ = required_step(evidence, spec.min_steps, window_end)
    diagnosis = divergence(rows, metrics.last_step) or evidence.diagnosis
    status, reason = _outcome(rows, evidence.diagnosis, _scenario_name(evidence, baseline))
    verdict = RunVerdict(status, reason, rows=rows, last_step=metrics.last_step,
                      required_step=required, run_status=evidence.run.get("status"),
                      diagnosis=diagnosis)
    if baseline is not None:
        verdict.baseline = {"path": str(baseline.path) if baseline.path else None,
                            "scenario": baseline.scenario, "hardware": baseline.hardware,
                            "hardware_key": baseline.hardware_key,
                            "provenance": baseline.provenance}
    return verdict


def expression_row(expression: Expression, evidence: Evidence,
                   baseline: Baseline | None) -> CheckRow:
    names = expression.metrics
    metric, source = (names[0] if names else None), expression.text
    try:
        outcome = expression.evaluate(evidence.metrics, baseline)
    except EvaluationError as exc:
        return error_row(expression.name, "expression", str(exc), metric=metric, source=source)
    return CheckRow(name=expression.name, kind="expression",
                    status="pass" if outcome.passed else "fail", value=outcome.value,
                    expected=outcome.expected, message=outcome.message, metric=metric,
                    source=source)


def _outcome(rows: list[CheckRow], diagnosis: dict[str, Any],
             scenario: str | None = None) -> tuple[str, str]:
    run_failures = [r for r in rows if r.kind == "run" and r.status != "pass"]
    if diagnosis.get("status") == RunStatus.STOPPED:
        return Word.STOPPED.value, "; ".join(r.message for r in run_failures) or "stopped by the user"
    if run_failures:
        messages: list[str] = []
        for message in (r.message for r in run_failures):
            if not any(message in earlier for earlier in messages):
                messages.append(message)
        return Word.FAILED.value, "; ".join(messages)
    judged = [r for r in rows if r.judged]
    bad = [r for r in judged if r.status in BAD]
    aside = _aside(rows)
    if bad:
        failed, errors = sum(r.status == "fail" for r in bad), sum(r.status == "error" for r in bad)
        counts = " and ".join(p for p in (f"{failed} failed" if failed else "",
                                          f"{errors} could not be computed" if errors else "") if p)
        return Word.REGRESSED.value, f"{counts} of {len(judged)} checks; first: {bad[0].name}: " \
                            f"{bad[0].message}{aside}"
    doubtful = [r for r in judged if r.status == SUSPECT]
    if doubtful:
        return Word.SUSPECT.value, _suspect_reason(doubtful, len(judged)) + aside
    better = [r for r in judged if r.status == IMPROVED]
    if better:
        return Word.IMPROVED.value, _improved_reason(better, len(judged), scenario) + aside
    return Word.PASSED.value, f"all {len(judged)} checks passed{aside}"


def _improved_reason(better: list[CheckRow], judged: int, scenario: str | None) -> str:
    """``2 metrics improved beyond their bands: propose a baseline refresh: <command>; ...``."""
    many = len(better) != 1
    what = (f"{len(better)} metrics improved beyond their bands" if many else
            "1 metric improved beyond its band")
    names = ", ".join(r.metric or r.name for r in better)
    return (f"{what}: propose a baseline refresh: {refresh_hint(scenario)}; improved: {names}; "
            f"all {judged} checks passed or improved")


def _suspect_reason(doubtful: list[CheckRow], judged: int) -> str:
    """``1 metric beyond its band, not yet confirmed: suspect: perf/throughput; ...``."""
    what = (f"{len(doubtful)} metrics beyond their bands" if len(doubtful) != 1 else
            "1 metric beyond its band")
    names = ", ".join(r.metric or r.name for r in doubtful)
    return (f"{what} on too few nights in a row to fail: suspect: {names}; a second night "
            f"in a row beyond the band (as many as confirm_nights asks) makes the run regressed; the other {judged - len(doubtful)} "
            "checks passed or improved")


def _scenario_name(evidence: Evidence, baseline: Baseline | None) -> str | None:
    """The scenario a refresh would be proposed for: the run's, else its baseline's."""
    for name in (evidence.run.get("scenario"), evidence.scenario.get("name"),
                 baseline.scenario if baseline is not None else None):
        if name:
            return str(name)
    return None


def _aside(checks: list[CheckRow]) -> str:
    """``; 2 not measured; 1 not comparable (baseline not comparable: ...)``."""
    parts = []
    unmeasured = [r for r in checks if r.status == "not_measured"]
    if unmeasured:
        parts.append(f"{len(unmeasured)} not measured on this hardware")
    unlike = [r for r in checks if r.status == "not_comparable"]
    if unlike:
        parts.append(f"{len(unlike)} not comparable ({unlike[0].message})")
    return "".join(f"; {p}" for p in parts)
