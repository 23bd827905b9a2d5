"""The run, live, in the notebook: the one module that imports IPython.

From the first second a launch cell shows a status line (phase, step k of n, elapsed, last step
time, time left) and the tail of the log (colour codes stripped, long lines cut, the newest line
at the bottom), refreshed on every line at most once a second; once steps arrive, the policy
loss, the clip fraction (its title names the configured clip ratios), rollout time against step
time and the reward are redrawn per step. Each part is one display, updated in place, never
appended. The final frame stays when the run ends. Outside a Jupyter kernel (the CLI) nothing
is drawn. With ``echo`` each new phase and step is also printed to the terminal the kernel was
started from, so plain ``papermill`` is not silent either.
"""

from __future__ import annotations

import html
import sys
import threading
import time
import uuid
from base64 import b64encode

from workbook.metrics.console import ANSI_RE
from workbook.metrics.model import RunMetrics
from workbook.metrics.progress import Progress
from workbook.plots.catalog import LIVE_PANELS, Axis
from workbook.plots.panels import clip_ratio_text, draw

TAIL_LINES = 15
LINE_CHARS = 240
REFRESH_S = 1.0


def in_kernel() -> bool:
    """Whether we run inside a Jupyter kernel (papermill or JupyterLab), where displays update."""
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    return shell is not None and "IPKernelApp" in getattr(shell, "config", {})


class LiveView:
    """Status line, log tail and plots that update in place in the notebook during a run."""

    def __init__(
        self,
        *,
        clip_ratio_low: float | None = None,
        clip_ratio_high: float | None = None,
        total_steps: int | None = None,
        enabled: bool | None = None,
        echo: bool = False,
    ) -> None:
        self.title = "Live: loss, clip fraction" + clip_ratio_text(clip_ratio_low, clip_ratio_high)
        self.enabled = in_kernel() if enabled is None else enabled
        self.echo = echo  # also print each phase and step to the terminal (plain papermill)
        self.progress = Progress(total_steps=total_steps)
        self.tail: list[str] = []
        self._id = uuid.uuid4().hex
        self._shown_at: float | None = None  # when the status and tail were last drawn
        self._plotted_step: int | None = None
        self._handles: dict[str, object] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.redraws = 0  # figures drawn (tests check they follow the steps)
        self.frames = 0   # status/tail refreshes (tests check the throttle)

    def start(self) -> None:
        """Show the status at once and keep its clock running until :meth:`close`."""
        if not self.enabled:
            return
        for name in ("status", "tail", "plots"):
            self._show(name, "")
        self._status_and_tail()

        def tick() -> None:
            while not self._stop.wait(REFRESH_S):
                if self._shown_at is None or time.monotonic() - self._shown_at >= REFRESH_S:
                    self._status_and_tail()

        threading.Thread(target=tick, name="workbook-live", daemon=True).start()

    def line(self, text: str, metrics: RunMetrics) -> None:
        """One log line: status and tail at most once a second, plots when a step arrived."""
        if self.progress.feed(text) and self.echo:
            print(f"workbook: {self.progress.status()}", file=sys.__stderr__, flush=True)
        clean = ANSI_RE.sub("", text).rstrip()
        if clean:
            self.tail.append(clean if len(clean) <= LINE_CHARS else clean[:LINE_CHARS] + " …")
            del self.tail[:-TAIL_LINES]
        if not self.enabled:
            return
        if self._shown_at is None or time.monotonic() - self._shown_at >= REFRESH_S:
            self._status_and_tail()
        if metrics.last_step is not None and metrics.last_step != self._plotted_step:
            self._plot(metrics)

    def close(self, metrics: RunMetrics) -> None:
        """The final frame: status, tail and plots as the run ended (they stay in the notebook)."""
        self._stop.set()
        if not self.enabled:
            return
        self._status_and_tail()
        if metrics.last_step is not None:
            self._plot(metrics)

    def _status_and_tail(self) -> None:
        self._shown_at = time.monotonic()
        self.frames += 1
        self._show("status", f'<div data-live="status" style="font-weight:600">'
                             f"{html.escape(self.progress.status())}</div>")
        text = html.escape("\n".join(self.tail))
        self._show("tail", '<pre data-live="tail" style="font-size:11px;white-space:pre-wrap;'
                           f'word-break:break-all;margin:0">{text}</pre>')

    def _plot(self, metrics: RunMetrics) -> None:
        step = metrics.last_step
        axes = [Axis(tuple(m for m in names if metrics.has(m)), unit)
                for names, unit in LIVE_PANELS]
        axes = [a for a in axes if a.metrics]
        if not axes:
            return
        self._plotted_step = step
        png = b64encode(draw(metrics, f"{self.title} (step {step})", axes)).decode("ascii")
        self.redraws += 1
        self._show("plots", f'<img data-live="plots" data-step="{step}" alt="live metrics" '
                            f'src="data:image/png;base64,{png}">')

    def _show(self, name: str, markup: str) -> None:
        from IPython.display import HTML, display

        with self._lock:  # the log pump and the clock both draw
            handle = self._handles.get(name)
            if handle is None:
                self._handles[name] = display(HTML(markup), display_id=f"{self._id}-{name}")
            else:
                handle.update(HTML(markup))  # type: ignore[attr-defined]
