"""One scenario end to end, as ``workbook run``, a suite entry and a sweep point all do it.

The scenario's notebook runs under papermill into the run directory (the notebook's own cells
prepare, launch, judge and finish); whatever becomes of the notebook -- a cell that raised, a
kernel that died, Ctrl-C -- the run is then finished from its files (outcome, verdict, report,
index), so a crashed or stopped run still leaves its log, its metrics so far, a diagnosis and a
report. SIGINT and SIGTERM ask the launcher to stop (``stop.request``): the run ends as
"stopped by the user", reported, never passed.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path

from workbook.checks.verdict import exit_code_of
from workbook.core.layout import RunDir
from workbook.core.project import notebook as project_notebook
from workbook.core.project import run_notebook
from workbook.core.signals import stopping_on_signals
from workbook.core.status import Verdict
from workbook.errors import WorkbookError
from workbook.launch.outcome import request_stop


@dataclass
class RunResult:
    """How one run ended, as a suite's summary and a sweep's table need it."""

    run_dir: Path
    verdict: str
    reason: str
    exit_code: int
    duration_s: float
    report: Path | None
    errors: list[str]


def execute_run(params: Path, sets: list[str], rd: RunDir, *, runs_root: Path,
                launcher: str = "local", notebook: Path | None = None, echo: bool = True
                ) -> RunResult:
    """Run ``params`` (with ``sets``) into the directory ``rd``; never raises for the run's own
    failure. ``runs_root`` is the root whose index the run joins (a suite's or sweep's run
    directory sits deeper). SIGINT/SIGTERM become a stop request."""
    from workbook.run.life import DRIVEN, close
    from workbook.run.notebook import execute

    t0 = time.monotonic()
    notebook = notebook or project_notebook(run_notebook(launcher))
    parameters = {"scenario": str(params), "overrides": list(sets), "run_dir": str(rd.path),
                  "run_root": str(runs_root)}
    os.environ[DRIVEN] = "1"  # the kernel inherits it: this process prints the progress
    with _stop_on_signals(rd), _tail(rd, enabled=echo):
        try:
            execute(notebook, rd.path, parameters, stream=False)
        except WorkbookError as exc:  # judged below from the run's own files
            print(f"workbook: the notebook stopped: {exc.message.splitlines()[0]}",
                  file=sys.stderr)
        except Exception as exc:  # noqa: BLE001 - a dead kernel: the run failed, finish it
            print(f"workbook: the notebook died: {type(exc).__name__}: {exc}", file=sys.stderr)
    done = None
    if not rd.read_json("run").get("finished_at"):  # the notebook did not get to close it
        done = close(rd.path, announce=False)
    verdict = rd.verdict()
    status = str(verdict.get("status") or Verdict.FAILED)
    report = rd.file("report")
    return RunResult(rd.path, status, str(verdict.get("reason") or "the run was not judged"),
                     exit_code_of(status), round(time.monotonic() - t0, 1),
                     report if report.is_file() else None, done.errors if done else [])


def _stop_on_signals(rd: RunDir) -> AbstractContextManager[None]:
    """SIGINT/SIGTERM ask the run to stop; the report still follows."""

    def stop(name: str) -> None:
        request_stop(rd.path, f"stopped by the user ({name})")
        print(f"\nworkbook: stopping the run ({name}); its report follows", file=sys.stderr,
              flush=True)

    return stopping_on_signals(stop)


@contextmanager
def _tail(rd: RunDir, *, enabled: bool) -> Iterator[None]:
    """Stream run.log to the terminal while the notebook runs (the notebook keeps it short)."""
    if not enabled:
        yield
        return
    done = threading.Event()

    def follow() -> None:
        offset = 0
        while True:
            finished = done.is_set()
            path = rd.file("log")
            if path.exists():
                with open(path, "rb") as handle:
                    handle.seek(offset)
                    chunk = handle.read()
                offset += len(chunk)
                if chunk:
                    sys.stdout.write(chunk.decode("utf-8", errors="replace"))
                    sys.stdout.flush()
            if finished:
                return
            time.sleep(0.5)

    thread = threading.Thread(target=follow, daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join(timeout=5)
