"""Every status word of the workbook, and the life of a run directory they describe.

A run directory moves through these stages, each written by one owner, each once:

    prepared   ``run.steps.prepare``: params.resolved.yaml, the command, run.json
    running    the launcher started verl (``started_at``)
    succeeded | failed | stopped | timeout
               the launcher recorded how the process ended (``run.life.record_outcome``);
               a run left ``prepared``/``running`` by a dead notebook is recorded ``failed``
               when it is closed
    imported   a log from elsewhere: no process ended here, the log's own words are the evidence

and then ``run.life.close`` judges it (checks.json, ``verdict`` in run.json), renders
report.html and updates the index; the closing steps done are listed under ``closed`` in
run.json, with the inputs each one read, so a step whose output is fresh is not done again.

A verdict is one of ``passed`` (exit 0), ``improved`` (0: a check is beyond its band on the good
side, so the baseline is stale), ``suspect`` (0: a noisy metric's comparison failed on fewer
nights in a row than its ``confirm_nights``), ``regressed`` (1), ``failed`` or ``stopped`` (3); a page shows
``running`` or ``unjudged`` for a run with none yet.
"""

from __future__ import annotations

from enum import Enum


class StatusWord(str, Enum):
    """A status word: compares equal to its text and prints as it."""

    def __str__(self) -> str:
        return str(self.value)


class RunStatus(StatusWord):
    """run.json's ``status``: where the run's process is, or how it ended."""

    PREPARED = "prepared"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    STOPPED = "stopped"
    TIMEOUT = "timeout"
    IMPORTED = "imported"


class Verdict(StatusWord):
    """The one word a run is judged by (checks.json's and run.json's ``verdict.status``)."""

    PASSED = "passed"
    IMPROVED = "improved"
    SUSPECT = "suspect"
    REGRESSED = "regressed"
    FAILED = "failed"
    STOPPED = "stopped"


class Diagnosed(StatusWord):
    """A diagnosis's ``status``: what the log and the exit say happened to the process."""

    SUCCEEDED = "succeeded"
    FAILED = "failed"
    INCOMPLETE = "incomplete"  # exited 0 (or no exit known) short of its steps
    STOPPED = "stopped"


class Shown(StatusWord):
    """What a page says of a run that has no verdict (yet)."""

    RUNNING = "running"
    UNJUDGED = "unjudged"
    UNKNOWN = "unknown"


# A process that has not ended: a run in one of these is still someone's, or was abandoned.
ACTIVE = (RunStatus.PREPARED.value, RunStatus.RUNNING.value)
# Ended without training to its end, by its own fault or a deadline (not the user's stop).
FAILED_STATUSES = (RunStatus.FAILED.value, RunStatus.TIMEOUT.value)
# Statuses that say nothing about how a process ended (a log from elsewhere has no process).
BARE = (None, RunStatus.IMPORTED.value, Shown.UNKNOWN.value)
# A red night: the verdicts a report answers with the last green night, the ledger counts as red
# and a bisect can start from (the verdict that counts as bad).
RED = (Verdict.REGRESSED.value, Verdict.FAILED.value)
# Verdicts a suite or sweep keeps when it resumes; a stopped run is run again.
FINISHED_VERDICTS = (Verdict.PASSED.value, Verdict.IMPROVED.value, Verdict.SUSPECT.value,
                     Verdict.REGRESSED.value, Verdict.FAILED.value)
VERDICTS = tuple(v.value for v in Verdict)
# Every word the index can show for a run, in the order its filters list them.
SHOWN = (*VERDICTS, Shown.RUNNING.value, Shown.UNJUDGED.value, Shown.UNKNOWN.value)
