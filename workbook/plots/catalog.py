"""Which verl metrics the plots show, and how: pure data, no matplotlib.

The report's panels (:data:`PANELS`) and the notebook's live view (:data:`LIVE_PANELS`) name
verl's own metric keys; both drawings (:mod:`workbook.plots.panels`, :mod:`workbook.plots.live`)
read them from here, so a renamed verl metric is one edit, and code that only needs the
catalogue (which metric has which unit) never loads matplotlib.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Axis:
    metrics: tuple[str, ...]
    ylabel: str


@dataclass(frozen=True)
class PanelSpec:
    key: str
    title: str
    axes: tuple[Axis, ...]


PANELS: tuple[PanelSpec, ...] = (
    PanelSpec("policy_loss", "Policy loss", (Axis(("actor/pg_loss",), "loss"),)),
    PanelSpec(
        "clip_fraction",
        "Clip fraction",
        (Axis(("actor/pg_clipfrac", "actor/pg_clipfrac_lower"), "fraction of tokens"),),
    ),
    PanelSpec(
        "rollout_timing",
        "Rollout time against step time",
        (Axis(("timing_s/gen", "timing_s/step"), "time (s)"),),
    ),
    PanelSpec("reward", "Reward", (Axis(("critic/score/mean", "critic/rewards/mean"), "reward"),)),
    PanelSpec(
        "response_length",
        "Response length",
        (
            Axis(
                ("response_length/mean", "response_length/max", "response_length/min"),
                "length (tokens)",
            ),
        ),
    ),
    PanelSpec("throughput", "Throughput", (Axis(("perf/throughput",), "tokens/s/device"),)),
    PanelSpec(
        "memory",
        "Peak accelerator memory (actor)",
        (Axis(("actor/perf/max_memory_allocated_gb",), "memory (GB)"),),
    ),
    PanelSpec(
        "critic",
        "Critic",
        (
            Axis(("critic/vf_loss",), "value loss"),
            Axis(("critic/vf_clipfrac",), "fraction of tokens"),
        ),
    ),
)

# The live view's panels: (metrics, unit), redrawn per step while a run goes.
LIVE_PANELS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("actor/pg_loss",), "policy loss"),
    (("actor/pg_clipfrac",), "clip fraction"),
    (("timing_s/gen", "timing_s/step"), "time (s)"),
    (("critic/score/mean", "critic/rewards/mean"), "reward"),
)

# timing_s/* keys that are parts of another phase (or bookkeeping), not phases of a step
NESTED_TIMINGS = {
    "step",
    "generate_sequences",
    "reshard",
    "start_profile",
    "stop_profile",
    "switch_wait",
    "agent_loop",
}

# Metrics that verl logs as 0 when they do not apply: the lower clip fraction outside dual-clip
# losses, accelerator memory on CPU. Identically zero, they are not drawn.
ZERO_MEANS_ABSENT = ("actor/pg_clipfrac_lower", "actor/perf/max_memory_allocated_gb")


def unit_of(metric: str) -> str:
    """The y-axis label a metric is drawn with (its panel's, else by its name's prefix)."""
    for spec in PANELS:
        for ax in spec.axes:
            if metric in ax.metrics:
                return ax.ylabel
    return "time (s)" if metric.startswith("timing_s/") else "value"
