"""Resolved scenario -> the exact verl command (argv + env). Pure: no I/O, no clock, no env reads.

Order of the Hydra overrides: the scenario's first-class fields, then its raw ``overrides:``
in file order, then its deterministic mode's settings and what the hardware profile needs
(each unless the scenario set that key), then the workbook's own sinks (file logger beside the
console). Validation refuses a raw override that sets a key a first-class field owns, so each
key appears once. The environment is the profile's, the deterministic mode's on top, the
scenario's ``env:`` over both. A scenario naming a verl checkout (``verl.path``) gets it first
on PYTHONPATH, so the command imports that checkout's verl.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from workbook import profiles
from workbook.command.determinism import deterministic_overrides
from workbook.command.engines import engine_seed_keys
from workbook.command.plan import Plan
from workbook.core.layout import ROLLOUTS_DIR
from workbook.params import hydra
from workbook.params.schema import Scenario

LOGGERS = ["console", "file"]
# Keys the workbook sets itself; a scenario must not.
RESERVED_KEYS = ("trainer.logger",)
# verl 0.9.1's default (V1) trainer reads its rollout skip from here; the legacy trainer from
# ``skip.rollout`` (which V1 accepts and ignores).
ROLLOUT_SKIP = "skip.rollout_tq"
# Environment variables that hold lists: a scenario's value is added to the profile's, not
# put in its place (the cpu profile needs its own entries there).
LIST_ENV = {"PYTHONPATH": ":", "VERL_USE_EXTERNAL_MODULES": ","}


def first_class(s: Scenario) -> list[tuple[str, Any]]:
    """The Hydra key/value pairs the scenario's first-class fields stand for."""
    actor = "actor_rollout_ref.actor"
    pairs: list[tuple[str, Any]] = [
        ("algorithm.adv_estimator", s.adv_estimator),
        ("data.train_files", s.train_files),
        ("data.val_files", s.val_files),
        ("data.train_batch_size", s.train_batch_size),
        ("data.max_prompt_length", s.max_prompt_length),
        ("data.max_response_length", s.max_response_length),
        ("actor_rollout_ref.model.path", s.model_path),
        (f"{actor}.policy_loss.loss_mode", s.policy_loss),
        (f"{actor}.loss_agg_mode", s.loss_agg_mode),
        (f"{actor}.clip_ratio_low", s.clip_ratio_low),
        (f"{actor}.clip_ratio_high", s.clip_ratio_high),
        (f"{actor}.clip_ratio_c", s.clip_ratio_c),
        (f"{actor}.optim.lr", s.lr),
        (f"{actor}.ppo_mini_batch_size", s.ppo_mini_batch_size),
        ("actor_rollout_ref.rollout.n", s.rollout_n),
        ("actor_rollout_ref.rollout.tensor_model_parallel_size", s.rollout_tp),
        ("actor_rollout_ref.rollout.gpu_memory_utilization", s.rollout_memory_utilization),
    ]
    if s.sequence_parallel_size != 1:
        pairs += [
            (f"{actor}.fsdp_config.ulysses_sequence_parallel_size", s.sequence_parallel_size),
            ("actor_rollout_ref.ref.fsdp_config.ulysses_sequence_parallel_size", s.sequence_parallel_size),
        ]
    if s.seed is not None:  # the engine's own keys: fsdp_config.seed, megatron.seed, ...
        pairs += [("data.seed", s.seed), (f"{actor}.data_loader_seed", s.seed)]
        pairs += [(key, s.seed) for key in engine_seed_keys(s)]
    if s.uses_critic:
        pairs += [
            ("critic.model.path", s.critic_model_path or s.model_path),
            ("critic.optim.lr", s.critic_lr),
        ]
        if s.sequence_parallel_size != 1:
            pairs.append(("critic.ulysses_sequence_parallel_size", s.sequence_parallel_size))
    pairs += [
        ("trainer.project_name", s.project_name),
        ("trainer.experiment_name", s.experiment_name or s.name),
        ("trainer.nnodes", s.nodes),
        ("trainer.n_gpus_per_node", s.devices_per_node),
        ("trainer.total_training_steps", s.total_training_steps),
        ("trainer.total_epochs", s.total_epochs),
    ]
    return [(k, v) for k, v in pairs if v is not None]


def skipped_steps(s: Scenario) -> list[int]:
    """The steps verl's rollout skip replays or dumps: ``rollouts.steps``, else every step."""
    return list(s.rollouts.steps or range(1, (s.total_training_steps or 0) + 1))


def replays_every_step(s: Scenario) -> bool:
    """Whether no step of the run generates: each one replays the pinned dump (which validation
    has found holding them all), so the run needs no inference server."""
    r = s.rollouts
    every = set(range(1, (s.total_training_steps or 0) + 1))
    return bool(r.replay) and not r.record and bool(every) and every <= set(skipped_steps(s))


