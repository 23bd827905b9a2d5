"""What a batch keeps of its runs: one :class:`Record` per item, in its JSON file, and resuming.

A suite's ``suite.json`` (``entries``) and a sweep's ``sweep.json`` (``points``) hold the same
record, whose fields mean the same in both:

    key         the item's name in the batch (its run directories sit under ``<batch>/<key>/``)
    scenario    the scenario's name
    status      the verdict word of its last run, or ``pending`` (not run yet) or ``running``
    exit_code   the verdict's exit code (0 passed, improved or suspect, 1 regressed, 3 failed or stopped);
                none yet while pending or running
    reason      the verdict's one line, or why the item could not run
    duration_s  how long its last run took
    run_dir     its last run directory; ``runs`` every attempt's, earlier ones included
    report      its last run's report.html
    retries     present once an attempt was retried: per retried attempt its ``run_dir`` and
                ``why`` (its infrastructure diagnosis); the reason of the attempt after says so

plus what the batch adds of its own: a suite entry's ``line``, a sweep point's ``values``.

Resuming keeps what finished (a verdict of :data:`~workbook.core.status.FINISHED_VERDICTS`); a
stopped item runs again, and so does one still ``running`` in the file, whose workbook died.
Every exit code is taken again from the verdict word, never from the file.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workbook.checks.verdict import exit_code_of
from workbook.core.clock import now_iso
from workbook.core.layout import write_json
from workbook.core.quoting import cut
from workbook.core.status import FINISHED_VERDICTS, VERDICTS, RunStatus, Verdict
from workbook.core.values import finite

PENDING = "pending"  # a batch's own word: an item no run has been started for (yet)
RUNNING = RunStatus.RUNNING.value
DIED = "the workbook driving its last attempt died before the run ended; it runs again"


@dataclass
class Record:
    """How one item of a batch went (see the module docstring for each field)."""

    key: str
    scenario: str = ""
    status: str = PENDING
    exit_code: int | None = None
    reason: str = ""
    duration_s: float | None = None
    run_dir: str | None = None
    report: str | None = None
    runs: list[str] = field(default_factory=list)
    about: dict[str, Any] = field(default_factory=dict)  # a suite's line, a sweep's values
    retries: list[dict[str, str]] = field(default_factory=list)
    # why each retry that led to the current attempt was made (its reason says so)
    _retried_for: list[str] = field(default_factory=list, init=False, repr=False, compare=False)

    @property
    def finished(self) -> bool:
        """Kept when the batch runs again (a stopped item is run again)."""
        return self.status in FINISHED_VERDICTS

    def started(self, run_dir: Path, retry_of: str | None = None) -> None:
        """A new attempt; ``retry_of`` says why the one before is retried (None: a fresh start)."""
        if retry_of is None:
            self._retried_for = []
        else:
            self.retries.append({"run_dir": self.run_dir or "", "why": retry_of})
            self._retried_for.append(retry_of)
        self.status, self.exit_code, self.reason = RUNNING, None, ""
        self.duration_s, self.report = None, None
        self.run_dir = str(run_dir)
        self.runs.append(str(run_dir))

    def ended(self, verdict: str, reason: str, duration_s: float | None,
              report: Path | str | None) -> None:
        """Its run ended with ``verdict`` (anything but a verdict word is a failed run)."""
        self.status = verdict if verdict in VERDICTS else Verdict.FAILED.value
        self.exit_code = exit_code_of(self.status)
        self.reason = reason + self._retry_note()
        self.duration_s = None if duration_s is None else round(float(duration_s), 1)
        self.report = str(report) if report else None

    def failed(self, reason: str) -> None:
        """It could not run, or the workbook failed while it ran: a failed item, never a pass."""
        self.ended(Verdict.FAILED.value, reason, self.duration_s, self.report)

    def _retry_note(self) -> str:
        """`` (run again after: <the diagnosis it was retried for>)`` for an attempt that is one."""
        if not self._retried_for:
            return ""
        times = "" if len(self._retried_for) == 1 else f" {len(self._retried_for)} times"
        return f" (run again{times} after: {cut(self._retried_for[-1], 300)})"

    def to_json(self) -> dict[str, Any]:
        found = {"key": self.key, **self.about, "scenario": self.scenario, "status": self.status,
                 "exit_code": self.exit_code, "reason": self.reason,
                 "duration_s": self.duration_s, "run_dir": self.run_dir, "report": self.report,
                 "runs": list(self.runs)}
        if self.retries:
            found["retries"] = [dict(r) for r in self.retries]
        return found


def resumed(data: Any, key: str, scenario: str, about: dict[str, Any]) -> Record:
    """The record of ``key`` as a batch that runs again takes it over from ``data`` (a record
    read from the file; anything unreadable starts afresh)."""
    record = Record(key, scenario, about=dict(about))
    if not isinstance(data, dict):
        return record
    status = str(data.get("status") or PENDING)
    run_dir = data.get("run_dir")
    runs = data.get("runs")
    record.runs = [str(r) for r in runs] if isinstance(runs, list) else []
    record.run_dir = str(run_dir) if run_dir else None
    record.scenario = str(data.get("scenario") or scenario)
    retries = data.get("retries")
    record.retries = [{str(k): str(v) for k, v in r.items()} for r in
                      (retries if isinstance(retries, list) else []) if isinstance(r, dict)]
    if status in VERDICTS:  # finished, or stopped (then it runs again); codes from the verdict
        record.status, record.exit_code = status, exit_code_of(status)
        record.reason = str(data.get("reason") or "")
        record.duration_s = finite(data.get("duration_s"))
        record.report = str(data["report"]) if data.get("report") else None
    elif status == RUNNING:
        record.reason = DIED
    return record


def merged_entries(recorded: list[Any], ours: list[dict[str, Any]]) -> list[Any]:
    """A file's records with ours in place of the same keys (new ones appended): a CI matrix
    runs one ``--only`` entry per job into the same suite night, and nobody's record is lost."""
    by_key = {entry["key"]: entry for entry in ours}
    out = [by_key.pop(e["key"]) if isinstance(e, dict) and e.get("key") in by_key else e
           for e in recorded]
    return out + list(by_key.values())


@dataclass
class BatchFile:
    """A batch's JSON file: its header, its records under ``field``, and the leftovers of dead
    workbook runs it cleared. ``keep_others``: records of keys this invocation does not run
    stay in the file (a suite's ``--only``); a sweep's file holds its own points only."""

    path: Path
    field: str
    keep_others: bool = False

    def read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def known(self) -> dict[str, Any]:
        """The records in the file by key."""
        items = self.read().get(self.field)
        if not isinstance(items, list):
            return {}
        return {str(e["key"]): e for e in items if isinstance(e, dict) and e.get("key")}

    def leftovers(self) -> list[dict[str, Any]]:
        """What earlier invocations cleared (kept, so the file tells the whole night)."""
        return _dicts(self.read().get("leftovers"))

    def write(self, header: dict[str, Any], records: list[Record],
              leftovers: list[dict[str, Any]]) -> None:
        data = self.read()
        ours = [r.to_json() for r in records]
        recorded = data.get(self.field)
        if self.keep_others and isinstance(recorded, list):
            ours = merged_entries(recorded, ours)
        cleared = _dicts(data.get("leftovers"))
        cleared += [e for e in leftovers if e not in cleared]
        write_json(self.path, {**header, "updated": now_iso(), self.field: ours,
                               "leftovers": cleared})


def _dicts(value: Any) -> list[dict[str, Any]]:
    return [e for e in value if isinstance(e, dict)] if isinstance(value, list) else []

