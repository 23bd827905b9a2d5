"""Live plots while a run goes: the one module that imports IPython.

``launch()`` calls :meth:`LiveView.update` for every line or step it reads; the view redraws
the policy loss, clip fraction and rollout timing in place (one display handle, updated, not
appended) only when a new step arrived, and the log tail at most once a second, so frequent
calls stay cheap. :meth:`LiveView.close` blanks both outputs so the executed notebook, and so
the report, does not carry the live frames. Outside a Jupyter kernel (plain CLI) it does nothing.
"""

from __future__ import annotations

import html
import time
import uuid
from base64 import b64encode

from workbook.metrics.model import RunMetrics
from workbook.plots.panels import Axis, clip_ratio_text, draw

TAIL_LINES = 15
TAIL_INTERVAL_S = 1.0


def in_kernel() -> bool:
    """Whether we run inside a Jupyter kernel (papermill or JupyterLab), where displays update."""
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    return shell is not None and "IPKernelApp" in getattr(shell, "config", {})


class LiveView:
    """Plots and a log tail that update in place in the notebook during a run."""

    def __init__(
        self,
        *,
        clip_ratio_low: float | None = None,
        clip_ratio_high: float | None = None,
        enabled: bool | None = None,
    ) -> None:
        self.title = "Live: policy loss, clip fraction" + clip_ratio_text(
            clip_ratio_low, clip_ratio_high
        )
        self.enabled = in_kernel() if enabled is None else enabled
        self._id = uuid.uuid4().hex
        self._last_step: int | None = None
        self._last_tail = 0.0
        self._handles: dict[str, object] = {}
        self.redraws = 0  # how many times the figure was drawn (tests check the throttle)

    def update(self, metrics: RunMetrics, tail: list[str]) -> None:
        """Redraw the plots when a new step arrived; refresh the tail at most once a second."""
        if not self.enabled:
            return
        now = time.monotonic()
        if tail and now - self._last_tail >= TAIL_INTERVAL_S:
            self._last_tail = now
            text = html.escape("\n".join(tail[-TAIL_LINES:]))
            self._show(
                "tail", f'<pre style="font-size:11px;max-height:16em;overflow:auto">{text}</pre>'
            )
        step = metrics.last_step
        if step is None or step == self._last_step:
            return
        self._last_step = step
        axes = [
            Axis(tuple(m for m in names if metrics.has(m)), unit)
            for names, unit in (
                (("actor/pg_loss",), "loss"),
                (("actor/pg_clipfrac",), "fraction of tokens"),
                (("timing_s/gen", "timing_s/step"), "time (s)"),
            )
        ]
        axes = [a for a in axes if a.metrics]
        if not axes:
            return
        png = b64encode(draw(metrics, f"{self.title} (step {step})", axes)).decode("ascii")
        self.redraws += 1
        self._show("plots", f'<img alt="live metrics" src="data:image/png;base64,{png}">')

    def close(self) -> None:
        """Blank the live outputs: the report shows the final plots, not the live frames."""
        for name in list(self._handles):
            self._show(name, "")
        self._handles.clear()

    def _show(self, name: str, markup: str) -> None:
        from IPython.display import HTML, display

        handle = self._handles.get(name)
        if handle is None:
            self._handles[name] = display(HTML(markup), display_id=f"{self._id}-{name}")
        else:
            handle.update(HTML(markup))  # type: ignore[attr-defined]


def live_view(
    *, clip_ratio_low: float | None = None, clip_ratio_high: float | None = None
) -> LiveView:
    """The live view ``launch()`` feeds (a no-op outside a kernel)."""
    return LiveView(clip_ratio_low=clip_ratio_low, clip_ratio_high=clip_ratio_high)
