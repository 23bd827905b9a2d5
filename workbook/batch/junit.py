"""A batch's JUnit file, from the verdict each run recorded: a run is judged once, when it closes.

Each record with a run directory becomes a test suite from that run's ``checks.json`` (its rows
and verdict), else from the verdict summary in its ``run.json``; an item that never ran is a
skipped suite. Nothing here judges: the file says what the run's own report says.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import fields
from pathlib import Path
from typing import Any

from workbook.batch.records import Record
from workbook.checks.rows import CheckRow
from workbook.checks.verdict import RunVerdict
from workbook.core.layout import RunDir
from workbook.core.status import VERDICTS
from workbook.core.status import Verdict as Word

ROW_FIELDS = {f.name for f in fields(CheckRow)}
NUMBERS = ("value", "baseline", "lower", "upper", "sigma",  # written as text when not finite
           "improved_beyond")


def write_batch_junit(records: Sequence[Record], path: Path) -> Path:
    """One ``<testsuite>`` per record, written to ``path``."""
    from workbook.checks.junit import skipped_suite, verdict_suite, write_junit

    suites = []
    for record in records:
        if record.run_dir and Path(record.run_dir).is_dir():
            suites.append(verdict_suite(
                recorded_verdict(Path(record.run_dir), record), record.key,
                time_s=record.duration_s,
                properties={"report": record.report or "", "run_dir": record.run_dir,
                            "scenario": record.scenario}))
        else:
            suites.append(skipped_suite(record.key, f"not run ({record.status})"))
    return write_junit(suites, path)


def recorded_verdict(run_dir: Path, record: Record | None = None) -> RunVerdict:
    """The verdict the run recorded, rows included; a run never judged is a failed one."""
    rd = RunDir(Path(run_dir))
    checks, run = rd.json_object("checks"), rd.json_object("run")
    summary = checks.get("verdict") or run.get("verdict") or {}
    status = str(summary.get("status") or "")
    reason = str(summary.get("reason") or "")
    if status not in VERDICTS:
        status = Word.FAILED.value
        reason = (record.reason if record else "") or "the run was not judged"
    rows = [row for row in (_row(r) for r in checks.get("rows") or []) if row is not None]
    return RunVerdict(status, reason, rows=rows, last_step=checks.get("last_step"),
                   required_step=checks.get("required_step"), baseline=checks.get("baseline"),
                   diagnosis=checks.get("diagnosis") or run.get("diagnosis"),
                   run_status=checks.get("run_status") or run.get("status"))


def _row(data: Any) -> CheckRow | None:
    """A row of checks.json as the verdict held it (its JSON form read back)."""
    if not isinstance(data, dict):
        return None
    known = {k: v for k, v in data.items() if k in ROW_FIELDS}
    try:
        for key in NUMBERS:
            if isinstance(known.get(key), str):
                known[key] = _float(known[key])
        window = known.get("window")
        known["window"] = tuple(window) if isinstance(window, list) and len(window) == 2 else None
        series = known.get("baseline_series")
        known["baseline_series"] = ({int(s): math.nan if v is None else float(v)
                                     for s, v in series.items()}
                                    if isinstance(series, dict) else {})
        return CheckRow(**known)
    except (TypeError, ValueError):
        return None


def _float(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None
