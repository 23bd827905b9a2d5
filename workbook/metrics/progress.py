"""Where a run is, read from its log as it streams: the phase, the step, the time per step.

The first minutes of a verl run print no metrics at all (Ray, the trainer, the model, vLLM all
start first), so a live view that waits for step lines shows nothing. :class:`Progress` reads
the same lines the log gets and moves through the phases verl's own output announces, then
counts steps from the step lines and the ``Training Progress: k/N`` bar. Phases only move
forward, so lines that Ray flushes late never take the status backwards.
"""

from __future__ import annotations

import re
import statistics
import time
from dataclasses import dataclass, field

# (what a line contains, the phase it starts), in the order verl goes through them
PHASES: tuple[tuple[str, str], ...] = (
    ("", "starting verl"),
    ("ray init kwargs", "starting Ray"),
    ("Started a local Ray instance", "starting the trainer"),
    ("Connected to Ray cluster", "starting the trainer"),
    ("(TaskRunner", "starting the trainer"),
    ("(WorkerDict", "loading the model"),
    ("(vLLMHttpServer", "starting vLLM"),
    ("Training Progress", "running the first step"),  # its rollout generated or replayed
)
PROGRESS_RE = re.compile(r"Training Progress:[^|\n]*\|[^|\n]*\|\s*(\d+)/(\d+)")
_STEP = re.compile(r"(?:^|[\s)\]])step:(\d+) - ")


@dataclass
class Progress:
    """Feed it each log line; ask it for :meth:`status`."""

    total_steps: int | None = None
    started: float = field(default_factory=time.monotonic)
    phase: str = PHASES[0][1]
    step: int = 0  # the last finished step
    step_times: list[float] = field(default_factory=list)
    _phase_index: int = 0
    _last_step_at: float | None = None

    def feed(self, line: str, now: float | None = None) -> bool:
        """One log line; True when the phase or the step changed."""
        now = time.monotonic() if now is None else now
        changed = False
        for index in range(self._phase_index + 1, len(PHASES)):
            if PHASES[index][0] in line:
                self._phase_index, self.phase, changed = index, PHASES[index][1], True
        if "Training Progress" in line:
            for bar in PROGRESS_RE.finditer(line):
                self.total_steps = self.total_steps or int(bar.group(2))
        if "step:" in line:
            row = _STEP.search(line)
            if row and int(row.group(1)) > self.step:
                self.step = int(row.group(1))
                if self._last_step_at is not None:
                    self.step_times.append(now - self._last_step_at)
                self._last_step_at, changed = now, True
                self.phase = "training"
        return changed

    def status(self, now: float | None = None) -> str:
        """``step 3 of 4 · 2 min 05 s elapsed · last step 8.8 s · about 9 s left``."""
        now = time.monotonic() if now is None else now
        elapsed = f"{duration_text(now - self.started)} elapsed"
        if self.phase != "training":
            return f"{self.phase} · {elapsed}"
        total = self.total_steps
        doing = self.step + 1 if total is None or self.step < total else self.step
        parts = [f"step {doing} of {total}" if total else f"step {doing}", elapsed]
        if self.step_times:
            parts.append(f"last step {self.step_times[-1]:.1f} s")
            if total and self.step < total:
                left = statistics.median(self.step_times) * (total - self.step)
                parts.append(f"about {duration_text(left)} left")
        return " · ".join(parts)


def duration_text(seconds: float) -> str:
    """``42 s``, ``3 min 05 s``, ``2 h 07 min``."""
    minutes, secs = divmod(max(0, round(seconds)), 60)
    hours, minutes = divmod(minutes, 60)
    if hours:
        return f"{hours} h {minutes:02d} min"
    return f"{minutes} min {secs:02d} s" if minutes else f"{secs} s"
