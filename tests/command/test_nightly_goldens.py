"""Every job of verl's Ascend nightly as a scenario: its plan pinned, and the scenario carrying
exactly what the script it reproduces hands ``python3``: every override with the script's value,
every environment variable with its value, and nothing more than the workbook's own additions.

The script facts live in ``params/nightly/<scenario>.script.json``: the argv and environment each
verl script hands ``python3`` (verl commit and script path noted in the file), recorded by running
the script with ``HOME=/home/ci`` and a ``python3`` stand-in that writes down what it was given
(``workbook nightly sync`` records them the same way). The differences the workbook makes on
purpose, and why, are listed in :mod:`workbook.nightly.fidelity` and ``workbook.profiles.ADDED_ENV``.
"""

from __future__ import annotations

import json
from functools import reduce
from pathlib import Path
from typing import Any

import pytest

from workbook.command import build_plan
from workbook.command.plan import Plan
from workbook.nightly.fidelity import (
    ADDED_DEFAULTS,
    DIFFERENT_ON_PURPOSE,
    Difference,
    differences,
    same_value,
)
from workbook.params import Scenario
from workbook.profiles import ADDED_ENV, NPU_ENV
from workbook.scenario import load_scenario

REPO = Path(__file__).resolve().parents[2]
FACTS_DIR = REPO / "params" / "nightly"
DATA = Path(__file__).parent / "data" / "nightly"
FAKE_HOME = "/home/ci"
RUN_DIR = "/runs/nightly/RUN"
NAMES = sorted(p.name.removesuffix(".script.json") for p in FACTS_DIR.glob("*.script.json"))
GSPO = "gspo-qwen3-8b-1n8npu-fsdp2-vllm"
MEGATRON = "grpo-qwen3-0.6b-1n8npu-megatron-vllm"


