"""The CPU platform as verl sees it, loaded the way verl loads it (``VERL_USE_EXTERNAL_MODULES``).

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

PROBE = textwrap.dedent(
    """
    import json, os, tempfile
    import torch, torch.distributed as dist
    import verl  # imports the modules named in VERL_USE_EXTERNAL_MODULES
    import verl.utils.model
    from verl.utils import device
    from verl.utils.distributed import initialize_global_process_group

    module = device.get_torch_device()
    os.environ.update(RANK="0", WORLD_SIZE="1", LOCAL_RANK="0", MASTER_ADDR="127.0.0.1",
                      MASTER_PORT=str(29500 + os.getpid() % 1000))
    initialize_global_process_group()  # builds "cpu:gloo,cpu:gloo" on this platform
    tensor = torch.ones(2)
    dist.all_reduce(tensor)
    print(json.dumps({
        "device_name": device.get_device_name(),
        "backend": device.get_nccl_backend(),
        "device_id": device.get_device_id(),
        "ipc": device.is_support_ipc(),
        "gpu_name": module.get_device_name(),
        "free_total": list(module.mem_get_info()),
        "allocated": module.memory_allocated(),
        "empty_cache": module.empty_cache(),
        "rng_restores": bool(module.set_rng_state(module.get_rng_state()) is None),
        "engine_default_device": os.environ.get("VERL_ENGINE_DEVICE"),
        "all_reduce": tensor.tolist(),
        "pg_backend": str(dist.get_backend()),
        "critic_loader": verl.utils.model.load_valuehead_model.__module__,
    }))
    dist.destroy_process_group()
    """
)


@pytest.fixture(scope="module")
def seen_by_verl(tmp_path_factory: pytest.TempPathFactory) -> dict:
    env = {
        **profile_env("cpu", plugin_path=tmp_path_factory.mktemp("pp")),
        "PATH": "/usr/bin:/bin",
        "HOME": str(Path.home()),
    }
    done = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_verl_selects_the_cpu_platform_with_gloo(seen_by_verl: dict) -> None:
    assert seen_by_verl["device_name"] == "cpu"
    assert seen_by_verl["backend"] == "gloo"
    assert seen_by_verl["device_id"] == "cpu"
    assert seen_by_verl["ipc"] is False


def test_duplicate_cpu_gloo_backend_still_gives_a_working_process_group(seen_by_verl: dict) -> None:
    assert seen_by_verl["all_reduce"] == [1.0, 1.0]
    assert seen_by_verl["pg_backend"] == "gloo"


def test_device_module_answers_cuda_style_calls_on_cpu(seen_by_verl: dict) -> None:
    assert seen_by_verl["gpu_name"] == "CPU"
    free, total = seen_by_verl["free_total"]
    assert 0 < free <= total
    assert seen_by_verl["allocated"] == 0
    assert seen_by_verl["rng_restores"]


def test_critic_loader_is_replaced(seen_by_verl: dict) -> None:
    assert seen_by_verl["critic_loader"] == "workbook.profiles.cpu.critic"


def test_cpu_critic_loader_builds_a_value_head_without_flash_attention(tmp_path: Path) -> None:
    from workbook.assets import ensure_assets

    assets = ensure_assets(tmp_path)
    code = textwrap.dedent(
        f"""
        import torch
        from transformers import AutoConfig
        from workbook.profiles.cpu.critic import load_valuehead_model
        config = AutoConfig.from_pretrained({str(assets.model_dir)!r}, num_labels=1)
        model = load_valuehead_model({str(assets.model_dir)!r}, torch.float32, config, False)
        out = model(input_ids=torch.tensor([[5, 6, 7]])).logits
        print(model.config._attn_implementation, tuple(out.shape))
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["sdpa", "(1,", "3,", "1)"]
