"""A scenario's deterministic mode (``deterministic: true``): two runs, one set of numbers.

Aligning a scenario between two chips or two verl versions starts by taking run-to-run
nondeterminism away; verl's Ascend precision-alignment guide
(docs/ascend_tutorial/dev_guide/precision_analysis/precision_alignment_zh.md) gives the
procedure, this is it as settings. On every profile the command carries the data in file order,
the scenario's seed in each seed key verl 0.9.1 has for the engines the scenario runs, and
verl's own ``full_determinism`` switches: seeded, deterministic torch algorithms in the training
engine, per-request seeds and batch-invariant kernels in vLLM's rollout. Each profile adds its
libraries' settings to the environment (:func:`workbook.profiles.deterministic_env`).

The mode yields to the scenario like a profile does: a raw override of the same key, or an
``env:`` entry, wins. :func:`undone` names those that turn the mode back off (validation warns).
"""

from __future__ import annotations

from typing import Any

from workbook.command.engines import engine_sections
from workbook.command.plan import Plan
from workbook.params import hydra
from workbook.params.schema import Scenario
from workbook.params.validation import raw_value
from workbook.profiles import deterministic_env

ROLLOUT = "actor_rollout_ref.rollout"
REWARD_ROLLOUT = "reward.reward_model.rollout"


def _reward_model(s: Scenario) -> bool:
    """Whether the scenario scores with a reward model (verl starts its rollout then)."""
    return hydra.unquoted(raw_value(s, "reward.reward_model.enable") or "").lower() == "true"


def switches(s: Scenario) -> list[tuple[str, Any]]:
    """The mode's on/off settings: file order, and ``full_determinism`` wherever the engines
    the scenario runs have it (the Megatron engine has none)."""
    pairs: list[tuple[str, Any]] = [
        ("data.shuffle", False),
        ("data.validation_shuffle", False),
        (f"{ROLLOUT}.full_determinism", True),
    ]
    engine = engine_sections(s)
    if engine is not None and engine.full_determinism:
        pairs += [(f"actor_rollout_ref.actor.{engine.actor}.full_determinism", True),
                  (f"actor_rollout_ref.ref.{engine.actor}.full_determinism", True)]
        if s.uses_critic:
            pairs.append((f"critic.{engine.critic}.full_determinism", True))
    if _reward_model(s):
        pairs.append((f"{REWARD_ROLLOUT}.full_determinism", True))
    return pairs


def seeds(s: Scenario) -> list[tuple[str, Any]]:
    """The seed keys the first-class ``seed`` does not already set (data, data loader, actor
    and reference engine): the rollout's, the critic's and the reward model's."""
    if s.seed is None:
        return []
    pairs: list[tuple[str, Any]] = [(f"{ROLLOUT}.seed", s.seed)]
    engine = engine_sections(s)
    if s.uses_critic:
        pairs.append(("critic.data_loader_seed", s.seed))
        if engine is not None:
            pairs.append((f"critic.{engine.critic}.seed", s.seed))
    if _reward_model(s):
        pairs.append((f"{REWARD_ROLLOUT}.seed", s.seed))
    return pairs


def deterministic_overrides(s: Scenario) -> list[tuple[str, Any]]:
    """The Hydra key/value pairs the mode adds (none when the scenario is not deterministic)."""
    return switches(s) + seeds(s) if s.deterministic else []


def _same(ours: str, theirs: str) -> bool:
    """Equal as Hydra or the library reads it: ``False`` and ``false`` are one value."""
    ours, theirs = hydra.unquoted(ours), hydra.unquoted(theirs)
    if {ours.lower(), theirs.lower()} <= {"true", "false"}:
        return ours.lower() == theirs.lower()
    return ours == theirs


def undone(s: Scenario, plan: Plan) -> list[tuple[str, str]]:
    """The mode's settings the scenario's own values replaced in ``plan``, as warnings
    ``(where, message)``: a switch turned off, a profile variable set to another value. (A
    seed of the scenario's own choosing keeps a run deterministic and is not listed.)"""
    if not s.deterministic:
        return []
    carried: dict[str, str] = {}
    for item in plan.argv:
        if "=" in item:
            carried[hydra.key_of(item)] = item.split("=", 1)[1]
    found: list[tuple[str, str]] = []
    for key, value in switches(s):
        wanted = hydra.value(value)
        if key in carried and not _same(wanted, carried[key]):
            raw = next((o for o in reversed(s.overrides) if hydra.key_of(o) == key), key)
            found.append((f"overrides: {raw}", f"deterministic: true sets {key}={wanted}; the "
                          "scenario's value wins, so two runs may differ"))
    for key, wanted in deterministic_env(s.profile).items():
        if key in plan.env and not _same(wanted, plan.env[key]):
            found.append((f"env.{key}", f"deterministic: true sets {key}={wanted}; the "
                          f"scenario's value {plan.env[key]} wins, so two runs may differ"))
    return found
