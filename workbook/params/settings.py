"""A scenario's algorithmic settings: what must match for a baseline comparison to mean anything.

A run trained with another clip ratio, learning rate or batch geometry than the baseline's runs
is not a regression when its numbers differ; it is a different experiment. These settings are
recorded with every blessed baseline and compared with each judged run's. Environment
variables and paths do not count: a model or data file is named by its last path component
(``~/.cache/models/Qwen/Qwen3-8B`` and ``/data/Qwen3-8B`` are the same model), and settings that
only move logs and files around (logger, dump and checkpoint folders, names) are left out.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import Any

FIELDS = (
    "model_path", "critic_model_path", "train_files", "val_files",
    "adv_estimator", "policy_loss", "loss_agg_mode",
    "clip_ratio_low", "clip_ratio_high", "clip_ratio_c", "lr", "critic_lr",
    "total_training_steps", "total_epochs", "train_batch_size", "ppo_mini_batch_size",
    "rollout_n", "max_prompt_length", "max_response_length",
    "nodes", "devices_per_node", "sequence_parallel_size", "rollout_tp", "seed",
)  # fmt: skip
PATH_FIELDS = ("model_path", "critic_model_path", "train_files", "val_files")
# Raw override keys (by their last part) that move files and logs, not the algorithm.
_NOT_SETTINGS = (
    "logger", "project_name", "experiment_name", "dump_dir", "default_local_dir", "save_freq",
    "test_freq", "val_before_train", "num_workers", "dataloader_num_workers", "resume_mode",
)  # fmt: skip


def settings_of(scenario: Mapping[str, Any]) -> dict[str, Any]:
    """The settings of a resolved scenario (its ``params.resolved.yaml`` content)."""
    out: dict[str, Any] = {}
    for name in FIELDS:
        value = scenario.get(name)
        if value is None:
            continue
        out[name] = _path_name(value) if name in PATH_FIELDS else value
    overrides = sorted(
        _override(item) for item in scenario.get("overrides") or [] if _counts(str(item))
    )
    if overrides:
        out["overrides"] = overrides
    rollouts = scenario.get("rollouts") or {}
    if isinstance(rollouts, Mapping) and rollouts.get("replay"):
        out["replayed_rollouts"] = _path_name(rollouts["replay"])
    return out


def changed(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[tuple[str, Any, Any]]:
    """Each setting that differs as ``(name, before, after)``, by name; an override added or
    dropped is one item by itself, ``("override X", True, False)`` for one dropped."""
    found: list[tuple[str, Any, Any]] = []
    for name in sorted(set(before) | set(after)):
        if name == "overrides":
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
            found.append(f"{name} {_text(old)} -> {_text(new)}")
    return found


def _path_name(value: Any) -> str:
    return PurePosixPath(str(value).rstrip("/")).name or str(value)


def _counts(item: str) -> bool:
    key = item.split("=", 1)[0].lstrip("+~").strip()
    return key.rsplit(".", 1)[-1] not in _NOT_SETTINGS


def _override(item: str) -> str:
    """``key=value`` with a path-like value reduced to its last component."""
    key, sep, value = str(item).partition("=")
    if sep and ("/" in value or value.startswith(("~", "$"))) and not value.startswith("["):
        value = _path_name(value)
    return f"{key}{sep}{value}"


def _text(value: Any) -> str:
    return "unset" if value is None else f"{value:g}" if isinstance(value, float) else str(value)
