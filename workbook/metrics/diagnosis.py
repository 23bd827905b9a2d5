"""Why a run failed, in one line, with the log lines that show it.

A failed verl run leaves its cause somewhere in Ray's noise: a worker's traceback, a Ray wrapper
around it (``RayTaskError(OutOfMemoryError)``), Hydra's short config message, an Ascend error code
(``failures`` says what each looks like). :class:`Diagnoser` reads the log line by line
(streaming) and keeps *signals*: lines that name a failure, classified by what they say. At the
end it picks the root cause:

* a signal is *fatal* only if the run made no step progress after it (a worker traceback in a run
  that went on to later steps is noise);
* among fatal signals the most specific category wins, then the earliest line: an OOM on one
  rank makes the others time out in a collective and their actors die, and Ray flushes worker
  output late, so file order alone would name a consequence (log 13 prints the driver's
  wrapper before the worker's own lines);
* the exit code and the run status decide succeeded / failed / incomplete / stopped;
* no evidence, no pass: a run in which no training step completed (:func:`trained`) is
  ``failed`` with category ``no_metrics`` whatever its exit code says, unless the log names a
  more specific cause (an OOM before step 1) or the run was stopped or killed.

On the way it also reads what the log says about the run itself: how many steps it was meant to
train (verl's ``Total training steps: N`` line, the ``Training Progress: k/N`` bar, the echoed
config) and which steps replayed a rollout dump (``[RolloutTqSkip()] Injected ... at current
step k``), so a bare log is judged against its own expectations.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from workbook.core.layout import RUN_FILES, RunDir
from workbook.core.serialization import load_yaml
from workbook.metrics.console import clean, ray_prefix, strip_prefix
from workbook.metrics.failures import (
    CONFIG_FRAME_RE,
    EXCEPTION_RE,
    IMPORT_RE,
    KEYWORDS,
    KILL_EXIT_CODES,
    LABELS,
    PATTERNS,
    PRIORITY,
    TASK_RE,
    WRAPPER_RE,
)
from workbook.metrics.lines import iter_lines
from workbook.metrics.loading import input_kind, is_jsonl_file, load_metrics
from workbook.metrics.model import RunMetrics
from workbook.metrics.progress import PROGRESS_RE
from workbook.metrics.rows import find_row

STATUSES = ("succeeded", "failed", "incomplete", "stopped")
STOP_STATUSES = ("stopped", "timeout")
# What the log says about the run itself (see the module docstring).
_TOTAL_RE = re.compile(r"Total training steps: (\d+)")
_CONFIG_TOTAL_RE = re.compile(r"['\"]?total_training_steps['\"]?\s*[:=]\s*(\d+)")
_REPLAYED_RE = re.compile(r"RolloutTqSkip\(\)\].*Injected .* at current step (\d+)")
NO_METRICS = "no_metrics"
NO_METRICS_LABEL = "No metrics: no training step completed"
VALIDATION_PREFIXES = ("val-", "val/")  # verl's validation metrics: logged before any training
MAX_EVIDENCE = 6
MAX_LINE = 400
MAX_SIGNALS = 5000


@dataclass
class Signal:
    """One log line that names a failure."""

    line: int
    category: str
    text: str
    content: str
    step_before: int | None
    specific: bool
    task: str | None = None


@dataclass
class Diagnosis:
    """The verdict on one run; :meth:`to_dict` is what ``run.json`` and reports carry."""

    status: str
    category: str
    summary: str
    evidence: list[str] = field(default_factory=list)
    last_step: int | None = None
    expected_steps: int | None = None  # as the log itself states it (None: it does not)
    replayed_steps: list[int] = field(default_factory=list)

    def to_dict(self) -> dict[str, object]:
        return {
            "status": self.status,
            "category": self.category,
            "summary": self.summary,
            "evidence": list(self.evidence),
            "last_step": self.last_step,
            "expected_steps": self.expected_steps,
            "replayed_steps": list(self.replayed_steps),
        }


def trained(metrics: RunMetrics | None, training_row_seen: bool = False) -> bool:
    """Whether a training step completed: the one test of "evidence of training".

    Some step logged a metric that is not validation (verl logs its initial validation at
    step 0 before it trains; old verl also trains at step 0). Without metrics (a diagnosis
    from lines alone) the diagnoser's own reading of the step lines decides.
    """
    if metrics is None:
        return training_row_seen
    return any(not is_validation(name) for name in metrics.names())


def is_validation(name: str) -> bool:
    return name.startswith(VALIDATION_PREFIXES)


def no_metrics(last_step: int | None, exit_code: int | None) -> Diagnosis:
    """The diagnosis of a run with no training step, whatever its exit code says."""
    seen = "" if last_step is None else f"; only validation metrics, at step {last_step}"
    code = "" if exit_code is None else f" (exit code {exit_code})"
    return Diagnosis("failed", NO_METRICS, f"{NO_METRICS_LABEL}{code}{seen}", [], last_step)


class Diagnoser:
    """Streaming: :meth:`feed` each physical line, then :meth:`result`."""

    def __init__(self) -> None:
        self.lineno = 0
        self.max_step: int | None = None
        self.training_row_seen = False  # a step line with a metric that is not validation
        self.signals: list[Signal] = []
        self._trace: dict[str, int] = {}  # prefix -> 0 none, 1 in traceback, 2 after exception line
        self._config_frames: set[str] = (
            set()
        )  # prefixes whose current traceback went through config code
        self._chained: set[str] = (
            set()
        )  # prefixes between "The above exception..." and its traceback
        self._task: dict[str, str] = {}
        self._wrapped: set[str] = set()  # exception types seen inside RayTaskError(...) wrappers
        self.progress_total: int | None = None  # N of verl's "Training Progress: k/N" bar
        self.stated_total: int | None = None  # "Total training steps: N" or the echoed config
        self.replayed: set[int] = set()

    def _wrapped_root(self, content: str) -> bool:
        """The ``AssertionError: ...`` line a ``RayTaskError(AssertionError)`` wraps is the root
        cause, even where Ray prints it without a ``Traceback`` header of its own."""
        match = EXCEPTION_RE.match(content)
        if match is None:
            return False
        if match.group("inner") and WRAPPER_RE.match(content):
            self._wrapped.add(match.group("inner").rsplit(".", 1)[-1])
            return False
        return match.group("type").rsplit(".", 1)[-1] in self._wrapped

    def feed(self, raw: str) -> None:
        self.lineno += 1
        if "raining" in raw or "RolloutTqSkip" in raw:
            self._read_facts(raw)
        if "step:" in raw:
            row = find_row(strip_prefix(clean(raw)))
            if row is not None:  # a metrics row: progress, never an error
                step = int(row[5 : row.find(" ")] if " " in row else row[5:])
                self.max_step = step if self.max_step is None else max(self.max_step, step)
                if not self.training_row_seen:  # "step:N - name:value - ...", names checked once
                    self.training_row_seen = any(
                        not is_validation(pair.strip()) for pair in row.split(" - ")[1:])
                return
        if not self._trace and not any(word in raw for word in KEYWORDS):
            return
        line = clean(raw)
        prefix = ray_prefix(line)
        content = strip_prefix(line)
        task = TASK_RE.search(content)
        if task and "RayTaskError" in content:
            self._task[prefix] = task.group(1)
        wrapped_root = self._wrapped_root(content)
        exception = self._track_traceback(prefix, content) or wrapped_root
        category = self._classify(content, exception, prefix in self._config_frames)
        if category is not None and len(self.signals) < MAX_SIGNALS:
            self.signals.append(
                Signal(
                    self.lineno,
                    category,
                    line.strip()[:MAX_LINE],
                    content.strip()[:MAX_LINE],
                    self.max_step,
                    not WRAPPER_RE.match(content),
                    self._task.get(prefix),
                )
            )

    def _read_facts(self, raw: str) -> None:
        """Expected steps and replayed steps, as the log states them."""
        if "Training Progress" in raw:
            totals = [int(m.group(2)) for m in PROGRESS_RE.finditer(raw)]
            if totals:
                self.progress_total = max(totals + [self.progress_total or 0])
        elif "otal training steps" in raw or "total_training_steps" in raw:
            match = _TOTAL_RE.search(raw) or _CONFIG_TOTAL_RE.search(raw)
            if match and int(match.group(1)) > 0:
                self.stated_total = int(match.group(1))
        elif "Injected" in raw:
            match = _REPLAYED_RE.search(raw)
            if match:
                self.replayed.add(int(match.group(1)))

    @property
    def expected_steps(self) -> int | None:
        """The bar's total (what the trainer really ran to), else the stated total."""
        return self.progress_total or self.stated_total

    def _track_traceback(self, prefix: str, content: str) -> bool:
        """Follow Python (and Ray's chained) tracebacks; True for an exception line."""
        state = self._trace.get(prefix, 0)
        if content.startswith("Traceback (most recent call last)"):
            if (
                prefix not in self._chained
            ):  # a chained traceback ("direct cause of") keeps the context
                self._config_frames.discard(prefix)
            self._chained.discard(prefix)
            self._trace[prefix] = 1
            return False
        if content.startswith(("The above exception", "During handling of the above")):
            self._chained.add(prefix)
            return False
        if state == 0:
            return bool(EXCEPTION_RE.match(content)) and "." in content.split(":", 1)[0]
        if content[:1] in (" ", "\t") or not content:
            if state == 2 and not content.lstrip().startswith('File "'):
                self._trace.pop(prefix, None)
                return False
            if CONFIG_FRAME_RE.search(content):
                self._config_frames.add(prefix)
            self._trace[prefix] = 1
            return False
        if EXCEPTION_RE.match(content):
            self._trace[prefix] = 2  # Ray prints further frames under its wrapper line
            return True
        self._trace.pop(prefix, None)
        return False

    @staticmethod
    def _classify(content: str, exception: bool, in_config_code: bool) -> str | None:
        for category, pattern in PATTERNS:
            if pattern.search(content):
                return category
        if exception:
            if IMPORT_RE.search(content):
                return "import_error"
            return "config_error" if in_config_code else "python_exception"
        return None

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
        found = self._result(exit_code, metrics, expected_steps or self.expected_steps, status)
        if found.category in ("none", "unknown") and not trained(metrics, self.training_row_seen):
            found = no_metrics(found.last_step, exit_code)
        found.expected_steps = self.expected_steps
        found.replayed_steps = sorted(self.replayed)
        return found

    def _result(
        self,
        exit_code: int | None,
        metrics: RunMetrics | None,
        expected_steps: int | None,
        status: str | None,
    ) -> Diagnosis:
        last_step = metrics.last_step if metrics is not None and len(metrics) else self.max_step
        fatal = [s for s in self.signals if s.step_before == self.max_step]
        killed_by_signal = exit_code in KILL_EXIT_CODES
        if status in STOP_STATUSES or (killed_by_signal and status != "failed"):
            return self._stopped(status, exit_code, fatal, last_step)
        clean_exit = exit_code == 0 and status != "failed"
        if clean_exit:
            if expected_steps is not None and (last_step is None or last_step < expected_steps):
                return Diagnosis(
                    "incomplete",
                    "none",
                    f"Exited 0 but reached step {last_step} of {expected_steps}",
                    [],
                    last_step,
                )
            return Diagnosis(
                "succeeded", "none", f"Succeeded; {_step_text(last_step)}", [], last_step
            )
        failed = (exit_code is not None and exit_code != 0) or status == "failed"
        if fatal or failed:
            candidates = fatal or self.signals
            for category in PRIORITY:
                chosen = [s for s in candidates if s.category == category]
                if chosen:
                    return self._verdict(category, chosen, last_step)
            return Diagnosis(
                "failed",
                "unknown",
                f"{LABELS['unknown']} (exit code {exit_code}); {_step_text(last_step)}",
                [],
                last_step,
            )
        if expected_steps is not None and last_step is not None and last_step >= expected_steps:
            return Diagnosis(
                "succeeded", "none", f"Reached step {last_step} of {expected_steps}", [], last_step
            )
        target = f" of {expected_steps}" if expected_steps is not None else ""
        return Diagnosis(
            "incomplete",
            "none",
            f"No exit status and no fatal error in the log; {_step_text(last_step)}{target}",
            [],
            last_step,
        )

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
        if status == "stopped":
            return Diagnosis(
                "stopped",
                "stopped",
                f"{LABELS['stopped']}; {_step_text(last_step)}",
                [],
                last_step,
            )
        if status == "timeout":
            return Diagnosis(
                "failed",
                "timeout",
                f"{LABELS['timeout']}; {_step_text(last_step)}",
                [how] if exit_code is not None else [],
                last_step,
            )
        lines = [s.text for s in fatal if s.category == "killed"][: MAX_EVIDENCE - 1]
        return Diagnosis(
            "failed",
            "killed",
            f"{LABELS['killed']}: {how}; {_step_text(last_step)}",
            [how] + lines,
            last_step,
        )

    @staticmethod
    def _verdict(category: str, signals: list[Signal], last_step: int | None) -> Diagnosis:
        primary = next((s for s in signals if s.specific), signals[0])
        where = f" (in ray::{primary.task})" if primary.task else ""
        summary = f"{LABELS[category]}: {primary.content[:200]}{where}; {_step_text(last_step)}"
        evidence = [primary.text]
        for signal in signals:
            if (
                signal is not primary
                and signal.text not in evidence
                and len(evidence) < MAX_EVIDENCE
            ):
                evidence.append(signal.text)
        return Diagnosis("failed", category, summary, evidence, last_step)


