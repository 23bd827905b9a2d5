"""Runs a dead workbook process left running, ended before a batch starts its next item.

Found by the workbook's own records (:func:`workbook.launch.leftovers.orphaned_runs`: run.json
says running, its driving process is gone), never by process name. Each one is ended (only the
processes carrying its tag), recorded as failed, and listed in the batch's file under
``leftovers``. Clearing never stops the batch: whatever fails (ending a process, writing a
half-written run's run.json, a state file in it the workbook did not write) is printed, kept in
that list and its traceback appended to the orphaned run's ``workbook-error.log``.
"""

from __future__ import annotations

import sys
import traceback
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from workbook.core.clock import now_iso
from workbook.core.layout import ERROR_LOG, RunDir
from workbook.core.status import RunStatus

ORPHANED = "orphaned: the workbook process driving it died; ended by a later {kind}"


def clear_orphans(runs_root: Path, *, kind: str, skip: Iterable[Path] = ()) -> list[dict[str, Any]]:
    """End and record every orphaned run under ``runs_root`` but those in ``skip`` (the runs
    this batch drives right now); one entry per run, with ``error`` when something failed."""
    from workbook.launch import leftovers

    busy = {Path(p).resolve() for p in skip}
    cleared: list[dict[str, Any]] = []
    try:
        found = [(d, info) for d, info in leftovers.orphaned_runs(runs_root)
                 if d.resolve() not in busy]
    except Exception as exc:  # noqa: BLE001 - the batch goes on; what failed is kept
        entry = {"runs_root": str(runs_root), "at": now_iso(),
                 "error": f"could not look for leftovers: {type(exc).__name__}: {exc}"}
        print(f"{kind}: {entry['error']}", file=sys.stderr, flush=True)
        return [entry]
    for run_dir, info in found:
        cleared.append(_clear(run_dir, info, kind))
    return cleared


def _clear(run_dir: Path, info: dict[str, Any], kind: str) -> dict[str, Any]:
    from workbook.launch import leftovers
    from workbook.launch.outcome import Outcome
    from workbook.run import life

    entry: dict[str, Any] = {"run_dir": str(run_dir), "at": now_iso()}
    errors: list[str] = []
    try:
        entry["killed"] = leftovers.end_run(info, run_dir)
        print(f"{kind}: cleared a run left running by a workbook process that died: {run_dir}"
              f" ({entry['killed']} process(es) needed SIGKILL)", flush=True)
    except Exception as exc:  # noqa: BLE001 - the batch goes on; what failed is kept
        errors.append(_failure(run_dir, kind, "could not end what it left running", exc))
    reason = ORPHANED.format(kind=kind)
    try:
        life.record_outcome(RunDir(run_dir), Outcome(
            RunStatus.FAILED.value, None, str(info.get("started_at") or ""), now_iso(), 0.0,
            reason))
    except Exception as exc:  # noqa: BLE001 - a half-written run dir must not stop the batch
        errors.append(_failure(run_dir, kind, "could not record its outcome in full", exc))
        try:  # at least never "clear" it again before every item
            RunDir(run_dir).update_run(status=RunStatus.FAILED.value, reason=reason)
        except Exception as again:  # noqa: BLE001 - same: kept, printed, the batch goes on
            errors.append(_failure(run_dir, kind, "could not mark it failed in run.json", again))
    if errors:
        entry["error"] = "; ".join(errors)
    return entry


def _failure(run_dir: Path, kind: str, what: str, exc: BaseException) -> str:
    """Print what failed, append its traceback to the run's error log; the one-line message."""
    message = f"{what}: {type(exc).__name__}: {exc}"
    kept = ""
    try:
        with open(run_dir / ERROR_LOG, "a", encoding="utf-8") as log:
            log.write(f"--- {kind}: clearing this orphaned run: {what}\n{traceback.format_exc()}\n")
        kept = f" (traceback in {run_dir / ERROR_LOG})"
    except OSError:
        pass
    print(f"{kind}: {run_dir}: {message}{kept}", file=sys.stderr, flush=True)
    return message
