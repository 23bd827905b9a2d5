"""The command builder: golden argv/env for the seed scenarios, and one argv item per override."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from workbook.command import as_json, as_shell, build_plan
from workbook.params import hydra
from workbook.scenario import load_scenario

REPO = Path(__file__).resolve().parents[2]
DATA = Path(__file__).parent / "data"
FAKE_HOME = "/home/ci"

GOLDEN = {
    "gspo-qwen3-8b-1n8npu-fsdp2-vllm": "/runs/gspo/RUN",
    "ppo-qwen3-0.6b-2n4npu-fsdp-vllm-rayjob": "/runs/ppo/RUN",
}
SEED_ENV_GSPO = {
    "HYDRA_FULL_ERROR": "1", "TASK_QUEUE_ENABLE": "1", "HCCL_EXEC_TIMEOUT": "3600",
    "HCCL_CONNECT_TIMEOUT": "3600", "HCCL_ASYNC_ERROR_HANDLING": "0", "CPU_AFFINITY_CONF": "1",
    "VLLM_USE_V1": "1", "PYTHONUNBUFFERED": "1", "TRANSFORMERS_VERBOSITY": "error",
}


@pytest.fixture(autouse=True)
def fixed_home(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", FAKE_HOME)


def plan_of(name: str, run_dir: str):  # type: ignore[no-untyped-def]
    return build_plan(load_scenario(REPO / "params" / f"{name}.yaml", check_files=False), Path(run_dir))


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_plan_matches_golden_argv_and_env(name: str) -> None:
    golden = json.loads((DATA / f"{name}.plan.json").read_text())
    plan = plan_of(name, GOLDEN[name])
    assert plan.argv == golden["argv"]
    assert plan.env == golden["env"]


def seed_overrides(file: str) -> dict[str, str]:
    """The seed script's overrides as the shell hands them to verl (quotes removed, $HOME expanded)."""
    out = {}
    for line in (DATA / file).read_text().splitlines():
        line = line.replace("${HOME}", FAKE_HOME).replace("$HOME", FAKE_HOME).strip()
        if line:
            (item,) = shlex.split(line)
            key, _, value = item.partition("=")
            out[key] = value
    return out


def same_value(a: str, b: str) -> bool:
    """Hydra values compare as numbers when both are numbers (3e-4 == 0.0003)."""
    try:
        return float(a) == float(b)
    except ValueError:
        return a.strip("'\"") == b.strip("'\"")


@pytest.mark.parametrize(
    "name, seed_file, renames",
    [
        ("gspo-qwen3-8b-1n8npu-fsdp2-vllm", "seed_gspo_qwen3_8b.txt", {}),
        # verl 0.9.1's default V1 trainer reads rollout replay from skip.rollout_tq.*
        ("ppo-qwen3-0.6b-2n4npu-fsdp-vllm-rayjob", "seed_ppo_qwen3_06b_multinode.txt",
         {"skip.rollout.": "skip.rollout_tq."}),
    ],
)
def test_plan_carries_every_seed_override_with_its_value(name: str, seed_file: str, renames: dict[str, str]) -> None:
    argv = plan_of(name, GOLDEN[name]).argv
    ours = dict(item.partition("=")[::2] for item in argv[3:])
    for key, value in seed_overrides(seed_file).items():
        if key == "trainer.logger":  # the file logger is added beside the console
            assert ours[key] == '["console","file"]'
            continue
        for old, new in renames.items():
            key = key.replace(old, new)
        assert key in ours, f"{key} missing from the plan"
        assert same_value(ours[key], value), f"{key}: {ours[key]} != {value}"


def test_nightly_gspo_plan_carries_the_seed_environment_and_logs_to_the_run_dir() -> None:
    plan = plan_of("gspo-qwen3-8b-1n8npu-fsdp2-vllm", "/runs/gspo/RUN")
    for key, value in SEED_ENV_GSPO.items():
        assert plan.env[key] == value
    assert plan.env["VERL_FILE_LOGGER_PATH"] == "/runs/gspo/RUN/metrics.jsonl"
    assert not any("/root/" in item for item in plan.argv)


def test_list_values_stay_single_argv_items_and_survive_the_shell_form() -> None:
    plan = plan_of("ppo-qwen3-0.6b-2n4npu-fsdp-vllm-rayjob", "/runs/ppo/RUN")
    assert "skip.rollout_tq.steps=[1]" in plan.argv
    assert 'trainer.logger=["console","file"]' in plan.argv
    words = shlex.split(as_shell(plan).replace("\\\n", " "))
    assert words[0] == "env"
    assert words[len(plan.env) + 1:] == plan.argv
    assert json.loads(as_json(plan))["argv"] == plan.argv


