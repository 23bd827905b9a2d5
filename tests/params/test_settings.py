"""A scenario's configuration split three ways: algorithmic settings (must match the baseline's),
tuning (speed, memory, rounding: recorded, never a reason for "not comparable") and its env."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import pytest

from workbook.params.settings import (
    TUNING_KEYS,
    algorithmic,
    changed,
    differences,
    environment_of,
    settings_of,
    tuning_in,
    tuning_of,
)
from workbook.params.verl_config import installed_config_dir
from workbook.scenario import load_scenario

REPO = Path(__file__).resolve().parents[2]
TINY = "gspo-tiny-1n1cpu-fsdp2-vllm"

SPLIT = [  # an override, and whether it is tuning (else an algorithmic setting)
    ("actor_rollout_ref.actor.use_torch_compile=False", True),
    ("actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4", True),
    ("actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=4", True),
    ("critic.ppo_micro_batch_size_per_gpu=2", True),
    ("actor_rollout_ref.actor.use_dynamic_bsz=True", True),
    ("actor_rollout_ref.actor.ppo_max_token_len_per_gpu=8192", True),
    ("actor_rollout_ref.model.enable_gradient_checkpointing=False", True),
    ("actor_rollout_ref.actor.fsdp_config.param_offload=True", True),
    ("++actor_rollout_ref.actor.fsdp_config.optimizer_offload=True", True),
    ("actor_rollout_ref.rollout.gpu_memory_utilization=0.6", True),
    ("actor_rollout_ref.rollout.enforce_eager=True", True),
    ("actor_rollout_ref.rollout.max_num_seqs=64", True),
    ("actor_rollout_ref.actor.fsdp_config.full_determinism=True", True),
    ("actor_rollout_ref.actor.entropy_coeff=0.001", False),
    ("actor_rollout_ref.actor.ppo_mini_batch_size=4", False),
    ("actor_rollout_ref.actor.ppo_epochs=2", False),
    ("actor_rollout_ref.rollout.temperature=0.7", False),
    ("algorithm.use_kl_in_reward=True", False),
]


@pytest.mark.parametrize("override, tuning", SPLIT, ids=[o.split("=")[0] for o, _ in SPLIT])
def test_an_override_is_tuning_or_a_setting_never_both(override: str, tuning: bool) -> None:
    scenario = {"lr": 1e-4, "overrides": [override]}

    in_settings = "overrides" in settings_of(scenario)
    in_tuning = bool(tuning_of(scenario))

    assert (in_tuning, in_settings) == (tuning, not tuning)


def test_every_tuning_key_is_a_key_of_verls_own_config() -> None:
    folder = installed_config_dir(sys.executable)
    assert folder is not None, "verl is not installed: nothing to check the keys against"
    keys = {m.group(1) for path in folder.rglob("*.yaml")
            for m in re.finditer(r"^\s*([A-Za-z_]+):", path.read_text(encoding="utf-8"), re.M)}

    assert sorted(TUNING_KEYS - keys) == []


def test_tuning_keeps_each_key_as_written_with_its_value_and_the_scenarios_own_fields() -> None:
    scenario = {"rollout_memory_utilization": 0.3, "deterministic": True, "overrides": [
        "+actor_rollout_ref.actor.use_torch_compile=False",
        "~actor_rollout_ref.rollout.max_num_seqs",
        "trainer.logger=['console']"]}

    assert tuning_of(scenario) == {"actor_rollout_ref.actor.use_torch_compile": "False",
                                   "actor_rollout_ref.rollout.max_num_seqs": None,
                                   "rollout_memory_utilization": 0.3, "deterministic": True}


def test_a_schema_without_deterministic_has_no_such_tuning() -> None:
    assert "deterministic" not in tuning_of({"rollout_memory_utilization": 0.5})


def test_the_environment_is_the_scenarios_env_as_stored() -> None:
    assert environment_of({"env": {"HCCL_BUFFSIZE": 200, "TOKEN": "<redacted>"}}) == {
        "HCCL_BUFFSIZE": "200", "TOKEN": "<redacted>"}
    assert environment_of({}) == {}


def test_settings_recorded_before_the_split_compare_without_their_tuning() -> None:
    old = {"lr": 1e-4, "overrides": ["actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=8",
                                     "algorithm.use_kl_in_reward=False"]}
    new = settings_of({"lr": 1e-4, "overrides": [
        "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2",
        "algorithm.use_kl_in_reward=False"]})

    assert changed(old, new) == [] and differences(old, new) == []
    assert algorithmic(old) == new
    assert tuning_in(old) == {"actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu": "8"}


@pytest.mark.parametrize("change, unlike", [
    ({"overrides+": "actor_rollout_ref.actor.use_torch_compile=False"}, []),
    ({"rollout_memory_utilization": 0.6}, []),
    ({"env": {"VLLM_CPU_KVCACHE_SPACE": "8"}}, []),
    ({"overrides+": "actor_rollout_ref.actor.entropy_coeff=0.001"},
     ["override actor_rollout_ref.actor.entropy_coeff=0.001 added"]),
    ({"lr": 2e-4}, ["lr 0.0001 -> 0.0002"]),
], ids=["tuning-override", "memory-field", "env", "algorithmic-override", "lr"])
def test_only_algorithmic_settings_of_the_real_scenario_differ(
        change: dict[str, Any], unlike: list[str]) -> None:
    scenario = load_scenario(REPO / "params" / f"{TINY}.yaml", check_files=False).model_dump(
        mode="json")
    other = dict(scenario)
    for key, value in change.items():
        if key == "overrides+":
            other["overrides"] = [*scenario["overrides"], value]
        else:
            other[key] = value

    assert differences(settings_of(scenario), settings_of(other)) == unlike
