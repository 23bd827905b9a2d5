"""A stand-in for the per-item run in the engine's unit tests (the real runs are the e2e
suites'): ``execute_run``'s signature, a verdict chosen per item, no verl, no notebook."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from workbook.core.layout import STOP_FILE, RunDir
from workbook.run.driver import RunResult


class FakeRun:
    """``execute_run``'s stand-in: records each call and ends it with a verdict chosen per key
    (``"wait"``: until the engine asks it to stop, then ``stopped``)."""

    def __init__(self, verdicts: dict[str, str] | None = None, default: str = "passed",
                 raising: dict[str, BaseException] | None = None,
                 on_start: Callable[[str], object] | None = None) -> None:
        self.verdicts, self.default = verdicts or {}, default
        self.raising = raising or {}
        self.on_start = on_start
        self.calls: list[tuple[str, list[str], str]] = []
        self.lock = threading.Lock()

    def __call__(self, params: Path, sets: list[str], rd: RunDir, *, runs_root: Path,
                 launcher: str, echo: bool, **more: Any) -> RunResult:
        key = rd.path.parent.name
        with self.lock:
            self.calls.append((key, list(sets), launcher))
        if self.on_start is not None:
            self.on_start(key)
        if key in self.raising:
            raise self.raising[key]
        verdict = self.verdicts.get(key, self.default)
        reason = f"it {verdict}"
        if verdict == "wait":
            stop, reason = rd.path / STOP_FILE, ""
            for _ in range(600):  # the file may exist a moment before its reason is in it
                reason = stop.read_text().strip() if stop.exists() else ""
                if reason:
                    break
                threading.Event().wait(0.05)
            verdict = "stopped"
        # a process's return code, as the old sweep kept it, never a record's exit_code
        return RunResult(rd.path, verdict, reason, 130 if verdict == "stopped" else 0, 1.25,
                         None, [])

    @property
    def keys(self) -> list[str]:
        return [k for k, _, _ in self.calls]
