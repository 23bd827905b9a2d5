"""A scenario's configuration, split three ways: its algorithmic settings, its tuning, its env.

**Settings** are what must match for a baseline comparison to mean anything. A run trained with
another clip ratio, learning rate or batch geometry than the baseline's runs is not a regression
when its numbers differ; it is a different experiment. These settings are recorded with every
blessed baseline and compared with each judged run's. Paths do not count: a model or data file
is named by its last path component (``~/.cache/models/Qwen/Qwen3-8B`` and ``/data/Qwen3-8B``
are the same model), and settings that only move logs and files around (logger, dump and
checkpoint folders, names) are left out.

**Tuning** is what changes how fast the same algorithm runs, how much memory it takes or the
last digits of its numbers, never what it computes: a raw override whose key ends in one of
:data:`TUNING_KEYS`, the scenario's ``rollout_memory_utilization`` and, where the schema has it,
``deterministic``. Turning ``use_torch_compile`` off made the tiny CPU scenario's step 6.7 s ->
2.5 s once (a cold compile cache); counted as a setting, such a night could only be "not
comparable", never "improved". Each
key was checked against verl 0.9.1's ``verl/trainer/config``:

- micro batches (``ppo_micro_batch_size_per_gpu``, ``log_prob_micro_batch_size_per_gpu``,
  ``micro_batch_size_per_gpu``, ``use_dynamic_bsz`` with its ``*_max_token_len_per_gpu``)
  split a mini-batch for gradient accumulation or a forward pass into chunks; verl normalises
  the loss over the global mini-batch (``batch_num_tokens``, ``global_batch_size`` in
  ``workers/utils/losses.py``), so the update is the same up to rounding. The mini-batch
  (``ppo_mini_batch_size``) is the algorithm's and stays a setting;
- ``use_torch_compile``, ``use_fused_kernels``, ``enforce_eager`` (vLLM without CUDA graphs),
  ``full_determinism`` (deterministic kernels, "only for debugging"): the same computation,
  compiled, fused or ordered differently;
- ``enable_gradient_checkpointing``, ``entropy_checkpointing``,
  ``entropy_from_logits_with_chunking``, ``param_offload``, ``optimizer_offload``,
  ``offload_policy``, ``reshard_after_forward``, ``forward_prefetch``: memory against recompute
  or communication;
- vLLM's engine (``gpu_memory_utilization``, ``free_cache_engine``, ``enable_chunked_prefill``,
  ``max_num_batched_tokens``, ``max_num_seqs``, ``enable_prefix_caching``): how the same
  requests are scheduled and cached.

Keys that only look like tuning stay settings: ``ppo_epochs``, ``shuffle``, the rollout's
``temperature``, ``top_p``, ``n`` and lengths change what is trained on; tensor and sequence
parallel sizes are first-class fields the baseline names (``rollout_tp``,
``sequence_parallel_size``).

Tuning and the scenario's ``env:`` (as stored, redacted) are recorded with every ledger entry
and blessed baseline and listed in "what changed"; neither ever makes a comparison "not
comparable". Settings recorded before the split may hold tuning overrides: :func:`changed`
compares without them, and :func:`tuning_in` reads them back.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import Any

from workbook.core.quoting import value_text
from workbook.core.redaction import redact_text

FIELDS = (
    "model_path", "critic_model_path", "train_files", "val_files",
    "adv_estimator", "policy_loss", "loss_agg_mode",
    "clip_ratio_low", "clip_ratio_high", "clip_ratio_c", "lr", "critic_lr",
    "total_training_steps", "total_epochs", "train_batch_size", "ppo_mini_batch_size",
    "rollout_n", "max_prompt_length", "max_response_length",
    "nodes", "devices_per_node", "sequence_parallel_size", "rollout_tp", "seed",
)  # fmt: skip
PATH_FIELDS = ("model_path", "critic_model_path", "train_files", "val_files")
# The scenario's own fields that are tuning (``deterministic`` exists in newer schemas only).
TUNING_FIELDS = ("rollout_memory_utilization", "deterministic")
# Raw override keys (by their last part) that change speed, memory or rounding, not the algorithm.
TUNING_KEYS = frozenset((
    "use_torch_compile", "ppo_micro_batch_size_per_gpu", "log_prob_micro_batch_size_per_gpu",
    "micro_batch_size_per_gpu", "use_dynamic_bsz", "ppo_max_token_len_per_gpu",
    "log_prob_max_token_len_per_gpu", "enable_gradient_checkpointing", "param_offload",
    "optimizer_offload", "offload_policy", "reshard_after_forward", "forward_prefetch",
    "use_fused_kernels", "entropy_checkpointing", "entropy_from_logits_with_chunking",
    "gpu_memory_utilization", "enforce_eager", "free_cache_engine", "enable_chunked_prefill",
    "max_num_batched_tokens", "max_num_seqs", "enable_prefix_caching", "full_determinism",
))  # fmt: skip
# Raw override keys (by their last part) that move files and logs, not the algorithm.
_NOT_SETTINGS = (
    "logger", "project_name", "experiment_name", "dump_dir", "default_local_dir", "save_freq",
    "test_freq", "val_before_train", "num_workers", "dataloader_num_workers", "resume_mode",
)  # fmt: skip
OVERRIDES = "overrides"


def settings_of(scenario: Mapping[str, Any]) -> dict[str, Any]:
    """The algorithmic settings of a resolved scenario (its ``params.resolved.yaml`` content)."""
    out: dict[str, Any] = {}
    for name in FIELDS:
        value = scenario.get(name)
        if value is None:
            continue
        out[name] = _path_name(value) if name in PATH_FIELDS else value
    overrides = sorted(
        _override(item) for item in scenario.get(OVERRIDES) or [] if _counts(str(item))
    )
    if overrides:
        out[OVERRIDES] = overrides
    rollouts = scenario.get("rollouts") or {}
    if isinstance(rollouts, Mapping) and rollouts.get("replay"):
        out["replayed_rollouts"] = _path_name(rollouts["replay"])
    return out


def tuning_of(scenario: Mapping[str, Any]) -> dict[str, Any]:
    """The tuning of a resolved scenario: ``{override key: value as written}`` for each tuning
    override (``~key``: None, verl's default) and its tuning fields that are set."""
    out = tuning_in({OVERRIDES: [str(o) for o in scenario.get(OVERRIDES) or []]})
    out.update({name: scenario[name] for name in TUNING_FIELDS if scenario.get(name) is not None})
    return out


def tuning_in(settings: Mapping[str, Any]) -> dict[str, Any]:
    """The tuning overrides among ``settings``' overrides (what settings recorded before the
    split held), as :func:`tuning_of` names them."""
    out: dict[str, Any] = {}
    for item in settings.get(OVERRIDES) or []:
        key, sep, value = str(item).partition("=")
        name = key.strip().lstrip("+")
        if _is_tuning(name):
            out[name.lstrip("~")] = value if sep and not name.startswith("~") else None
    return out


def environment_of(scenario: Mapping[str, Any]) -> dict[str, str]:
    """The scenario's ``env:`` as stored (a resolved scenario is written redacted)."""
    env = scenario.get("env")
    return {str(k): str(v) for k, v in env.items()} if isinstance(env, Mapping) else {}


def algorithmic(settings: Mapping[str, Any]) -> dict[str, Any]:
    """``settings`` without tuning overrides (a baseline or ledger entry written before the split
    recorded them among its settings)."""
    out = dict(settings)
    if OVERRIDES in out:
        kept = [o for o in out[OVERRIDES] or [] if not _is_tuning(str(o).partition("=")[0])]
        if kept:
            out[OVERRIDES] = kept
        else:
            del out[OVERRIDES]
    return out


def changed(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[tuple[str, Any, Any]]:
    """Each algorithmic setting that differs as ``(name, before, after)``, by name; an override
    added or dropped is one item by itself, ``("override X", True, False)`` for one dropped.
    Tuning overrides either side still holds from before the split are not compared."""
    before, after = algorithmic(before), algorithmic(after)
    found: list[tuple[str, Any, Any]] = []
    for name in sorted(set(before) | set(after)):
        if name == OVERRIDES:
            old, new = set(before.get(name) or []), set(after.get(name) or [])
            found += [(f"override {item}", True, False) for item in sorted(old - new)]
            found += [(f"override {item}", False, True) for item in sorted(new - old)]
        elif before.get(name) != after.get(name):
            found.append((name, before.get(name), after.get(name)))
    return found


def differences(baseline: Mapping[str, Any], run: Mapping[str, Any]) -> list[str]:
    """What differs, one phrase per setting (``clip_ratio_high 0.0004 -> 0.0006``)."""
    found = []
    for name, old, new in changed(baseline, run):
        if name.startswith("override ") and isinstance(old, bool):
            found.append(f"{name} {'dropped' if old else 'added'}")
        else:
            found.append(f"{name} {value_text(old, 'unset')} -> {value_text(new, 'unset')}")
    return found


def _path_name(value: Any) -> str:
    return PurePosixPath(str(value).rstrip("/")).name or str(value)


def _last_part(key: str) -> str:
    return key.strip().lstrip("+~").rsplit(".", 1)[-1]


def _is_tuning(key: str) -> bool:
    return _last_part(key) in TUNING_KEYS


def _counts(item: str) -> bool:
    """Whether a raw override is an algorithmic setting: neither files and logs nor tuning."""
    key = item.split("=", 1)[0]
    return _last_part(key) not in _NOT_SETTINGS and not _is_tuning(key)


def _override(item: str) -> str:
    """``key=value`` with a path-like value reduced to its last component, and redacted (the
    settings reach the ledger and the baselines: a secret is no setting)."""
    key, sep, value = str(item).partition("=")
    if sep and ("/" in value or value.startswith(("~", "$"))) and not value.startswith("["):
        value = _path_name(value)
    return redact_text(f"{key}{sep}{value}")