def diagnose(
    log: Path | str | Iterable[str],
    *,
    exit_code: int | None = None,
    metrics: RunMetrics | None = None,
    expected_steps: int | None = None,
    status: str | None = None,
) -> Diagnosis:
    """Diagnose a run from its console log, a metrics JSONL file, a run directory or lines.

    ``status`` is the launcher's terminal status when known (``stopped``/``timeout`` mean the
    run was ended on purpose: category ``killed`` unless the log shows an OOM). For a run
    directory, ``run.json``'s ``exit_code`` and ``status`` and the steps it was to train
    (:func:`run_dir_expected_steps`) are used when not given, and the metrics come from
    ``metrics.jsonl`` and ``run.log``.

    Raises:
        MetricsError: the path is not a log, JSONL file or run directory (exit 2).
    """
    diagnoser = Diagnoser()
    lines: Iterable[str] = ()
    if isinstance(log, (str, Path)):
        path = Path(log)
        if input_kind(path) == "run directory":
            record = RunDir(path).read_json("run")
            exit_code = exit_code if exit_code is not None else record.get("exit_code")
            status = status if status is not None else record.get("status")
            expected_steps = expected_steps or run_dir_expected_steps(path, record)
            status = None if status in ("imported", "unknown", "prepared", "running") else status
            if metrics is None and (
                (path / RUN_FILES["metrics"]).exists() or (path / RUN_FILES["log"]).exists()
            ):
                metrics = load_metrics(path)  # refuses a run.log that is a FIFO or a device
            if (path / RUN_FILES["log"]).exists():
                lines = iter_lines(path / RUN_FILES["log"])
        elif is_jsonl_file(path):
            metrics = metrics if metrics is not None else load_metrics(path)
        else:
            lines = iter_lines(path)
    else:
        lines = log
    for line in lines:
        diagnoser.feed(line)
    return diagnoser.result(
        exit_code=exit_code, metrics=metrics, expected_steps=expected_steps, status=status
    )


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


def positive_int(value: object) -> int | None:
    """``value`` as a positive int, None for anything else (a missing or garbled field)."""
    if isinstance(value, bool):
        return None
    try:
        number = int(value)  # type: ignore[call-overload]
    except (TypeError, ValueError, OverflowError):
        return None
    return number if number > 0 else None


def _step_text(step: int | None) -> str:
    return "no step completed" if step is None else f"last step {step}"
