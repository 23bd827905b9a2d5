"""The deterministic mode: what ``deterministic: true`` adds to the command, per profile and
engine, the scenario's own values winning (with a warning when they undo it), and nothing at
all for the committed scenarios, which leave it off."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.edges import NPU_SCENARIO
from workbook.cli import main
from workbook.command import build_plan
from workbook.command.determinism import deterministic_overrides, undone
from workbook.command.engines import engine_of
from workbook.command.plan import Plan
from workbook.core.serialization import load_yaml
from workbook.errors import ParamsError
from workbook.params import Scenario, hydra
from workbook.params.verl_config import installed_config_dir
from workbook.profiles import deterministic_env
from workbook.run import steps
from workbook.scenario import load_scenario, scenario_warnings, verl_problems

REPO = Path(__file__).resolve().parents[2]
PARAMS = REPO / "params"
DATA = Path(__file__).parent / "data" / "deterministic"
RUN_DIR = Path("/runs/deterministic/RUN")
SCENARIOS = sorted(PARAMS.glob("*.yaml"))

# profile -> the committed scenario its golden plan is made from, and what is set on top
GOLDEN = {
    "cpu": ("gspo-tiny-1n1cpu-fsdp2-vllm", []),
    "npu": ("grpo-qwen3-0.6b-1n8npu-megatron-vllm", ["seed=42"]),
    "cuda": ("gspo-qwen3-8b-1n8npu-fsdp2-vllm", ["profile=cuda"]),
}


@pytest.fixture(autouse=True)
def fixed_home(monkeypatch: pytest.MonkeyPatch) -> None:
    """The goldens' asset paths are ~/.cache's: the session's own asset folder (set for the
    whole session once any test asks for the CPU assets) would make them depend on test order."""
    monkeypatch.setenv("HOME", "/home/ci")
    monkeypatch.delenv("WORKBOOK_ASSETS", raising=False)
    monkeypatch.delenv("WORKBOOK_CACHE", raising=False)


def scenario(name: str, *sets: str) -> Scenario:
    return load_scenario(PARAMS / f"{name}.yaml", sets, check_files=False)


def plan_of(s: Scenario) -> Plan:
    return build_plan(s, RUN_DIR, plugin_path="/plugins")


def carried(argv: list[str]) -> dict[str, str]:
    """key -> value of each Hydra override (the last one wins, as in Hydra)."""
    return {hydra.key_of(a): a.split("=", 1)[1] for a in argv if "=" in a}


@pytest.mark.parametrize("profile", sorted(GOLDEN))
def test_a_deterministic_plan_matches_its_golden_argv_and_env(profile: str) -> None:
    name, sets = GOLDEN[profile]
    golden = json.loads((DATA / f"{profile}.plan.json").read_text())

    plan = plan_of(scenario(name, "deterministic=true", *sets))

    assert plan.argv == golden["argv"]
    assert plan.env == golden["env"]


@pytest.mark.parametrize("profile", sorted(GOLDEN))
def test_the_mode_adds_its_settings_to_the_plan_and_changes_nothing_else(profile: str) -> None:
    name, sets = GOLDEN[profile]
    off = plan_of(scenario(name, *sets))
    s = scenario(name, "deterministic=true", *sets)
    on = plan_of(s)

    assert set(off.argv) <= set(on.argv)
    added = carried([a for a in on.argv if a not in off.argv])
    mode = {k: hydra.value(v) for k, v in deterministic_overrides(s)}
    assert added == {k: v for k, v in mode.items() if k not in carried(off.argv)}
    assert added["actor_rollout_ref.rollout.full_determinism"] == "True"
    assert {k: v for k, v in on.env.items() if off.env.get(k) != v} == deterministic_env(profile)


ENV = {
    "npu": {"HCCL_DETERMINISTIC": "true", "CLOSE_MATMUL_K_SHIFT": "1",
            "ATB_MATMUL_SHUFFLE_K_ENABLE": "0", "LCCL_DETERMINISTIC": "1",
            "VLLM_ENABLE_V1_MULTIPROCESSING": "0"},
    "cuda": {"CUBLAS_WORKSPACE_CONFIG": ":4096:8", "VLLM_ENABLE_V1_MULTIPROCESSING": "0"},
    "cpu": {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"},
}


@pytest.mark.parametrize("profile", sorted(ENV))
def test_each_profile_carries_its_libraries_deterministic_settings(profile: str) -> None:
    name, sets = GOLDEN[profile]
    env = plan_of(scenario(name, "deterministic=true", *sets)).env
    assert ENV[profile].items() <= env.items()


ENGINES = [
    # scenario, sets, the engine, keys the mode sets, keys it must not set
    ("gspo-tiny-1n1cpu-fsdp2-vllm", [], "dp",
     {"actor_rollout_ref.actor.fsdp_config.full_determinism": "True",
      "actor_rollout_ref.ref.fsdp_config.full_determinism": "True",
      "actor_rollout_ref.rollout.seed": "42"},
     {"critic.fsdp.full_determinism", "reward.reward_model.rollout.full_determinism"}),
    ("ppo-tiny-2n1cpu-fsdp2-vllm-ray", [], "dp",
     {"critic.fsdp.full_determinism": "True", "critic.fsdp.seed": "42",
      "critic.data_loader_seed": "42"}, set()),
    ("grpo-qwen3.5-2b-1n8npu-fsdpturbo-vllm", [], "dp",  # fsdp_turbo keeps fsdp_config
     {"actor_rollout_ref.actor.fsdp_config.full_determinism": "True"},
     {"actor_rollout_ref.rollout.seed"}),  # no seed: verl's own defaults stay
    ("grpo-qwen3-0.6b-1n8npu-megatron-vllm", ["seed=7", "adv_estimator=gae"], "megatron",
     {"actor_rollout_ref.actor.megatron.seed": "7", "actor_rollout_ref.ref.megatron.seed": "7",
      "critic.megatron.seed": "7", "actor_rollout_ref.rollout.full_determinism": "True"},
     {"actor_rollout_ref.actor.fsdp_config.seed", "actor_rollout_ref.actor.megatron.full_determinism",
      "critic.megatron.full_determinism"}),  # verl's Megatron engine has no such switch
    ("grpo-qwen3-30b-a3b-1n16npu-veomni-vllm", ["seed=7"], "veomni",
     {"actor_rollout_ref.actor.veomni.full_determinism": "True",
      "actor_rollout_ref.actor.veomni.seed": "7"}, set()),
    ("ppo-qwen3-8b-1n8npu-fsdp-vllm", ["seed=7", "overrides+=reward.reward_model.enable=True"],
     "dp", {"reward.reward_model.rollout.full_determinism": "True",
            "reward.reward_model.rollout.seed": "7"}, set()),
    ("dapo-moonlight-16b-1n8npu-megatron-vllm", ["seed=7"], "megatron",  # the recipe's config
     {"actor_rollout_ref.actor.megatron.seed": "7"}, {"actor_rollout_ref.actor.fsdp_config.seed"}),
]


@pytest.mark.parametrize("name, sets, engine, present, absent", ENGINES,
                         ids=[f"{e[0][:24]}-{e[2]}" for e in ENGINES])
def test_the_mode_spells_its_keys_for_the_engine_the_scenario_runs(
        name: str, sets: list[str], engine: str, present: dict[str, str], absent: set[str]) -> None:
    s = scenario(name, "deterministic=true", *sets)
    argv = carried(plan_of(s).argv)

    assert engine_of(s) == engine
    assert {k: argv.get(k) for k in present} == present
    assert not absent & set(argv)


@pytest.mark.parametrize("name, sets", [(e[0], e[1]) for e in ENGINES if e[0] != "dapo-moonlight-16b-1n8npu-megatron-vllm"],
                         ids=[f"{e[0][:24]}-{e[2]}" for e in ENGINES if not e[0].startswith("dapo")])
def test_every_key_the_mode_sets_exists_in_verls_config(name: str, sets: list[str]) -> None:
    # Hydra refuses a key the engine's config lacks: the plan is composed with verl's own config
    assert installed_config_dir(sys.executable) is not None, "verl is not installed: nothing was composed"
    assert verl_problems(scenario(name, "deterministic=true", *sets)) == []


OWN_VALUES = [
    # what the scenario sets, the key, the value the command carries, warned
    ("overrides+=data.shuffle=True", "data.shuffle", "True", True),
    ("overrides+=actor_rollout_ref.actor.fsdp_config.full_determinism=false",
     "actor_rollout_ref.actor.fsdp_config.full_determinism", "false", True),
    ("overrides+=actor_rollout_ref.rollout.full_determinism=False",
     "actor_rollout_ref.rollout.full_determinism", "False", True),
    ("overrides+=data.shuffle=false", "data.shuffle", "false", False),  # the mode's value
    ("overrides+=actor_rollout_ref.rollout.seed=7", "actor_rollout_ref.rollout.seed", "7", False),
]


@pytest.mark.parametrize("item, key, value, warned", OWN_VALUES, ids=[o[0][10:] for o in OWN_VALUES])
def test_the_scenarios_own_override_wins_over_the_mode(item: str, key: str, value: str,
                                                       warned: bool) -> None:
    s = scenario("gspo-tiny-1n1cpu-fsdp2-vllm", "deterministic=true", item)
    argv = plan_of(s).argv

    assert [a for a in argv if hydra.key_of(a) == key] == [f"{key}={value}"]
    warnings = scenario_warnings(s, PARAMS)
    assert any(w[0] == f"overrides: {key}={value}" for w in warnings) is warned, warnings


OWN_ENV = [
    # profile's scenario, what it sets, the variable, the value the run gets, warned
    ("grpo-qwen3-0.6b-1n8npu-megatron-vllm", "env.HCCL_DETERMINISTIC=false", "HCCL_DETERMINISTIC",
     "0", True),
    ("grpo-qwen3-0.6b-1n8npu-megatron-vllm", "env.CLOSE_MATMUL_K_SHIFT=0", "CLOSE_MATMUL_K_SHIFT",
     "0", True),
    ("grpo-qwen3-0.6b-1n8npu-megatron-vllm", "env.VLLM_ENABLE_V1_MULTIPROCESSING=0",
     "VLLM_ENABLE_V1_MULTIPROCESSING", "0", False),  # the mode's own value
    ("gspo-tiny-1n1cpu-fsdp2-vllm", "env.OMP_NUM_THREADS=2", "OMP_NUM_THREADS", "2", True),
    ("gspo-tiny-1n1cpu-fsdp2-vllm", "env.OMP_NUM_THREADS=1", "OMP_NUM_THREADS", "1", False),
]


@pytest.mark.parametrize("name, item, key, value, warned", OWN_ENV, ids=[o[1] for o in OWN_ENV])
def test_the_scenarios_own_environment_wins_over_the_mode(name: str, item: str, key: str,
                                                          value: str, warned: bool) -> None:
    s = scenario(name, "deterministic=true", item)

    assert plan_of(s).env[key] == value
    warnings = scenario_warnings(s, PARAMS)
    assert any(w[0] == f"env.{key}" for w in warnings) is warned, warnings


def test_the_warning_says_what_the_mode_wanted_and_what_wins(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(NPU_SCENARIO + "deterministic: true\nenv:\n  LCCL_DETERMINISTIC: 0\n"
                    "overrides:\n  - data.shuffle=True\n")

    assert main(["validate", str(path), "--where", "runner"]) == 0  # a warning, not a failure
    out, err = capsys.readouterr()
    assert "1 steps, deterministic)" in out
    assert "overrides: data.shuffle=True" in err and "sets data.shuffle=False" in err
    assert "env.LCCL_DETERMINISTIC" in err and "sets LCCL_DETERMINISTIC=1" in err


def test_a_scenario_that_is_not_deterministic_is_never_warned_about_it() -> None:
    s = scenario("gspo-tiny-1n1cpu-fsdp2-vllm", "overrides+=data.shuffle=True",
                 "env.OMP_NUM_THREADS=2")
    assert undone(s, plan_of(s)) == []


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_the_committed_scenarios_leave_the_mode_off_and_their_plans_unchanged(path: Path) -> None:
    s = load_scenario(path, check_files=False)
    plan = plan_of(s)

    assert s.deterministic is False and deterministic_overrides(s) == []
    assert plan == plan_of(load_scenario(path, ["deterministic=false"], check_files=False))
    assert not any("full_determinism" in a for a in plan.argv)
    assert not (set(deterministic_env(s.profile)) - set(s.env)) & set(plan.env)


def test_run_json_and_the_resolved_params_say_the_run_is_deterministic(
        tmp_path: Path, cpu_assets: object) -> None:
    run = steps.prepare(PARAMS / "gspo-tiny-1n1cpu-fsdp2-vllm.yaml", overrides=["deterministic=true"],
                        run_root=tmp_path / "runs", announce=False)

    assert run.run_dir.read_json("run")["deterministic"] is True
    assert load_yaml(run.run_dir.file("params"))["deterministic"] is True
    assert run.run_dir.read_json("command_json")["env"]["OMP_NUM_THREADS"] == "1"


BAD_VALUES = [
    # -s value, what the message quotes
    ("deterministic=1", "(got 1)"),
    ("deterministic=0", "(got 0)"),
    ("deterministic=maybe", "(got 'maybe')"),
    ("deterministic='true'", "(got 'true')"),
    ("deterministic=null", "(got None)"),
    ("deterministic=[true]", "(got [True])"),
    ("deterministic={on: true}", "(got {"),
]


@pytest.mark.parametrize("item, quoted", BAD_VALUES, ids=[b[0] for b in BAD_VALUES])
def test_a_deterministic_that_is_not_a_boolean_is_refused_naming_the_field(
        tmp_path: Path, item: str, quoted: str) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(NPU_SCENARIO)

    with pytest.raises(ParamsError) as err:
        load_scenario(path, [item], check_files=False)
    named = [message for field, message in err.value.problems if field == "deterministic"]
    assert len(named) == 1 and named[0].startswith("must be true or false"), err.value.problems
    assert quoted in named[0]


def test_validate_refuses_a_non_boolean_deterministic_with_exit_2(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(NPU_SCENARIO + "deterministic: 1\n")

    assert main(["validate", str(path), "--where", "runner"]) == 2
    assert "- deterministic: must be true or false (got 1)" in capsys.readouterr().err


@pytest.mark.parametrize("item, value", [("deterministic=true", True), ("deterministic=false", False),
                                         ("deterministic=yes", True)])
def test_a_boolean_deterministic_is_taken(item: str, value: bool) -> None:
    assert scenario("gspo-tiny-1n1cpu-fsdp2-vllm", item).deterministic is value
