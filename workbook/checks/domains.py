"""What the checks know about verl's metrics, by name: pure data and predicates.

- which metrics must stay finite at every step (losses, KL, entropy, gradient norms): a NaN
  there means the run diverged, whatever the process exit code says;
- which are fractions that must stay within [0, 1] (clip fractions);
- the range each metric can take at all, so a tolerance band that covers the whole range (a
  check that cannot fail) is refused when the scenario is validated;
- which depend on the hardware (time, throughput, memory): compared only with a baseline from
  the same hardware;
- which a replayed rollout makes meaningless (generation time of a step that did not generate);
- which a hardware profile does not measure at all (device memory on the ``cpu`` profile, where
  the device module's memory counters are stand-ins that always return 0).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping

INF = math.inf

# A path segment naming a loss, a KL term, an entropy or a gradient norm.
_HEALTH_SEGMENT = re.compile(r"(?:^|_)(?:loss|kl|entropy|grad_norm)(?:$|_)|loss")
_CLIP_FRACTION = re.compile(r"clipfrac(?:_lower)?$")
_FRACTION = re.compile(r"(?:clipfrac(?:_lower)?|clip_ratio|aborted_ratio|probs_diff_valid)$")
_CORRELATION = re.compile(r"(?:pearson_corr|explained_var)$")
_NON_NEGATIVE = re.compile(
    r"^(?:timing_s|timing_per_token_ms|response_length|response_length_non_aborted|prompt_length"
    r"|global_seqlen|num_turns|training/num_turns|tool_call_counts)/"
    r"|^perf/(?:throughput|time_per_step|total_num_tokens|mfu/)|memory|_gb$|grad_norm$"
    r"|/entropy$|/lr$|/score/|probs_diff_(?:max|mean|std)$"
)
_HARDWARE = re.compile(r"^(?:timing_s|timing_per_token_ms)/|^perf/(?:throughput|time_per_step|mfu/)|memory")
_DEVICE_MEMORY = re.compile(r"perf/max_memory_(?:allocated|reserved)_gb$")
_REPLAYED = re.compile(r"^(?:timing_s/gen|timing_per_token_ms/gen|timing_s/agent_loop/)")

# Metrics a profile's hardware does not measure: the value logged is a stand-in.
UNMEASURED_BY_PROFILE: Mapping[str, re.Pattern[str]] = {"cpu": _DEVICE_MEMORY}


def must_be_finite(metric: str) -> bool:
    """Losses, KL terms, entropies and gradient norms: a NaN or infinity is divergence."""
    return any(_HEALTH_SEGMENT.search(part) for part in metric.split("/"))


def is_clip_fraction(metric: str) -> bool:
    """Share of tokens (or values) clipped: a fraction, so always within [0, 1]."""
    return bool(_CLIP_FRACTION.search(metric))


def domain(metric: str) -> tuple[float, float]:
    """The values ``metric`` can take at all (``-inf``/``inf`` for an open end)."""
    if _FRACTION.search(metric):
        return 0.0, 1.0
    if _CORRELATION.search(metric):
        return -INF, 1.0
    if _NON_NEGATIVE.search(metric):
        return 0.0, INF
    return -INF, INF


def depends_on_hardware(metric: str) -> bool:
    """Time, throughput and memory: only comparable with a baseline from the same hardware."""
    return bool(_HARDWARE.search(metric))


def meaningless_when_replayed(metric: str) -> bool:
    """Generation time of a step whose rollout was replayed from a dump measures a file read."""
    return bool(_REPLAYED.search(metric))


def is_device_memory(metric: str) -> bool:
    return bool(_DEVICE_MEMORY.search(metric))


def unmeasured(metric: str, profile: str | None, values: list[float]) -> bool:
    """Whether the logged values of ``metric`` are stand-ins rather than measurements.

    Device memory is not measured on the ``cpu`` profile; on any hardware, device memory that
    is exactly 0 at every step was not measured either (no accelerator allocates nothing).
    """
    pattern = UNMEASURED_BY_PROFILE.get(profile or "")
    if pattern is not None and pattern.search(metric):
        return True
    return is_device_memory(metric) and bool(values) and all(v == 0.0 for v in values)
