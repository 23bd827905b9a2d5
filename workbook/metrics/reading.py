"""Reading a run's log once: one pass feeds its metrics and the diagnoser.

After a run, recording its outcome, judging it and each report section all need the metrics,
the diagnosis and the facts the log states (steps it was to train, replayed steps). They come
from :func:`reading_of`, which reads every metrics source of the run (``metrics.jsonl``,
``run.log``, TensorBoard event files: :mod:`~workbook.metrics.sources`), the log in one pass,
and keeps the result while the files are unchanged (by size and modification time), so a 1 GB
log is read once per process, not once per caller. :func:`diagnose` is the entry point for any
log, JSONL file, run directory or stream of lines.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from workbook.core.layout import RunDir
from workbook.core.status import ACTIVE, BARE
from workbook.errors import MetricsError
from workbook.metrics.diagnosis import Diagnoser, Diagnosis, run_dir_expected_steps
from workbook.metrics.events import read_events
from workbook.metrics.lines import iter_lines
from workbook.metrics.loading import input_kind, is_jsonl_file, read_lines, read_metrics_file
from workbook.metrics.model import RunMetrics
from workbook.metrics.sources import CONSOLE, JSONL, TENSORBOARD, combine, run_files, single_file

KEPT = 8  # run directories whose reading is kept in memory
# statuses after which a diagnosis reads the log alone (nothing ended the process here)
_NO_PROCESS = (*BARE, *ACTIVE)


@dataclass
class Reading:
    """One pass over a run's files: its metrics and the diagnoser that read its log."""

    metrics: RunMetrics = field(default_factory=RunMetrics)  # shared: read it, never change it
    diagnoser: Diagnoser = field(default_factory=Diagnoser)

    def diagnose(self, *, exit_code: int | None = None, expected_steps: int | None = None,
                 status: str | None = None) -> Diagnosis:
        return self.diagnoser.result(exit_code=exit_code, metrics=self.metrics,
                                     expected_steps=expected_steps, status=status)


_KEPT: OrderedDict[Path, tuple[tuple[object, ...], Reading]] = OrderedDict()
READS = {"logs": 0}  # console logs read in this process (what a test counts)


def reading_of(path: Path) -> Reading:
    """A run directory's (or a single log's) metrics and its log's diagnoser, from one pass;
    kept while the files are unchanged. In a run directory every source is read and the
    metrics are their union (``metrics.jsonl`` first, ``run.log`` and TensorBoard event files
    add what it lacks; ``metrics.origin`` names the most complete); a file-logger JSONL file has
    no lines to diagnose.

    Raises:
        MetricsError: the path is not a run directory, log or JSONL file, or ``run.log`` or
            ``metrics.jsonl`` is a FIFO, a device or unreadable (exit 2).
    """
    path = Path(path).resolve()
    folder = input_kind(path) == "run directory"
    files = run_files(path) if folder else single_file(path, is_jsonl_file(path))
    signature = files.signature()
    kept = _KEPT.get(path)
    if kept is not None and kept[0] == signature:
        _KEPT.move_to_end(path)
        return kept[1]
    reading = Reading()
    parts: dict[str, RunMetrics] = {}
    notes = list(files.notes)
    if files.jsonl is not None:  # it exists: a FIFO is refused by the reader, not skipped
        parts[JSONL] = read_metrics_file(files.jsonl)
    if files.log is not None:
        parts[CONSOLE] = _one_pass(files.log, reading.diagnoser)
    if files.events:
        parts[TENSORBOARD], unread = read_events(files.events, path)
        notes += unread
    reading.metrics = combine(parts, notes)
    _KEPT[path] = (signature, reading)
    while len(_KEPT) > KEPT:
        _KEPT.popitem(last=False)
    return reading


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
    (:func:`~workbook.metrics.diagnosis.run_dir_expected_steps`) are used when not given, and
    the metrics come from ``metrics.jsonl`` and ``run.log`` (:func:`reading_of`).

    Raises:
        MetricsError: the path is not a log, JSONL file or run directory (exit 2).
    """
    if isinstance(log, (str, Path)):
        path = Path(log)
        if input_kind(path) == "run directory":
            record = RunDir(path).read_json("run")
            exit_code = exit_code if exit_code is not None else record.get("exit_code")
            status = status if status is not None else record.get("status")
            expected_steps = expected_steps or run_dir_expected_steps(path, record)
            status = None if status in _NO_PROCESS else status
            reading = reading_of(path)
            return reading.diagnoser.result(
                exit_code=exit_code, metrics=metrics if metrics is not None else reading.metrics,
                expected_steps=expected_steps, status=status)
        reading = reading_of(path)
        return reading.diagnoser.result(
            exit_code=exit_code, metrics=metrics if metrics is not None else (
                reading.metrics if is_jsonl_file(path) else None),
            expected_steps=expected_steps, status=status)
    diagnoser = Diagnoser()
    for line in log:
        diagnoser.feed(line)
    return diagnoser.result(
        exit_code=exit_code, metrics=metrics, expected_steps=expected_steps, status=status
    )


def _one_pass(log: Path, diagnoser: Diagnoser) -> RunMetrics:
    """The log's metrics, feeding each line to ``diagnoser`` on the way."""
    READS["logs"] += 1
    try:
        return _read(log, diagnoser)
    except OSError as exc:
        raise MetricsError(f"{log}: cannot read ({exc.strerror or exc})") from exc


def _read(log: Path, diagnoser: Diagnoser) -> RunMetrics:
    def tee() -> Iterator[str]:
        feed = diagnoser.feed
        for line in iter_lines(log, keepends=True):
            feed(line[:-1] if line.endswith("\n") else line)
            yield line

    return read_lines(tee(), log.name)
