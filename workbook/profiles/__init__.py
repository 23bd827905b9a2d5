"""Hardware profiles: the environment and Hydra overrides a scenario's ``profile:`` adds.

    npu    Ascend: nothing of verl's nightly scripts (each scenario's env: carries its own)
    cuda   NVIDIA GPUs
    cpu    no accelerator: the real verl trainer with a tiny model (see ``workbook.profiles.cpu``)

Pure functions of their arguments; the command builder merges the result with the scenario
(scenario values win for env keys the scenario sets explicitly). ``deterministic_env`` is what
each profile adds for a scenario's deterministic mode.
"""

from __future__ import annotations

from pathlib import Path

from workbook.errors import ParamsError
from workbook.profiles.cpu import CPU_DETERMINISTIC_ENV, cpu_env, cpu_overrides

PROFILES = ("npu", "cuda", "cpu")

# What the workbook adds to a command's environment on every profile, whatever the scenario.
_COMMON_ENV = {"PYTHONUNBUFFERED": "1", "HYDRA_FULL_ERROR": "1"}
# Every variable the workbook adds to an npu or cuda command beyond the scenario's env:, and
# why; none of them changes what is trained or how fast (the nightly goldens and `workbook
# nightly sync` allow these and nothing else beyond what the verl script sets).
ADDED_ENV = {
    "PYTHONUNBUFFERED": "the log is read while the run writes it (progress, a stall's last "
                        "line) and a killed run keeps every line it printed",
    "HYDRA_FULL_ERROR": "a bad override fails with Hydra's whole traceback, which the "
                        "diagnosis reads",
    "VERL_FILE_LOGGER_PATH": "verl's file logger writes the metrics into the run directory "
                             "(set by the command builder)",
}

# Nothing of verl's nightly scripts: no setting is common to all thirteen jobs (the PPO
# Qwen3-8B script sets none, its job only TRANSFORMERS_VERBOSITY, which the FSDP-Turbo job
# leaves unset), so each npu scenario's env: carries exactly what its script sets.
NPU_ENV = dict(_COMMON_ENV)


# What a deterministic scenario (``deterministic: true``, workbook.command.determinism) adds to
# its environment, per profile; verl's own full_determinism switches do the rest in-process.
NPU_DETERMINISTIC_ENV = {
    # verl's Ascend precision-alignment guide (docs/ascend_tutorial/dev_guide/
    # precision_analysis/precision_alignment_zh.md, "fixed communication environment"): HCCL's
    # reductions in a fixed order, matmuls without the K-axis shift and shuffle, vLLM's
    # scheduler in one process; LCCL_DETERMINISTIC and ATB_LLM_LCOC_ENABLE are the guide's list
    # for LCCL (HCCL_OP_EXPANSION_MODE=AIV), set too because a scenario's env may turn LCCL on.
    "HCCL_DETERMINISTIC": "true",
    "CLOSE_MATMUL_K_SHIFT": "1",
    "ATB_MATMUL_SHUFFLE_K_ENABLE": "0",
    "LCCL_DETERMINISTIC": "1",
    "ATB_LLM_LCOC_ENABLE": "0",
    "VLLM_ENABLE_V1_MULTIPROCESSING": "0",
}
CUDA_DETERMINISTIC_ENV = {
    # PyTorch's "Reproducibility" notes (and cuBLAS's "Results reproducibility"): cuBLAS is
    # deterministic only with a fixed workspace configuration
    "CUBLAS_WORKSPACE_CONFIG": ":4096:8",
    # vLLM's "Reproducibility" page: V1's scheduling is deterministic without multiprocessing
    "VLLM_ENABLE_V1_MULTIPROCESSING": "0",
    # Megatron Core's "Deterministic Training" guide: NCCL's Ring algorithm reduces in an order
    # fixed by the topology (bit-exact across runs), and Transformer Engine without its
    # nondeterministic kernels; verl's full_determinism pins NCCL for the FSDP engine only
    "NCCL_ALGO": "Ring",
    "NVTE_ALLOW_NONDETERMINISTIC_ALGO": "0",
}


def _check(name: str) -> None:
    if name not in PROFILES:
        raise ParamsError([("profile", f"unknown profile {name!r}; choose one of {PROFILES}")])


def profile_env(
    name: str, *, plugin_path: Path | None = None, pythonpath: str = "", replayed: bool = False
) -> dict[str, str]:
    """Environment variables of profile ``name``.

    ``plugin_path`` (cpu only) is the directory from ``prepare_plugin_path``; ``pythonpath``
    the caller's existing PYTHONPATH, kept after it; ``replayed`` (cpu only): every step replays
    a rollout dump.
    """
    _check(name)
    if name == "npu":
        return dict(NPU_ENV)
    if name == "cuda":
        return dict(_COMMON_ENV)
    if plugin_path is None:
        raise ParamsError([("profile", "the cpu profile needs its plugin path")])
    return cpu_env(plugin_path, pythonpath, replayed=replayed)


def deterministic_env(name: str) -> dict[str, str]:
    """What profile ``name`` adds to a deterministic scenario's environment."""
    _check(name)
    return dict({"npu": NPU_DETERMINISTIC_ENV, "cuda": CUDA_DETERMINISTIC_ENV,
                 "cpu": CPU_DETERMINISTIC_ENV}[name])


def profile_overrides(
    name: str,
    *,
    nnodes: int = 1,
    devices_per_node: int = 1,
    on_existing_cluster: bool = False,
    ray_temp_dir: str | None = None,
    critic: bool = False,
    replayed: bool = False,
) -> list[str]:
    """Hydra overrides of profile ``name``; the keyword arguments matter for ``cpu`` only."""
    _check(name)
    if name in ("npu", "cuda"):
        return [f"trainer.device={name}"]
    return cpu_overrides(
        nnodes=nnodes,
        devices_per_node=devices_per_node,
        on_existing_cluster=on_existing_cluster,
        ray_temp_dir=ray_temp_dir,
        critic=critic,
        replayed=replayed,
    )