def rollout_skip(s: Scenario, run_dir: Path) -> list[tuple[str, Any]]:
    """verl's rollout skip for ``rollouts.replay``/``record``: replay (or dump) the steps'
    rollouts from/into ``<run_dir>/rollouts`` (the pinned dump is copied there before launch,
    so a recording run never writes into the pinned folder)."""
    if not s.rollouts.enabled:
        return []
    return [
        (f"{ROLLOUT_SKIP}.enable", True),
        (f"{ROLLOUT_SKIP}.dump_dir", str(run_dir / ROLLOUTS_DIR)),
        (f"{ROLLOUT_SKIP}.steps", skipped_steps(s)),
        (f"{ROLLOUT_SKIP}.action", "cache"),
    ]


def dump_subdir(s: Scenario) -> str:
    """Where verl's rollout skip keeps a scenario's dump inside its dump folder.

    A dump replays only into a run with the same experiment and project names and the same
    batch shapes (verl's ``RolloutSkip`` layout).
    """
    return (f"{s.experiment_name or s.name}_{s.project_name}/GBS{s.train_batch_size}"
            f"_N{s.rollout_n}_in{s.max_prompt_length}_out{s.max_response_length}")


def owned_keys(s: Scenario) -> set[str]:
    """Keys a raw override may not set: those of every first-class field, set or not, and the
    workbook's own. Sequence-parallel keys are owned only when the field is used (!= 1), so a
    scenario may keep a seed script's own spelling of them; rollout-skip keys only when the
    scenario's ``rollouts:`` section is used."""
    every = s.model_copy(update={
        "adv_estimator": "gae", "loss_agg_mode": "token-mean", "clip_ratio_low": 0.2,
        "clip_ratio_high": 0.2, "clip_ratio_c": 3.0, "critic_lr": 1e-5, "seed": 0, "total_epochs": 1,
    })
    owned = {k for k, _ in first_class(every)} | set(RESERVED_KEYS)
    return owned | {k for k, _ in rollout_skip(s, Path("."))}


def ray_temp_dir(run_id: str) -> str:
    """A short, per-run Ray temp dir: AF_UNIX socket paths must stay under ~107 bytes."""
    return f"/tmp/wb-{run_id[-6:]}"


def build_plan(
    s: Scenario,
    run_dir: Path,
    *,
    python: str = "python3",
    on_existing_cluster: bool | None = None,
    plugin_path: str | None = None,
) -> Plan:
    """The command that runs ``s`` into ``run_dir``.

    ``on_existing_cluster`` defaults to ``launcher == "ray"``: verl must not size its own
    Ray when it joins a cluster. ``plugin_path`` is where the CPU profile's import shims live.
    """
    existing = s.launcher == "ray" if on_existing_cluster is None else on_existing_cluster
    replayed = replays_every_step(s)
    run_dir = Path(run_dir)
    overrides = [hydra.override(k, v) for k, v in first_class(s) + rollout_skip(s, run_dir)]
    overrides += list(s.overrides)
    already = {hydra.key_of(o) for o in overrides}
    overrides += [hydra.override(k, v) for k, v in deterministic_overrides(s) if k not in already]
    already = {hydra.key_of(o) for o in overrides}
    overrides += [o for o in profiles.profile_overrides(
        s.profile,
        nnodes=s.nodes,
        devices_per_node=s.devices_per_node,
        on_existing_cluster=existing,
        ray_temp_dir=None if existing else ray_temp_dir(run_dir.name),
        critic=s.uses_critic,
        replayed=replayed,
    ) if hydra.key_of(o) not in already]
    overrides.append(hydra.override("trainer.logger", LOGGERS))
    env = profiles.profile_env(s.profile, plugin_path=Path(plugin_path) if plugin_path else None,
                               replayed=replayed)
    if s.deterministic:
        env.update(profiles.deterministic_env(s.profile))
    for key, value in s.env.items():
        text, sep = _env_value(value), LIST_ENV.get(key)
        env[key] = f"{env[key]}{sep}{text}" if sep and env.get(key) and text else text
    if s.verl.path:
        env["PYTHONPATH"] = verl_pythonpath(s.verl.path, env.get("PYTHONPATH", ""))
    env["VERL_FILE_LOGGER_PATH"] = str(run_dir / "metrics.jsonl")
    return Plan(argv=[*entry_argv(s, python), *overrides], env=env)


def entry_argv(s: Scenario, python: str = "python3") -> list[str]:
    """What the command starts, before its overrides: ``python -m MODULE [--config-...]``."""
    e = s.entry
    return [python, "-m", e.module,
            *([f"--config-path={e.config_path}"] if e.config_path else []),
            *([f"--config-name={e.config_name}"] if e.config_name else [])]


def verl_pythonpath(checkout: str, rest: str = "") -> str:
    """PYTHONPATH with the verl checkout first: ``import verl`` finds the checkout's, ahead of
    any verl installed in the image (verl's own jobs get the same by running from its root)."""
    return ":".join(p for p in (checkout, rest) if p)


def _env_value(v: object) -> str:
    if isinstance(v, bool):
        return "1" if v else "0"
    return str(v)
