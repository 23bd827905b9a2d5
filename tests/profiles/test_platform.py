"""The CPU platform and the replay rollout backend as verl sees them, loaded the way verl loads
them (``VERL_USE_EXTERNAL_MODULES``, as in a run that replays every step).

Each check runs in a fresh interpreter: the platform module changes process-wide state (verl's
platform singleton, ``torch.distributed.init_process_group``, verl's critic loader).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from workbook.profiles import profile_env
from workbook.profiles.cpu.assets import Assets

PROBE = textwrap.dedent(
    """
    import json, os, socket, sys
    import torch, torch.distributed as dist
    from transformers import AutoConfig
    import verl  # imports the modules named in VERL_USE_EXTERNAL_MODULES
    import verl.utils.model
    from verl.utils import device
    from verl.utils.distributed import initialize_global_process_group

    module = device.get_torch_device()
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    os.environ.update(RANK="0", WORLD_SIZE="1", LOCAL_RANK="0", MASTER_ADDR="127.0.0.1",
                      MASTER_PORT=str(port))
    initialize_global_process_group()  # builds "cpu:gloo,cpu:gloo" on this platform
    tensor = torch.ones(2)
    dist.all_reduce(tensor)
    # the critic as verl's FSDP engine loads it: through the module attribute, at call time
    config = AutoConfig.from_pretrained(sys.argv[1], num_labels=1)
    critic = verl.utils.model.load_valuehead_model(
        local_path=sys.argv[1], torch_dtype=torch.float32, model_config=config,
        trust_remote_code=False,
    )
    values = critic(input_ids=torch.tensor([[5, 6, 7]])).logits
    torch.manual_seed(1234)  # whatever state the worker's RNG is in, the head comes out the same
    before = torch.get_rng_state()
    again = verl.utils.model.load_valuehead_model(
        local_path=sys.argv[1], torch_dtype=torch.float32, model_config=config,
        trust_remote_code=False,
    )
    # the replay rollout backend, looked up by name as verl's worker and trainer do
    import asyncio
    from verl.workers.rollout.base import get_rollout_class
    from verl.workers.rollout.replica import get_rollout_replica_class
    rollout, replica = get_rollout_class("replay", "async"), get_rollout_replica_class("replay")
    bare = replica.__new__(replica)
    asyncio.run(bare.launch_servers())

    def never_read():
        raise AssertionError("the replay backend read the weights")
        yield
    print(json.dumps({
        "replay_rollout": f"{rollout.__module__}.{rollout.__name__}",
        "replay_replica": f"{replica.__module__}.{replica.__name__}",
        "replay_servers": bare.servers,
        "replay_weights": asyncio.run(rollout.update_weights(None, never_read())),
        "critic_head_repeatable": bool(torch.equal(critic.score.weight, again.score.weight)),
        "critic_head_random": float(critic.score.weight.std()) > 0,
        "critic_keeps_global_rng": bool(torch.equal(before, torch.get_rng_state())),
        "device_name": device.get_device_name(),
        "backend": device.get_nccl_backend(),
        "device_id": device.get_device_id(),
        "ipc": device.is_support_ipc(),
        "gpu_name": module.get_device_name(),
        "free_total": list(module.mem_get_info()),
        "allocated": module.memory_allocated(),
        "rng_restores": bool(module.set_rng_state(module.get_rng_state()) is None),
        "all_reduce": tensor.tolist(),
        "pg_backend": str(dist.get_backend()),
        "critic_loader": verl.utils.model.load_valuehead_model.__module__,
        "critic_attention": critic.config._attn_implementation,
        "critic_values_shape": list(values.shape),
    }))
    dist.destroy_process_group()
    """
)


@pytest.fixture(scope="module")
def seen_by_verl(tmp_path_factory: pytest.TempPathFactory, cpu_assets: Assets) -> dict:
    env = {
        **profile_env("cpu", plugin_path=tmp_path_factory.mktemp("pp"), replayed=True),
        "PATH": "/usr/bin:/bin",
        "HOME": str(Path.home()),
    }
    done = subprocess.run([sys.executable, "-c", PROBE, str(cpu_assets.model_dir)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_verl_selects_the_cpu_platform_with_gloo(seen_by_verl: dict) -> None:
    assert seen_by_verl["device_name"] == "cpu"
    assert seen_by_verl["backend"] == "gloo"
    assert seen_by_verl["device_id"] == "cpu"
    assert seen_by_verl["ipc"] is False


def test_duplicate_cpu_gloo_backend_still_gives_a_working_process_group(seen_by_verl: dict) -> None:
    assert seen_by_verl["all_reduce"] == [1.0, 1.0]
    assert seen_by_verl["pg_backend"] == "cpu:gloo"  # verl asked for "cpu:gloo,cpu:gloo"


def test_device_module_answers_cuda_style_calls_on_cpu(seen_by_verl: dict) -> None:
    assert seen_by_verl["gpu_name"] == "CPU"
    free, total = seen_by_verl["free_total"]
    assert 0 < free <= total
    assert seen_by_verl["allocated"] == 0
    assert seen_by_verl["rng_restores"]


def test_the_critic_value_head_is_the_same_in_every_run(seen_by_verl: dict) -> None:
    """Replayed PPO runs are repeatable only if the untrained value head starts the same."""
    assert seen_by_verl["critic_head_random"]
    assert seen_by_verl["critic_head_repeatable"]
    assert seen_by_verl["critic_keeps_global_rng"]


def test_critic_loads_as_a_value_head_with_sdpa_attention(seen_by_verl: dict) -> None:
    assert seen_by_verl["critic_loader"] == "workbook.profiles.cpu.critic"
    assert seen_by_verl["critic_attention"] == "sdpa"
    assert seen_by_verl["critic_values_shape"] == [1, 3, 1]


def test_a_replaying_run_finds_the_replay_backend_in_verls_registries(seen_by_verl: dict) -> None:
    """The worker's rollout and the trainer's replica, by the name the command gives; the replica
    starts no server and the weight sync leaves the weights unread."""
    assert seen_by_verl["replay_rollout"] == "workbook.profiles.cpu.replay.ReplayedRollout"
    assert seen_by_verl["replay_replica"] == "workbook.profiles.cpu.replay.ReplayedReplica"
    assert seen_by_verl["replay_servers"] == []
    assert seen_by_verl["replay_weights"] is None
