"""The red night a bisect starts from: which verdict counts as bad, and where that was learnt.

A bisect looks for the commit where the bad night's failure began, so it must know what that
failure was: ``regressed`` or ``failed`` (and, for a failed night, its diagnosis category). It is
read from the night's run directory when the user names it (``--bad-run``), else from the
scenario's ledger (the newest red night whose verl commit is the bad one), else the bisect runs
the bad commit first and takes its verdict. A night that failed on the infrastructure is no
failure of verl's: nothing in verl's history explains it, so it is refused.
"""

from __future__ import annotations

from pathlib import Path

from workbook.bisect.state import BadNight
from workbook.core.layout import RunDir, is_run_dir
from workbook.core.quoting import cut
from workbook.core.status import RED
from workbook.errors import InputError
from workbook.history.ledger import read_ledger
from workbook.metrics.failures import INFRASTRUCTURE


def diagnosis_category(run_dir: Path | str | None) -> str | None:
    """The run's diagnosis category (checks.json's, else run.json's), None without one."""
    if not run_dir:
        return None
    rd = RunDir(Path(run_dir))
    for key in ("checks", "run"):
        diagnosis = rd.json_object(key).get("diagnosis")
        if isinstance(diagnosis, dict) and diagnosis.get("category"):
            return str(diagnosis["category"])
    return None


def night_of_run(run_dir: Path) -> BadNight:
    """The bad verdict of the run directory ``--bad-run`` names; InputError when it is none
    (not a run, not judged, green, or failed on the infrastructure)."""
    source = "--bad-run"
    rd = RunDir(Path(run_dir).expanduser().resolve())
    if not rd.path.is_dir() or not is_run_dir(rd.path):
        raise InputError(f"{source} {cut(str(run_dir))}: not a run directory (no run.json)")
    try:
        verdict = rd.verdict()
    except (OSError, ValueError) as exc:
        raise InputError(f"{source} {rd.path}: its verdict cannot be read: {exc}") from None
    status = str(verdict.get("status") or "")
    if status not in RED:
        raise InputError(f"{source} {rd.path}: its verdict is {status or 'missing'}, not "
                         "regressed or failed: nothing to bisect")
    category = diagnosis_category(rd.path) if status == "failed" else None
    if category == INFRASTRUCTURE:
        raise InputError(f"{source} {rd.path} failed on the infrastructure, not in verl's code: "
                         "no verl commit explains it")
    return BadNight(status, category, source, str(rd.path), str(verdict.get("reason") or ""))


def verl_commit_of(run_dir: Path) -> str:
    """The verl commit a run recorded ('' when none)."""
    commits = RunDir(Path(run_dir)).json_object("run").get("commits")
    return str(commits.get("verl") or "") if isinstance(commits, dict) else ""


def night_from_ledger(runs_root: Path, scenario: str, profile: str, bad: str) -> BadNight | None:
    """The newest red night of the scenario's ledger that ran verl at ``bad`` (a full sha; a
    dirty checkout of it too) and did not fail on the infrastructure, else None."""
    nights = sorted((e for e in read_ledger(runs_root, scenario, profile)
                     if e.red and str(e.commits.get("verl") or "").startswith(bad)),
                    key=lambda e: e.sort_key, reverse=True)
    for entry in nights:
        path = entry.run_dir(runs_root)
        category = diagnosis_category(path) if entry.verdict == "failed" else None
        if category == INFRASTRUCTURE:
            continue
        reason = ""
        try:
            reason = str(RunDir(path).verdict().get("reason") or "")
        except (OSError, ValueError):
            pass
        return BadNight(entry.verdict, category, "ledger", str(path), reason)
    return None


__all__ = ["diagnosis_category", "night_from_ledger", "night_of_run", "verl_commit_of"]