@pytest.fixture(autouse=True)
def fixed_home(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", FAKE_HOME)


def facts_of(name: str) -> dict[str, Any]:
    facts: dict[str, Any] = json.loads((FACTS_DIR / f"{name}.script.json").read_text())
    return facts


def scenario_of(name: str) -> Scenario:
    return load_scenario(REPO / "params" / f"{name}.yaml", check_files=False)


def plan_of(name: str) -> Plan:
    return build_plan(scenario_of(name), Path(RUN_DIR))


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
def test_nightly_scenario_reproduces_its_script_exactly(name: str) -> None:
    found = differences(scenario_of(name), facts_of(name))
    assert not found, "\n".join(map(str, found))


@pytest.mark.parametrize("name", NAMES)
def test_nightly_env_is_the_scripts_and_only_what_the_workbook_adds(name: str) -> None:
    env, theirs = plan_of(name).env, facts_of(name)["env"]
    assert {k: v.rstrip(":") if k == "PYTHONPATH" else v for k, v in theirs.items()} == {
        k: env[k] for k in theirs}
    assert set(env) - set(theirs) <= set(ADDED_ENV)
    assert env["VERL_FILE_LOGGER_PATH"] == f"{RUN_DIR}/metrics.jsonl"


@pytest.mark.parametrize("name", NAMES)
def test_nightly_plan_logs_to_the_run_directory_never_to_root(name: str) -> None:
    argv = plan_of(name).argv
    assert 'trainer.logger=["console","file"]' in argv
    assert not any("/root" in item for item in argv)


def test_every_variable_the_workbook_adds_says_why() -> None:
    assert all(len(reason.split()) >= 6 for reason in ADDED_ENV.values())
    assert all(reason for reason, _ in DIFFERENT_ON_PURPOSE.values())


def test_the_npu_profile_adds_only_what_every_nightly_script_sets() -> None:
    # decided from the facts: what all the jobs' environments share (nothing, today)
    common = reduce(lambda a, b: a & b, (set(facts_of(n)["env"].items()) for n in NAMES))
    assert {(k, v) for k, v in NPU_ENV.items() if k not in ADDED_ENV} <= common
    assert set(NPU_ENV) - set(ADDED_ENV) == set()  # so it adds none of the scripts' settings


def _changed(facts: dict[str, Any], **changes: Any) -> dict[str, Any]:
    return {**facts, **changes}


def _with_override(facts: dict[str, Any], old: str | None, new: str | None) -> dict[str, Any]:
    overrides = [o for o in facts["overrides"] if old is None or not o.startswith(old)]
    return _changed(facts, overrides=overrides + ([new] if new else []))


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda f: _with_override(f, "actor_rollout_ref.rollout.n=", "actor_rollout_ref.rollout.n=8"),
         Difference("override", "actor_rollout_ref.rollout.n", "actor_rollout_ref.rollout.n=4",
                    "actor_rollout_ref.rollout.n=8")),
        (lambda f: _with_override(f, None, "trainer.resume_mode=disable"),
         Difference("override", "trainer.resume_mode", None, "trainer.resume_mode=disable")),
        (lambda f: _with_override(f, "data.shuffle=", None),
         Difference("override", "data.shuffle", "data.shuffle=False", None)),
        (lambda f: _with_override(f, "+actor_rollout_ref.rollout.engine_kwargs.vllm.compilation_config.cudagraph_mode=",
                                  "++actor_rollout_ref.rollout.engine_kwargs.vllm.compilation_config.cudagraph_mode=FULL_DECODE_ONLY"),
         Difference("override", "actor_rollout_ref.rollout.engine_kwargs.vllm.compilation_config.cudagraph_mode",
                    "+actor_rollout_ref.rollout.engine_kwargs.vllm.compilation_config.cudagraph_mode=FULL_DECODE_ONLY",
                    "++actor_rollout_ref.rollout.engine_kwargs.vllm.compilation_config.cudagraph_mode=FULL_DECODE_ONLY")),
        (lambda f: _changed(f, env={**f["env"], "HCCL_CONNECT_TIMEOUT": "1500"}),
         Difference("env", "HCCL_CONNECT_TIMEOUT", "HCCL_CONNECT_TIMEOUT=3600", "HCCL_CONNECT_TIMEOUT=1500")),
        (lambda f: _changed(f, env={**f["env"], "HCCL_OP_EXPANSION_MODE": "AIV"}),
         Difference("env", "HCCL_OP_EXPANSION_MODE", None, "HCCL_OP_EXPANSION_MODE=AIV")),
        (lambda f: _changed(f, env={k: v for k, v in f["env"].items() if k != "CPU_AFFINITY_CONF"}),
         Difference("env", "CPU_AFFINITY_CONF", "CPU_AFFINITY_CONF=1", None)),
        (lambda f: _changed(f, entry=["-m", "recipe.gspo.main_gspo"]),
         Difference("entry", "python3", "-m verl.trainer.main_ppo", "-m recipe.gspo.main_gspo")),
    ],
    ids=["override-value", "override-only-in-the-script", "override-only-in-the-scenario",
         "override-prefix", "env-value", "env-only-in-the-script", "env-only-in-the-scenario",
         "entry"],
)
def test_each_way_a_script_moves_is_a_difference(change: Any, expected: Difference) -> None:
    assert differences(scenario_of(GSPO), change(facts_of(GSPO))) == [expected]


@pytest.mark.parametrize(
    ("name", "change"),
    [
        (GSPO, lambda f: _with_override(f, "trainer.experiment_name=",
                                        "trainer.experiment_name=GSPO-Qwen3-8B-FSDP-vLLM-nightly_20270101_1200")),
        (GSPO, lambda f: _with_override(f, "trainer.logger=", 'trainer.logger=["console","wandb"]')),
        (GSPO, lambda f: _with_override(f, "actor_rollout_ref.actor.clip_ratio_low=",
                                        "actor_rollout_ref.actor.clip_ratio_low=0.0003")),
        (MEGATRON, lambda f: f),  # ppo_megatron_trainer.yaml as main_ppo with model_engine=megatron
    ],
    ids=["launch-time-suffix", "logger", "number-spelling", "megatron-entry"],
)
def test_what_the_workbook_changes_on_purpose_is_no_difference(name: str, change: Any) -> None:
    assert differences(scenario_of(name), change(facts_of(name))) == []


def test_a_workbook_default_the_script_sets_otherwise_is_a_difference() -> None:
    facts = facts_of(MEGATRON)
    assert ADDED_DEFAULTS["actor_rollout_ref.actor.policy_loss.loss_mode"] == "vanilla"
    moved = _with_override(facts, None, "actor_rollout_ref.actor.policy_loss.loss_mode=gspo")
    assert [d.key for d in differences(scenario_of(MEGATRON), moved)] == [
        "actor_rollout_ref.actor.policy_loss.loss_mode"]


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
