"""Why a run failed, in one line, with the log lines that show it.

:class:`Diagnoser` reads a log line by line (streaming): the run's own facts
(:class:`~workbook.metrics.log_facts.LogFacts`) and the lines that name a failure
(:class:`~workbook.metrics.signals.SignalScanner`). At the end it picks the root cause:

* a signal is *fatal* only if the run made no step progress after it (a worker traceback in a run
  that went on to later steps is noise); where the console log lost its step lines but another
  source (verl's file logger, TensorBoard) shows the run reached its last step, nothing in the
  log after the console's last step line is known to have stopped it;
* among fatal signals the most specific kind wins (:data:`~workbook.metrics.failures.RANKS`),
  then the earliest line: an OOM on one
  rank makes the others time out in a collective and their actors die, and Ray flushes worker
  output late, so file order alone would name a consequence (log 13 prints the driver's
  wrapper before the worker's own lines);
* the exit code and the run status decide succeeded / failed / incomplete / stopped;
* no evidence, no pass: a run in which no training step completed (:func:`trained`) is
  ``failed`` with category ``no_metrics`` whatever its exit code says, unless the log names a
  more specific cause (an OOM before step 1) or the run was stopped or killed.

Reading a log or a run directory, once, is :mod:`workbook.metrics.reading`'s.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from workbook.core.layout import RUN_FILES, RunDir
from workbook.core.serialization import load_yaml
from workbook.core.status import Diagnosed, RunStatus
from workbook.metrics.failures import CAUSES, KILL_EXIT_CODES, LABELS, RANKS, category_of
from workbook.metrics.log_facts import LogFacts, is_validation, positive_int, trained
from workbook.metrics.model import RunMetrics
from workbook.metrics.signals import Signal, SignalScanner

STOP_STATUSES = (RunStatus.STOPPED.value, RunStatus.TIMEOUT.value)
NO_METRICS = "no_metrics"
NO_METRICS_LABEL = "No metrics: no training step completed"
MAX_EVIDENCE = 6


@dataclass
class Diagnosis:
    """The verdict on one run; :meth:`to_dict` is what ``run.json`` and reports carry.

    ``metrics_source`` (in the dict only when the metrics were read from a run's files) says
    which source the run's metrics came from and how many steps each held
    (:class:`~workbook.metrics.model.MetricsSource`).
    """

    status: str
    category: str
    summary: str
    evidence: list[str] = field(default_factory=list)
    last_step: int | None = None
    expected_steps: int | None = None  # as the log itself states it (None: it does not)
    replayed_steps: list[int] = field(default_factory=list)
    metrics_source: dict[str, object] | None = None

    def to_dict(self) -> dict[str, object]:
        found: dict[str, object] = {
            "status": self.status,
            "category": self.category,
            "summary": self.summary,
            "evidence": list(self.evidence),
            "last_step": self.last_step,
            "expected_steps": self.expected_steps,
            "replayed_steps": list(self.replayed_steps),
        }
        if self.metrics_source is not None:
            found["metrics_source"] = dict(self.metrics_source)
        return found


def no_metrics(last_step: int | None, exit_code: int | None) -> Diagnosis:
    """The diagnosis of a run with no training step, whatever its exit code says."""
    seen = "" if last_step is None else f"; only validation metrics, at step {last_step}"
    code = "" if exit_code is None else f" (exit code {exit_code})"
    return Diagnosis(Diagnosed.FAILED.value, NO_METRICS, f"{NO_METRICS_LABEL}{code}{seen}", [], last_step)


class Diagnoser:
    """Streaming: :meth:`feed` each physical line, then :meth:`result`."""

    def __init__(self) -> None:
        self.lineno = 0
        self.facts = LogFacts()
        self.scanner = SignalScanner()

    def feed(self, raw: str) -> None:
        self.lineno += 1
        if not self.facts.feed(raw):  # a metrics row is progress, never an error
            self.scanner.feed(self.lineno, raw, self.facts.max_step)

    def result(
        self,
        *,
        exit_code: int | None = None,
        metrics: RunMetrics | None = None,
        expected_steps: int | None = None,
        status: str | None = None,
    ) -> Diagnosis:
        """The diagnosis given what the log said and how the process ended.

        ``expected_steps`` (the scenario's) wins over what the log states.
        """
        facts = self.facts
        found = self._result(exit_code, metrics, expected_steps or facts.expected_steps, status)
        if found.category in ("none", "unknown") and not trained(metrics, facts.training_row_seen):
            found = no_metrics(found.last_step, exit_code)
        found.expected_steps = facts.expected_steps
        found.replayed_steps = sorted(facts.replayed)
        if metrics is not None and metrics.origin is not None:
            found.metrics_source = metrics.origin.to_dict()
        return found

    def _result(
        self,
        exit_code: int | None,
        metrics: RunMetrics | None,
        expected_steps: int | None,
        status: str | None,
    ) -> Diagnosis:
        logged = self.facts.max_step
        last_step = metrics.last_step if metrics is not None and len(metrics) else logged
        fatal = [s for s in self.scanner.signals if s.step_before == logged]
        if fatal and self._trained_on(last_step, expected_steps):
            fatal = []
        killed_by_signal = exit_code in KILL_EXIT_CODES
        if status in STOP_STATUSES or (killed_by_signal and status != RunStatus.FAILED):
            return self._stopped(status, exit_code, fatal, last_step)
        clean_exit = exit_code == 0 and status != RunStatus.FAILED
        if clean_exit:
            if expected_steps is not None and (last_step is None or last_step < expected_steps):
                return Diagnosis(
                    Diagnosed.INCOMPLETE.value,
                    "none",
                    f"Exited 0 but reached step {last_step} of {expected_steps}",
                    [],
                    last_step,
                )
            return Diagnosis(
                Diagnosed.SUCCEEDED.value, "none", f"Succeeded; {_step_text(last_step)}", [], last_step
            )
        failed = (exit_code is not None and exit_code != 0) or status == RunStatus.FAILED
        if fatal or failed:
            candidates = fatal or self.scanner.signals
            for kind in RANKS:
                chosen = [s for s in candidates if s.kind == kind]
                if chosen:
                    return self._verdict(category_of(kind), chosen, last_step)
            return Diagnosis(
                Diagnosed.FAILED.value,
                "unknown",
                f"{LABELS['unknown']} (exit code {exit_code}); {_step_text(last_step)}",
                [],
                last_step,
            )
        if expected_steps is not None and last_step is not None and last_step >= expected_steps:
            return Diagnosis(
                Diagnosed.SUCCEEDED.value, "none", f"Reached step {last_step} of {expected_steps}", [], last_step
            )
        target = f" of {expected_steps}" if expected_steps is not None else ""
        return Diagnosis(
            Diagnosed.INCOMPLETE.value,
            "none",
            f"No exit status and no fatal error in the log; {_step_text(last_step)}{target}",
            [],
            last_step,
        )

    def _trained_on(self, last_step: int | None, expected_steps: int | None) -> bool:
        """Whether another source shows the run reached its last step after the console log's
        last step line (the log lost its step lines): what the log says after that line did not
        stop it."""
        return (last_step is not None and expected_steps is not None
                and last_step >= expected_steps
                and (self.facts.max_step is None or last_step > self.facts.max_step))

    def _stopped(
        self, status: str | None, exit_code: int | None, fatal: list[Signal], last_step: int | None
    ) -> Diagnosis:
        """Ended from outside: stopped by the user, timed out, or killed by a signal.

        An OOM in the log wins: the kernel's OOM killer also ends processes with SIGKILL.
        """
        ooms = [s for s in fatal if s.category == "oom"]
        if ooms:
            return self._verdict("oom", ooms, last_step)
        how = f"exit code {exit_code}" + (
            f" ({KILL_EXIT_CODES[exit_code]})" if exit_code in KILL_EXIT_CODES else ""
        )
        if status == RunStatus.STOPPED:
            return Diagnosis(
                Diagnosed.STOPPED.value,
                "stopped",
                f"{LABELS['stopped']}; {_step_text(last_step)}",
                [],
                last_step,
            )
        if status == RunStatus.TIMEOUT:
            return Diagnosis(
                Diagnosed.FAILED.value,
                "timeout",
                f"{LABELS['timeout']}; {_step_text(last_step)}",
                [how] if exit_code is not None else [],
                last_step,
            )
        lines = [s.text for s in fatal if s.category == "killed"][: MAX_EVIDENCE - 1]
        return Diagnosis(
            Diagnosed.FAILED.value,
            "killed",
            f"{LABELS['killed']}: {how}; {_step_text(last_step)}",
            [how] + lines,
            last_step,
        )

    @staticmethod
    def _verdict(category: str, signals: list[Signal], last_step: int | None) -> Diagnosis:
        primary = next((s for s in signals if s.specific), signals[0])
        where = f" (in ray::{primary.task})" if primary.task else ""
        cause = f" ({CAUSES[primary.cause]})" if primary.cause else ""
        summary = (f"{LABELS[category]}{cause}: {primary.content[:200]}{where}; "
                   f"{_step_text(last_step)}")
        evidence = [primary.text]
        for signal in signals:
            if (
                signal is not primary
                and signal.text not in evidence
                and len(evidence) < MAX_EVIDENCE
            ):
                evidence.append(signal.text)
        return Diagnosis(Diagnosed.FAILED.value, category, summary, evidence, last_step)


def run_dir_expected_steps(path: Path, record: dict[str, object] | None = None) -> int | None:
    """The steps a run directory was to train: its resolved params', else run.json's."""
    params = Path(path) / RUN_FILES["params"]
    resolved = load_yaml(params) if params.is_file() else None
    record = RunDir(Path(path)).read_json("run") if record is None else record
    for value in ((resolved or {}).get("total_training_steps") if isinstance(resolved, dict)
                  else None, record.get("expected_steps")):
        number = positive_int(value)
        if number:
            return number
    return None


def _step_text(step: int | None) -> str:
    return "no step completed" if step is None else f"last step {step}"


__all__ = ["Diagnoser", "Diagnosis", "NO_METRICS", "NO_METRICS_LABEL", "Signal", "is_validation",
           "no_metrics", "positive_int", "run_dir_expected_steps", "trained"]
