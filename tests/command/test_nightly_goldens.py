"""Every job of verl's Ascend nightly as a scenario: its plan pinned, and every override and
environment variable of the script it reproduces carried with the script's value.

The script facts live in ``data/nightly/<scenario>.script.json``: the argv and environment each
verl script hands ``python3`` (verl commit and script path noted in the file), recorded by running
the script with ``HOME=/home/ci`` and a ``python3`` stand-in that writes down what it was given.
Where the plan differs from the script on purpose, the difference is listed below with its reason;
anything else that differs fails.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from workbook.command import build_plan
from workbook.command.builder import entry_argv
from workbook.command.plan import Plan
from workbook.params import Scenario, hydra
from workbook.profiles import NPU_ENV
from workbook.scenario import load_scenario

REPO = Path(__file__).resolve().parents[2]
DATA = Path(__file__).parent / "data" / "nightly"
FAKE_HOME = "/home/ci"
RUN_DIR = "/runs/nightly/RUN"
FACTS = sorted(DATA.glob("*.script.json"))
NAMES = [p.name.removesuffix(".script.json") for p in FACTS]
MAIN_PPO = ["-m", "verl.trainer.main_ppo"]

# The script's entry arguments and what the plan carries instead.
ENTRY_EQUIVALENTS = {
    # verl/trainer/config/ppo_megatron_trainer.yaml: "[Deprecated] ... use ppo_trainer.yaml":
    # ppo_trainer with `override model_engine: megatron`.
    ("--config-path=config", "--config-name=ppo_megatron_trainer.yaml"): "model_engine=megatron",
}
# Overrides whose value differs from the script's on purpose: key -> why.
DIFFERENT_ON_PURPOSE = {
    "trainer.logger": "the JSONL file logger is added beside the console",
    "trainer.experiment_name": "the script appends the launch time; the run id tells runs apart",
    "trainer.rollout_data_dir": "the script writes under /root/.cache/nightly_log; the run directory instead",
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


@pytest.fixture(autouse=True)
def fixed_home(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", FAKE_HOME)


def facts_of(name: str) -> dict[str, Any]:
    facts: dict[str, Any] = json.loads((DATA / f"{name}.script.json").read_text())
    return facts


def scenario_of(name: str) -> Scenario:
    return load_scenario(REPO / "params" / f"{name}.yaml", check_files=False)


def plan_of(name: str) -> Plan:
    return build_plan(scenario_of(name), Path(RUN_DIR))


def overrides_of(name: str) -> list[str]:
    """The plan's Hydra overrides: its argv after what it starts."""
    return plan_of(name).argv[len(entry_argv(scenario_of(name))):]


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


def test_every_job_of_the_ascend_nightly_has_facts_and_a_scenario() -> None:
    jobs = {facts_of(n)["job"] for n in NAMES}
    assert len(jobs) == 14  # 13 jobs of nightly_ascend.yml + the multinode RayJob
    assert all((REPO / "params" / f"{n}.yaml").is_file() for n in NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_nightly_plan_matches_its_golden_argv_and_env(name: str) -> None:
    golden = json.loads((DATA / f"{name}.plan.json").read_text())
    plan = plan_of(name)
    assert plan.argv == golden["argv"]
    assert plan.env == golden["env"]


@pytest.mark.parametrize("name", NAMES)
def test_nightly_plan_carries_every_script_override_with_its_value(name: str) -> None:
    ours = split(overrides_of(name))
    for key, (prefix, value) in split(facts_of(name)["overrides"]).items():
        assert key in ours, f"{key} missing from the plan"
        our_prefix, our_value = ours[key]
        if key in NEWER_THAN_PINNED_VERL:
            assert (prefix, our_prefix) == ("", "++"), key
        else:
            assert our_prefix == prefix, f"{key}: '{our_prefix}' != '{prefix}'"
        if key in DIFFERENT_ON_PURPOSE:
            continue
        assert same_value(our_value, value), f"{key}: {our_value} != {value}"


@pytest.mark.parametrize("name", NAMES)
def test_nightly_plan_differs_from_the_script_only_as_listed(name: str) -> None:
    facts = facts_of(name)
    theirs, ours = split(facts["overrides"]), split(overrides_of(name))
    entry = ENTRY_EQUIVALENTS.get(tuple(facts["entry"][2:]))
    for key, (_, value) in ours.items():
        if key in theirs:
            continue
        if entry and f"{key}={value}" == entry:
            continue
        assert ADDED_DEFAULTS.get(key) == value, f"{key}={value} is not in the script"
    logger = ours["trainer.logger"][1]
    assert logger == '["console","file"]'
    name_ours, name_theirs = ours["trainer.experiment_name"][1], theirs["trainer.experiment_name"][1]
    assert re.fullmatch(re.escape(name_ours) + r"(_\d{8}_\d{4})?", name_theirs)
    assert not any("/root" in item for item in plan_of(name).argv)


@pytest.mark.parametrize("name", NAMES)
def test_nightly_plan_starts_the_scripts_entry_point_or_a_listed_equivalent(name: str) -> None:
    facts, argv = facts_of(name), plan_of(name).argv
    started = entry_argv(scenario_of(name))
    assert argv[:len(started)] == started
    if started[1:] == facts["entry"]:
        return  # exactly what the script starts (main_ppo, or a recipe's own entry)
    assert started == ["python3", *MAIN_PPO] and facts["entry"][:2] == MAIN_PPO
    assert ENTRY_EQUIVALENTS[tuple(facts["entry"][2:])] in argv


@pytest.mark.parametrize("name", NAMES)
def test_nightly_plan_carries_every_script_environment_variable(name: str) -> None:
    env = plan_of(name).env
    for key, value in facts_of(name)["env"].items():
        if key == "PYTHONPATH":  # `X:$PYTHONPATH`: the launcher prepends the plan's entries
            assert env[key] == value.rstrip(":"), key
        else:
            assert env.get(key) == value, f"{key}: {env.get(key)} != {value}"
    added = set(env) - set(facts_of(name)["env"])
    assert added <= set(NPU_ENV) | {"VERL_FILE_LOGGER_PATH"}, added
    assert env["VERL_FILE_LOGGER_PATH"] == f"{RUN_DIR}/metrics.jsonl"


@pytest.mark.parametrize(
    ("ours", "theirs", "same"),
    [
        ("0.0003", "3e-4", True),
        ("/d/train.parquet", "['/d/train.parquet']", True),
        ("/d/train.parquet", "['/d/a.parquet','/d/b.parquet']", False),
        ("error", "'error'", True),
        ("left", "error", False),
        ("[0]", "[0]", True),
    ],
    ids=["number-spelling", "one-file-list", "two-file-list", "quotes", "other-word", "list"],
)
def test_values_compare_as_hydra_reads_them(ours: str, theirs: str, same: bool) -> None:
    assert same_value(ours, theirs) is same
