"""The profile table: env and overrides each profile adds, as pure data."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from workbook.errors import ParamsError
from workbook.profiles import ADDED_ENV, PROFILES, profile_env, profile_overrides

DATA = Path(__file__).parent / "data"


def keys(overrides: list[str]) -> list[str]:
    return [item.split("=", 1)[0].lstrip("+") for item in overrides]


@pytest.mark.parametrize(
    ("profile", "device"), [("npu", "trainer.device=npu"), ("cuda", "trainer.device=cuda")]
)
def test_accelerator_profiles_only_set_the_device(profile: str, device: str) -> None:
    assert profile_overrides(profile) == [device]


def test_npu_env_is_only_what_the_workbook_adds_itself() -> None:
    # verl's nightly scripts share no setting (tests/command/test_nightly_goldens.py): each npu
    # scenario's env: carries its own, so a job never runs with another job's HCCL settings
    env = profile_env("npu")
    assert env == {"HYDRA_FULL_ERROR": "1", "PYTHONUNBUFFERED": "1"}
    assert set(env) <= set(ADDED_ENV)
    assert not any(key.startswith(("HCCL", "TASK_QUEUE", "CPU_AFFINITY")) for key in env)


def test_cuda_env_has_no_ascend_settings() -> None:
    assert not any(key.startswith(("HCCL", "TASK_QUEUE")) for key in profile_env("cuda"))


def test_cpu_env_points_verl_at_the_platform_module_and_the_plugin_path(tmp_path: Path) -> None:
    env = profile_env("cpu", plugin_path=tmp_path, pythonpath="/already/there")
    assert env["VERL_USE_EXTERNAL_MODULES"] == "workbook.profiles.cpu.platform"
    assert env["VERL_ENGINE_DEVICE"] == "cuda"
    assert env["VLLM_CPU_KVCACHE_SPACE"] == "1"
    assert env["WANDB_MODE"] == "disabled"
    assert env["TOKENIZERS_PARALLELISM"] == "false"
    assert env["PYTHONPATH"] == f"{tmp_path}:/already/there"


def test_cpu_env_pins_the_kernels_to_avx2_whatever_the_host_offers(tmp_path: Path) -> None:
    # an AVX-512 host otherwise rounds differently and the per-step bands of a replayed run fail
    env = profile_env("cpu", plugin_path=tmp_path)
    assert (env["ATEN_CPU_CAPABILITY"], env["MKL_CBWR"], env["ONEDNN_MAX_CPU_ISA"]) == (
        "avx2", "COMPATIBLE", "AVX2")
    assert not any(k in profile_env("npu") for k in ("ATEN_CPU_CAPABILITY", "MKL_CBWR"))


def test_cpu_env_without_existing_pythonpath_has_no_empty_entry(tmp_path: Path) -> None:
    assert profile_env("cpu", plugin_path=tmp_path)["PYTHONPATH"] == str(tmp_path)


def test_cpu_env_needs_the_plugin_path() -> None:
    with pytest.raises(ParamsError, match="plugin path"):
        profile_env("cpu")


def test_local_cpu_run_declares_ray_resources_and_its_own_temp_dir() -> None:
    overrides = profile_overrides(
        "cpu", nnodes=2, devices_per_node=2, on_existing_cluster=False, ray_temp_dir="/tmp/wb-ab"
    )
    assert "ray_kwargs.ray_init.num_cpus=32" in overrides
    assert "+ray_kwargs.ray_init.num_gpus=4" in overrides
    assert "+ray_kwargs.ray_init._temp_dir=/tmp/wb-ab" in overrides


def test_cpu_run_on_an_existing_cluster_leaves_ray_init_alone() -> None:
    overrides = profile_overrides(
        "cpu", on_existing_cluster=True, ray_temp_dir="/tmp/wb-ab", critic=True
    )
    assert not [key for key in keys(overrides) if key.startswith("ray_kwargs")]


def test_the_ray_a_cpu_run_starts_for_itself_has_no_dashboard_and_no_idle_workers() -> None:
    own = profile_overrides("cpu", on_existing_cluster=False)
    assert "+ray_kwargs.ray_init.include_dashboard=False" in own
    assert "+ray_kwargs.ray_init._system_config.prestart_worker_first_driver=False" in own


def test_cpu_overrides_carry_every_blocker_fix() -> None:
    overrides = profile_overrides("cpu")
    for expected in (
        "trainer.device=cpu",
        "transfer_queue.backend.SimpleStorage.num_data_storage_units=1",
        "+actor_rollout_ref.model.override_config.attn_implementation=sdpa",
        "actor_rollout_ref.actor.strategy=fsdp2",
        "actor_rollout_ref.actor.fsdp_config.strategy=fsdp2",
        "actor_rollout_ref.ref.strategy=fsdp2",
        "+actor_rollout_ref.rollout.enable_sleep_mode=False",
        "actor_rollout_ref.rollout.free_cache_engine=False",
        "actor_rollout_ref.rollout.enforce_eager=True",
        "actor_rollout_ref.rollout.agent.num_workers=1",
        "actor_rollout_ref.model.use_remove_padding=False",
        "data.dataloader_num_workers=0",
    ):
        assert expected in overrides


def test_critic_overrides_only_with_a_critic() -> None:
    assert not [key for key in keys(profile_overrides("cpu")) if key.startswith("critic.")]
    with_critic = profile_overrides("cpu", critic=True)
    assert "critic.fsdp.strategy=fsdp2" in with_critic
    assert "+critic.model.override_config.attn_implementation=sdpa" in with_critic


@pytest.mark.parametrize("profile", PROFILES)
def test_no_profile_sets_a_key_twice(profile: str) -> None:
    overrides = profile_overrides(profile, critic=True, ray_temp_dir="/tmp/wb-ab")
    assert len(keys(overrides)) == len(set(keys(overrides)))


def test_unknown_profile_is_a_params_error_naming_the_field() -> None:
    with pytest.raises(ParamsError) as caught:
        profile_overrides("tpu")
    assert caught.value.problems[0][0] == "profile"
    assert caught.value.exit_code == 2


def test_every_cpu_override_composes_with_the_installed_verl_config() -> None:
    """A key verl does not declare (without ``+``) or a ``+`` on a declared key fails here."""
    from hydra import compose, initialize_config_module

    overrides = profile_overrides("cpu", ray_temp_dir="/tmp/wb-ab", critic=True)
    with initialize_config_module(config_module="verl.trainer.config", version_base=None):
        config = compose("ppo_trainer", overrides=overrides)
    assert config.trainer.device == "cpu"
    assert config.ray_kwargs.ray_init.num_gpus == 1
    assert config.critic.model.override_config.attn_implementation == "sdpa"
    assert config.actor_rollout_ref.rollout.enable_sleep_mode is False


@pytest.mark.parametrize(("fixture", "critic"), [("gspo", False), ("ppo", True)])
def test_recorded_working_cpu_command_carries_every_current_cpu_setting(
    fixture: str, critic: bool
) -> None:
    """The profile may only drift from the real runs recorded in data/ by re-recording them."""
    recorded = json.loads((DATA / f"{fixture}_cpu_command.json").read_text())
    assert recorded["result"]["exit_code"] == 0
    overrides = profile_overrides(
        "cpu", ray_temp_dir=recorded["paths"]["ray_temp_dir"], critic=critic
    )
    assert [o for o in overrides if o not in recorded["argv"]] == []
    env = profile_env("cpu", plugin_path=Path(recorded["paths"]["plugin_path"]))
    assert {k: v for k, v in env.items() if recorded["env"].get(k) != v} == {}
