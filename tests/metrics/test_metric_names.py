"""Canonical names across verl versions."""

from __future__ import annotations

import pytest

from workbook.metrics.names import canonical, canonical_name


@pytest.mark.parametrize(
    "old,new,scale",
    [
        ("timing/gen", "timing_s/gen", 1.0),
        ("timing/update_actor", "timing_s/update_actor", 1.0),
        ("timing_per_token/gen", "timing_per_token_ms/gen", 1000.0),
        ("mfu/actor", "perf/mfu/actor", 1.0),
        ("perf/max_memory_allocated_gb", "actor/perf/max_memory_allocated_gb", 1.0),
        ("perf/max_memory_reserved_gb", "actor/perf/max_memory_reserved_gb", 1.0),
        ("perf/cpu_memory_used_gb", "actor/perf/cpu_memory_used_gb", 1.0),
        ("critic/kl", "actor/reward_kl_penalty", 1.0),
        ("critic/kl_coeff", "actor/reward_kl_penalty_coeff", 1.0),
    ],
)
def test_old_names_map_to_current_ones(old: str, new: str, scale: float) -> None:
    assert canonical(old) == (new, scale)


@pytest.mark.parametrize(
    "name",
    [
        "timing_s/gen",
        "timing_per_token_ms/gen",
        "perf/mfu/actor",
        "actor/perf/max_memory_allocated_gb",
        "critic/perf/max_memory_allocated_gb",
        "perf/throughput",
        "perf/time_per_step",
        "critic/kl_loss",
        "timing_s/testing",
    ],
)
def test_current_names_are_unchanged(name: str) -> None:
    assert canonical_name(name) == name
