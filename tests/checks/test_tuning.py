"""Tuning is not an algorithm change: a run whose only difference from its baseline's runs is a
performance knob is compared (and may come out improved); an algorithmic override still makes
the comparison "not comparable"."""

from __future__ import annotations

from typing import Any

import pytest

from tests.checks.handmade import evidence_of, steady
from workbook.checks.baseline import Baseline, BaselineMetric
from workbook.checks.spec import CheckSpec
from workbook.checks.verdict import judge_checks
from workbook.params.settings import settings_of

CPU = {"profile": "cpu", "device": "Test CPU", "count": 2}
RUN_ON_CPU = {"status": "succeeded", "exit_code": 0, "profile": "cpu",
              "hardware": {"cpu": "Test CPU", "cpus": 2}}
BLESSED_WITH = {"profile": "cpu", "lr": 1e-4, "clip_ratio_high": 4e-4, "overrides": [
    "actor_rollout_ref.actor.use_torch_compile=True",
    "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=8",
    "algorithm.use_kl_in_reward=False"]}
STEP = "timing_s/step"
# what bless recorded of those runs before tuning was split from the settings: every override
SETTINGS_BEFORE_THE_SPLIT = {"lr": 1e-4, "clip_ratio_high": 4e-4,
                             "overrides": sorted(BLESSED_WITH["overrides"])}


def baseline(settings: dict[str, Any]) -> Baseline:
    """Step time 6.7 s (sigma 0.3) and a loss, blessed from 3 runs with ``settings``."""
    return Baseline({STEP: BaselineMetric(value=6.7, reduce="mean", window=(5, 14), sigma=0.3, n=3),
                     "actor/pg_loss": BaselineMetric(value=0.1, reduce="mean", window=(5, 14),
                                                     sigma=0.001, n=3)},
                    hardware_key=CPU, settings=settings)


def run_with(overrides: list[str], step: float) -> Any:
    scenario = {**BLESSED_WITH, "overrides": overrides}
    return evidence_of(steady({STEP: step, "actor/pg_loss": 0.1}), run=RUN_ON_CPU,
                       scenario=scenario)


def rows(verdict: Any) -> dict[str, str]:
    return {r.metric: r.status for r in verdict.rows if r.kind == "baseline"}


def test_torch_compile_turned_off_is_compared_and_the_faster_step_is_improved() -> None:
    # measured on the tiny CPU scenario: 6.7 s per step compiled, 2.5 s without
    faster = run_with(["actor_rollout_ref.actor.use_torch_compile=False",
                       "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=8",
                       "algorithm.use_kl_in_reward=False"], step=2.5)

    verdict = judge_checks(faster, CheckSpec(), baseline=baseline(settings_of(BLESSED_WITH)))

    assert rows(verdict) == {STEP: "improved", "actor/pg_loss": "pass"}
    assert verdict.status == "improved"


@pytest.mark.parametrize("settings", [settings_of(BLESSED_WITH), SETTINGS_BEFORE_THE_SPLIT],
                         ids=["blessed-after-the-split", "blessed-before-it"])
def test_a_tuning_override_changed_still_compares_with_either_baseline(
        settings: dict[str, Any]) -> None:
    tuned = run_with(["actor_rollout_ref.actor.use_torch_compile=True",
                      "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2",
                      "actor_rollout_ref.rollout.gpu_memory_utilization=0.4",
                      "algorithm.use_kl_in_reward=False"], step=6.7)

    verdict = judge_checks(tuned, CheckSpec(), baseline=baseline(settings))

    assert rows(verdict) == {STEP: "pass", "actor/pg_loss": "pass"}


def test_an_algorithmic_override_changed_is_still_not_comparable() -> None:
    other = run_with([*BLESSED_WITH["overrides"][:2], "algorithm.use_kl_in_reward=True"],
                     step=6.7)

    verdict = judge_checks(other, CheckSpec(), baseline=baseline(settings_of(BLESSED_WITH)))

    assert set(rows(verdict).values()) == {"not_comparable"}
    message = next(r.message for r in verdict.rows if r.kind == "baseline")
    assert "override algorithm.use_kl_in_reward=False dropped" in message
    assert "use_kl_in_reward=True added" in message
