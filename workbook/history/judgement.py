"""A night's judgement: the one way a run directory is judged, with the nights before it.

A noisy metric's failure is confirmed by the nights before it (``confirm_nights``), so a run
judged without its scenario's ledger can say ``suspect`` where its closing said ``regressed``.
Closing (``workbook.run.life``), ``workbook check RUN_DIR`` and a baseline proposal's re-judge
all come here, so each hands the checks the same previous nights. Nothing is written: the run's
closing alone records a verdict (checks.json, run.json, the report and the ledger together).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from workbook.checks.runner import judge_run_dir
from workbook.checks.verdict import RunVerdict
from workbook.core.layout import RUN_FILES, read_json_object
from workbook.history.ledger import previous_comparisons, read_ledger


def judge_night(run_dir: Path, *, baseline: Path | None = None, expressions: Sequence[str] = (),
                scenario: tuple[Mapping[str, Any], Path] | None = None) -> RunVerdict:
    """The run directory's verdict as its closing gives it, or as a what-if gives it with
    another ``baseline``, more ``expressions`` or another ``scenario`` (its resolved mapping and
    the folder its baseline path is relative to). Writes nothing.

    Raises:
        ExpressionError, BaselineError, ParamsError, InputError, MetricsError: bad input (exit 2).
    """
    resolved, params_dir = scenario if scenario is not None else (None, None)
    return judge_run_dir(Path(run_dir), scenario=resolved, params_dir=params_dir,
                         baseline=baseline, expressions=expressions,
                         previous=lambda: previous_nights(Path(run_dir)))


def previous_nights(run_dir: Path) -> dict[str, list[str | None]]:
    """The nights before the run in its scenario's ledger (on its hardware, in the runs root it
    names), as each compared metric's baseline-row statuses, newest first. Read only: a ledger
    rebuilt to answer is stored by the closing's ledger step, not here."""
    run_dir = Path(run_dir)
    run = read_json_object(run_dir / RUN_FILES["run"])
    root = Path(str(run["runs_root"])) if run.get("runs_root") else run_dir.parents[1]
    hardware = run.get("hardware")
    profile = hardware.get("profile") if isinstance(hardware, dict) else None
    scenario = str(run.get("scenario") or run_dir.parent.name)
    try:  # as the ledger names it: relative to the runs root when inside it
        path = run_dir.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        path = run_dir.resolve().as_posix()
    ledger = read_ledger(root, scenario, str(run.get("profile") or profile or "unknown"),
                         store=False)
    return previous_comparisons(ledger, path, str(run.get("started_at") or ""))


__all__ = ["judge_night", "previous_nights"]