@pytest.mark.parametrize(
    "value, text",
    [
        (True, "True"), (False, "False"), (None, "null"), (3, "3"), (3e-4, "0.0003"), (1e-6, "1e-06"),
        (10.0, "10.0"), ("fsdp2", "fsdp2"), ("/a/b.parquet", "/a/b.parquet"),
        (["console", "file"], '["console","file"]'), ([1], "[1]"), ("a b", '"a b"'),
        ("it's", '"it\'s"'),
    ],
)
def test_hydra_value_rendering(value: object, text: str) -> None:
    assert hydra.value(value) == text


def test_profile_overrides_never_repeat_a_key_the_scenario_sets() -> None:
    plan = plan_of("gspo-qwen3-8b-1n8npu-fsdp2-vllm", "/runs/gspo/RUN")
    keys = [hydra.key_of(item) for item in plan.argv[3:]]
    assert len(keys) == len(set(keys))


def test_scenario_env_adds_to_the_profiles_list_variables(tmp_path: Path) -> None:
    scenario = load_scenario(REPO / "params" / "gspo-tiny-1n1cpu-fsdp2-vllm.yaml", [
        "env.PYTHONPATH=/opt/faults", "env.VERL_USE_EXTERNAL_MODULES=verl_faults",
        "env.WORKBOOK_FAULT=pg_loss_x2"], check_files=False)

    env = build_plan(scenario, tmp_path, plugin_path="/plugins").env

    assert env["PYTHONPATH"] == "/plugins:/opt/faults"
    assert env["VERL_USE_EXTERNAL_MODULES"] == ("workbook.profiles.cpu.platform,"
                                                "workbook.profiles.cpu.replay,verl_faults")
    assert env["WORKBOOK_FAULT"] == "pg_loss_x2"


def test_rollout_replay_reads_and_dumps_inside_the_run_directory(tmp_path: Path) -> None:
    scenario = load_scenario(REPO / "params" / "gspo-tiny-1n1cpu-fsdp2-vllm.yaml",
                             ["rollouts.record=true"], check_files=False)

    argv = build_plan(scenario, tmp_path / "run", plugin_path="/plugins").argv

    assert argv[argv.index("skip.rollout_tq.enable=True"):][:4] == [
        "skip.rollout_tq.enable=True", f"skip.rollout_tq.dump_dir={tmp_path / 'run' / 'rollouts'}",
        "skip.rollout_tq.steps=[1,2,3,4]", "skip.rollout_tq.action=cache"]
    assert not any(a.startswith("skip.rollout.") for a in argv)  # the legacy trainer's keys


@pytest.mark.parametrize("scenario, sets, backend", [
    ("gspo-tiny-1n1cpu-fsdp2-vllm", [], "replay"),  # every step from the pinned dump
    ("ppo-tiny-2n1cpu-fsdp2-vllm-ray", [], "replay"),
    ("gspo-tiny-1n1cpu-fsdp2-vllm", ["rollouts.record=true"], "vllm"),  # it generates to record
    ("gspo-tiny-1n1cpu-fsdp2-vllm", ["rollouts.steps=[1, 2]"], "vllm"),  # steps 3-4 generate
    ("gspo-tiny-1n1cpu-fsdp2-vllm", ["rollouts.replay=null"], "vllm"),
    ("gspo-tiny-live-1n1cpu-fsdp2-vllm", [], "vllm"),
])
def test_a_cpu_run_starts_an_inference_server_only_if_a_step_generates(
        scenario: str, sets: list[str], backend: str) -> None:
    s = load_scenario(REPO / "params" / f"{scenario}.yaml", sets, check_files=False)

    plan = build_plan(s, Path("/runs/RUN"), plugin_path="/plugins")

    assert [a for a in plan.argv if a.startswith("actor_rollout_ref.rollout.name=")] == [
        f"actor_rollout_ref.rollout.name={backend}"]
    modules = plan.env["VERL_USE_EXTERNAL_MODULES"].split(",")
    assert ("workbook.profiles.cpu.replay" in modules) == (backend == "replay")


def test_without_a_rollouts_section_a_raw_rollout_skip_override_is_kept() -> None:
    argv = plan_of("ppo-qwen3-0.6b-2n4npu-fsdp-vllm-rayjob", "/runs/ppo/RUN").argv

    assert "skip.rollout_tq.steps=[1]" in argv and argv.count("skip.rollout_tq.enable=True") == 1
