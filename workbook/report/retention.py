"""A published site's retention: the ledger for ever, full run pages for the newest nights.

A site that keeps every night's report and log outgrows GitHub Pages within months, yet the
across-nights features need every night: the ledger (last green night, what changed, onsets,
``confirm_nights``, stale baselines) and each run's line in the index and point on its trend
chart. So a run of a night older than the newest ``keep_nights`` (a night is the UTC date a run
started) loses its report, log and shell command; it keeps ``run.json``, ``checks.json``, its
params and ``command.json`` (what the index and a ledger rebuild read) and a ``metrics.jsonl``
cut down to the series the index charts and its checks compared, and gets a note
(:data:`~workbook.core.layout.PRUNED_FILE`) saying what went and when, so the index lists it,
with its verdict, as pruned. Pruning is idempotent: a run already cut is left as it is.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from workbook.core.clock import now_iso, utc_time
from workbook.core.layout import (
    PRUNED_FILE,
    RUN_FILES,
    read_json_object,
    write_json,
    write_redacted,
)
from workbook.metrics.names import canonical_name
from workbook.report.summary import HEADLINES, scan
from workbook.report.view import load_view

KEEP_NIGHTS = 30
REMOVED = ("report", "log", "command_sh", "notebook")  # what a pruned run no longer has


def prune(site: Path, keep_nights: int = KEEP_NIGHTS) -> list[Path]:
    """Cut every run of ``site`` older than its newest ``keep_nights`` nights (see the module
    docstring); the runs cut now."""
    nights = {run: night_of(run) for run in scan(Path(site)).runs}
    kept = set(sorted(set(nights.values()), reverse=True)[:max(keep_nights, 0)])
    return [run for run, night in sorted(nights.items()) if night not in kept
            and _cut(run, night, keep_nights)]


def night_of(run_dir: Path) -> str:
    """The night a run belongs to: the UTC date it started (``2026-11-03``), else its run id's
    (``20261103T...``)."""
    run = read_json_object(Path(run_dir) / RUN_FILES["run"])
    started = utc_time(str(run.get("started_at") or ""))
    if started is not None:
        return started.date().isoformat()
    stamp = Path(run_dir).name[:8]
    return f"{stamp[:4]}-{stamp[4:6]}-{stamp[6:]}" if stamp.isdigit() else ""


def _cut(run_dir: Path, night: str, keep_nights: int) -> bool:
    """Cut one run; False when there was nothing left to cut."""
    present = [RUN_FILES[k] for k in REMOVED if (run_dir / RUN_FILES[k]).is_file()
               or (run_dir / RUN_FILES[k]).is_symlink()]
    if not present:
        return False
    _keep_charted_metrics(run_dir)  # read before the log goes: it may be the only metrics source
    for name in present:
        (run_dir / name).unlink(missing_ok=True)
    note = read_json_object(run_dir / PRUNED_FILE)
    removed = sorted({*(str(n) for n in note.get("removed") or []), *present})
    write_json(run_dir / PRUNED_FILE, {"pruned_at": now_iso(), "night": night,
                                       "keep_nights": keep_nights, "removed": removed})
    return True


def _keep_charted_metrics(run_dir: Path) -> None:
    """``metrics.jsonl`` with only the series the index charts and the run's checks compared
    (from whichever file the run's metrics are read from), one file-logger record per step."""
    metrics = load_view(run_dir, quick=False).metrics
    checks = read_json_object(run_dir / RUN_FILES["checks"]).get("rows")
    wanted = {m for names, _unit in HEADLINES.values() for m in names}
    wanted |= {str(r["metric"]) for r in checks if isinstance(r, dict) and r.get("metric")} \
        if isinstance(checks, list) else set()
    names = [n for n in metrics.names() if canonical_name(n) in wanted or n in wanted]
    steps: dict[int, dict[str, float | None]] = {}
    for name in names:
        for step, value in metrics.series(name).items():
            steps.setdefault(step, {})[name] = value if math.isfinite(value) else None
    if not steps:
        return  # nothing to chart: the file, if any, stays as it is
    text = "".join(json.dumps({"step": step, "data": steps[step]}, sort_keys=True) + "\n"
                   for step in sorted(steps))
    write_redacted(run_dir / RUN_FILES["metrics"], text)


__all__ = ["KEEP_NIGHTS", "REMOVED", "night_of", "prune"]
