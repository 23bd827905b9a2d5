"""Which verl training engine a scenario runs, and the config sections that engine reads.

verl 0.9.1 picks the engine with its ``model_engine`` config group: ``dp`` by default (FSDP,
FSDP2 and fsdp_turbo alike keep their settings under ``fsdp_config``), ``megatron``, ``veomni``
or ``torchtitan``; a recipe's own config built on ``ppo_megatron_trainer`` runs Megatron. Each
engine names its sections differently and Hydra refuses a key of another engine's, so a key the
command sets for "the engine" (a seed, a determinism switch) is spelled from this table.
"""

from __future__ import annotations

from dataclasses import dataclass

from workbook.params import hydra
from workbook.params.schema import Scenario
from workbook.params.validation import raw_value

DEFAULT_ENGINE = "dp"


@dataclass(frozen=True)
class Engine:
    """Where one engine keeps its settings in verl 0.9.1's config."""

    actor: str  # actor_rollout_ref.actor.<actor> (and actor_rollout_ref.ref.<actor>)
    critic: str  # critic.<critic>
    # Whether those sections have verl's ``full_determinism`` switch: the Megatron engine has
    # none (verl seeds it and leaves torch's deterministic algorithms off, engine/megatron/utils.py)
    full_determinism: bool


ENGINES = {
    "dp": Engine("fsdp_config", "fsdp", full_determinism=True),
    "megatron": Engine("megatron", "megatron", full_determinism=False),
    "veomni": Engine("veomni", "veomni", full_determinism=True),
    "torchtitan": Engine("torchtitan", "torchtitan", full_determinism=True),
}


def engine_of(s: Scenario) -> str:
    """The scenario's engine: its ``model_engine=`` override, else Megatron for a config named
    after it (``ppo_megatron_trainer``, a recipe's ``dapo_megatron_trainer``), else ``dp``."""
    chosen = raw_value(s, "model_engine")
    if chosen:
        return hydra.unquoted(chosen)
    return "megatron" if "megatron" in (s.entry.config_name or "") else DEFAULT_ENGINE


def engine_sections(s: Scenario) -> Engine | None:
    """The scenario's engine's sections; None for an engine this table does not know."""
    return ENGINES.get(engine_of(s))


def engine_seed_keys(s: Scenario) -> list[str]:
    """The actor's and the reference model's seed keys of the scenario's engine."""
    engine = engine_sections(s)
    if engine is None:
        return []
    return [f"actor_rollout_ref.actor.{engine.actor}.seed",
            f"actor_rollout_ref.ref.{engine.actor}.seed"]
