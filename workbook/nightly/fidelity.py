"""Whether a scenario still reproduces the verl script it was made from: its plan against the
script's facts (what the script hands ``python3``, :mod:`workbook.nightly.standin`), entry point,
override by override and environment variable by variable, both ways.

Where the plan differs from the script on purpose, the difference is listed here with its
reason; any other is a :class:`Difference`. The golden tests hold the committed scenarios to
this, and ``workbook nightly sync`` holds them to a verl checkout's scripts.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workbook.command.builder import LOGGERS, build_plan, entry_argv
from workbook.command.plan import Plan
from workbook.params import Scenario, hydra
from workbook.profiles import ADDED_ENV

RUN_DIR = Path("/runs/nightly/RUN")  # where the compared plan would write: any run directory
MAIN_PPO = ["-m", "verl.trainer.main_ppo"]
# The script's entry arguments and the override the plan carries instead.
ENTRY_EQUIVALENTS: dict[tuple[str, ...], str] = {
    # verl/trainer/config/ppo_megatron_trainer.yaml: "[Deprecated] ... use ppo_trainer.yaml":
    # ppo_trainer with `override model_engine: megatron`.
    ("--config-path=config", "--config-name=ppo_megatron_trainer.yaml"): "model_engine=megatron",
}
# Overrides whose value differs from the script's on purpose: key -> (why, what the plan's
# value must be, given the script's).
DIFFERENT_ON_PURPOSE: dict[str, tuple[str, Callable[[str, str], bool]]] = {
    "trainer.logger": ("the JSONL file logger is added beside the console",
                       lambda ours, theirs: ours == hydra.value(LOGGERS)),
    "trainer.experiment_name": (
        "the script appends the launch time (_%Y%m%d_%H%M); the run id tells runs apart",
        lambda ours, theirs: re.fullmatch(re.escape(ours) + r"(_\d{8}_\d{4,6})?", theirs) is not None),
    "trainer.rollout_data_dir": (
        "the script writes under /root/.cache/nightly_log; the run directory instead",
        lambda ours, theirs: not ours.startswith("/root")),
}
# Keys the plan sets that the script leaves to verl or to the device: key -> the only value allowed.
ADDED_DEFAULTS = {
    "actor_rollout_ref.actor.policy_loss.loss_mode": "vanilla",  # verl's default loss
    "actor_rollout_ref.rollout.n": "1",  # verl's default
    "trainer.device": "npu",  # the npu profile; verl finds the NPUs by itself otherwise
}
# Keys newer than the workbook's pinned verl, written `++key` (add or override) so validation
# against that verl passes; in the checkout's verl the key exists and is overridden as written.
NEWER_THAN_PINNED_VERL = {"actor_rollout_ref.actor.megatron.grad_offload"}


@dataclass(frozen=True)
class Difference:
    """One way the scenario's plan and the script part: ``scenario`` or ``script`` is None
    where only the other sets it."""

    what: str  # entry, override or env
    key: str
    scenario: str | None
    script: str | None

    def __str__(self) -> str:
        if self.scenario is None:
            return f"{self.what} {self.key}: the script sets {self.script}; the scenario does not"
        if self.script is None:
            return f"{self.what} {self.key}: the scenario sets {self.scenario}; the script does not"
        return f"{self.what} {self.key}: the scenario has {self.scenario}, the script {self.script}"


def plan_of(scenario: Scenario) -> Plan:
    """The plan the scenario's script facts are compared with (no verl checkout named: the
    checkout's place on PYTHONPATH is the run's, not the script's)."""
    return build_plan(scenario.model_copy(update={"verl": scenario.verl.model_copy(
        update={"path": None})}), RUN_DIR)


def differences(scenario: Scenario, facts: Mapping[str, Any]) -> list[Difference]:
    """Every difference between the scenario's plan and the script facts not listed above."""
    plan = plan_of(scenario)
    started = entry_argv(scenario)
    entry = [str(a) for a in facts.get("entry") or []]
    equivalent = ENTRY_EQUIVALENTS.get(tuple(entry[2:]))
    found: list[Difference] = []
    if started[1:] != entry and not (started[1:] == MAIN_PPO and entry[:2] == MAIN_PPO
                                     and equivalent in plan.argv):
        found.append(Difference("entry", "python3", " ".join(started[1:]), " ".join(entry)))
    found += override_differences(plan.argv[len(started):], [str(o) for o in facts.get(
        "overrides") or []], equivalent)
    found += env_differences(plan.env, {str(k): str(v) for k, v in (facts.get("env") or {}).items()})
    return found


def override_differences(ours_argv: list[str], theirs_argv: list[str],
                         equivalent: str | None = None) -> list[Difference]:
    ours, theirs = split(ours_argv), split(theirs_argv)
    found = []
    for key, (prefix, value) in theirs.items():
        if key not in ours:
            found.append(Difference("override", key, None, f"{prefix}{key}={value}"))
            continue
        our_prefix, our_value = ours[key]
        want = "++" if key in NEWER_THAN_PINNED_VERL and prefix == "" else prefix
        purpose = DIFFERENT_ON_PURPOSE.get(key)
        fits = purpose[1](our_value, value) if purpose else same_value(our_value, value)
        if our_prefix != want or not fits:
            found.append(Difference("override", key, f"{our_prefix}{key}={our_value}",
                                    f"{prefix}{key}={value}"))
    for key, (prefix, value) in ours.items():
        if key not in theirs and f"{key}={value}" != equivalent and ADDED_DEFAULTS.get(key) != value:
            found.append(Difference("override", key, f"{prefix}{key}={value}", None))
    return found


def env_differences(ours: Mapping[str, str], theirs: Mapping[str, str]) -> list[Difference]:
    """Both ways: every variable the script sets, with its value, and none more than the
    workbook adds itself (``workbook.profiles.ADDED_ENV``)."""
    found = []
    for key, value in theirs.items():
        # `X:$PYTHONPATH` with it unset ends in ':'; the launcher puts the plan's entries first
        want = value.rstrip(":") if key == "PYTHONPATH" else value
        if ours.get(key) != want:
            found.append(Difference("env", key, _assignment(key, ours.get(key)),
                                    _assignment(key, value)))
    found += [Difference("env", key, _assignment(key, value), None) for key, value in ours.items()
              if key not in theirs and key not in ADDED_ENV]
    return found


def split(overrides: list[str]) -> dict[str, tuple[str, str]]:
    """key -> (prefix, value); the last of a repeated key wins, as in Hydra."""
    out = {}
    for item in overrides:
        raw_key, _, value = item.partition("=")
        out[hydra.key_of(item)] = (raw_key[: len(raw_key) - len(raw_key.lstrip("+~"))], value)
    return out


def same_value(ours: str, theirs: str) -> bool:
    """Equal as Hydra reads them: numbers as numbers (3e-4 == 0.0003), quotes dropped, and a
    one-file list (['a.parquet']) as its file, which verl's dataset reads the same way."""
    try:
        return float(ours) == float(theirs)
    except ValueError:
        pass
    one = re.fullmatch(r"\[\s*'?\"?([^,'\"\]]+)'?\"?\s*\]", theirs)
    return ours.strip("'\"") in {theirs.strip("'\""), one.group(1) if one else None}


def _assignment(key: str, value: str | None) -> str | None:
    return None if value is None else f"{key}={value}"
