"""What every launcher returns and the stop-request handshake they share.

A launcher runs a :class:`Plan` (argv + env from ``workbook.command``) for one run directory,
streams each output line to ``run.log`` and to ``on_line``, and returns an :class:`Outcome`.
Stopping is a file, not a signal, so a CLI, a notebook or a test can ask any launcher (local
process group or Ray job) to stop the same way: :func:`request_stop` writes ``stop.request``
into the run directory; launchers poll :func:`stop_requested` and end the run as ``stopped``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from workbook.core.layout import STOP_FILE
from workbook.core.status import RunStatus

LineSink = Callable[[str], None]


@dataclass
class Outcome:
    """How a run ended. ``status`` is one of succeeded|failed|stopped|timeout."""

    status: str
    exit_code: int | None
    started_at: str
    ended_at: str
    wall_time_s: float
    message: str = ""
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status == RunStatus.SUCCEEDED

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def request_stop(run_dir: Path, reason: str = "stop requested") -> None:
    """Ask whatever launcher runs ``run_dir`` to stop it."""
    (Path(run_dir) / STOP_FILE).write_text(reason + "\n", encoding="utf-8")


def stop_requested(run_dir: Path) -> bool:
    return (Path(run_dir) / STOP_FILE).exists()
