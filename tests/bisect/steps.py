"""Stand-ins for a bisect's unit tests: a step's run chosen per commit, and a red night.

:class:`FakeSteps` takes ``execute_run``'s place (the seam the batch engine offers): it learns
which commit a step tests from the worktree its ``verl.path`` names (each commit of
:mod:`tests.bisect.repos` writes its name into ``verl/__init__.py``), so a wrong checkout would
show, and leaves a run directory with the verdict the table gives that commit.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from workbook.core.layout import STOP_FILE, RunDir
from workbook.run.driver import RunResult

CODES = {"passed": 0, "improved": 0, "suspect": 0, "regressed": 1}


def judged(path: Path, verdict: str, category: str | None = None, *, verl: str = "",
           failing: str = "actor/pg_loss vs baseline") -> Path:
    """A closed run directory at ``path``: run.json, checks.json (a failing row when red) and
    report.html."""
    path.mkdir(parents=True, exist_ok=True)
    diagnosis = {"status": "failed", "category": category, "summary": category} if category else None
    rows = [{"name": "actor/pg_loss vs baseline", "kind": "baseline", "metric": "actor/pg_loss",
             "status": "pass"}]
    if verdict in ("regressed", "failed"):
        rows.append({"name": failing, "kind": "baseline", "status": "fail",
                     "message": f"{failing} is out of its band"})
    summary = {"status": verdict, "reason": f"it {verdict}"}
    run = {"run_id": path.name, "scenario": "npu", "profile": "npu", "status": "succeeded",
           "verdict": summary, "diagnosis": diagnosis, "commits": {"verl": verl} if verl else {}}
    (path / "run.json").write_text(json.dumps(run), encoding="utf-8")
    (path / "checks.json").write_text(json.dumps({"verdict": summary, "diagnosis": diagnosis,
                                                  "rows": rows}), encoding="utf-8")
    (path / "report.html").write_text("<html><body>report</body></html>", encoding="utf-8")
    return path


class FakeSteps:
    """``execute_run`` for a bisect: ``verdicts`` by commit name (``c4``), a verdict word or
    ``failed:CATEGORY``; ``wait`` runs until the engine asks it to stop."""

    def __init__(self, verdicts: dict[str, str], default: str = "passed",
                 on_start: Any = None) -> None:
        self.verdicts, self.default, self.on_start = verdicts, default, on_start
        self.tested: list[str] = []
        self.sets: list[list[str]] = []

    def __call__(self, params: Path, sets: list[str], rd: RunDir, *, runs_root: Path,
                 launcher: str, echo: bool, **more: Any) -> RunResult:
        checkout = Path(next(s.split("=", 1)[1] for s in sets if s.startswith("verl.path=")))
        name = (checkout / "verl" / "__init__.py").read_text(encoding="utf-8").split()[1]
        self.tested.append(name)
        self.sets.append(list(sets))
        if self.on_start is not None:
            self.on_start(name)
        verdict, _, category = self.verdicts.get(name, self.default).partition(":")
        if verdict == "wait":
            for _ in range(600):
                if (rd.path / STOP_FILE).exists():
                    break
                threading.Event().wait(0.05)
            verdict, category = "stopped", "stopped"
        judged(rd.path, verdict, category or None)
        return RunResult(rd.path, verdict, f"it {verdict}", CODES.get(verdict, 3), 1.0,
                         rd.path / "report.html", [])
