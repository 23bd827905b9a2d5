"""Scenario files: every shipped one validates; bad input fails before launch, naming each field."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.edges import NPU_SCENARIO
from workbook.cli import main
from workbook.errors import ParamsError
from workbook.params.loader import resolve
from workbook.params.verl_config import installed_config_dir
from workbook.scenario import load_scenario, validate_scenario

REPO = Path(__file__).resolve().parents[2]
SCENARIOS = sorted((REPO / "params").glob("*.yaml"))
GSPO_NPU = REPO / "params" / "gspo-qwen3-8b-1n8npu-fsdp2-vllm.yaml"


def test_params_folder_has_the_seed_and_tiny_scenarios() -> None:
    names = {p.stem for p in SCENARIOS}
    assert {"gspo-qwen3-8b-1n8npu-fsdp2-vllm", "gspo-tiny-1n1cpu-fsdp2-vllm",
            "ppo-qwen3-0.6b-2n4npu-fsdp-vllm-rayjob", "ppo-tiny-2n1cpu-fsdp2-vllm-ray"} <= names


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_every_scenario_validates_against_verl(path: Path, cpu_assets: object) -> None:
    # Without verl the Hydra check has nothing to compose with and finds no problem: that is no pass.
    assert installed_config_dir(sys.executable) is not None, "verl is not installed: nothing was validated against it"
    # An accelerator scenario's model and data paths are its runner's: validated as there
    # (everything but their existence; a run launched here looks for them, see test_data_prepare).
    where = "here" if resolve(path)[0]["profile"] == "cpu" else "runner"
    s = validate_scenario(path, where=where)
    assert s.name == path.stem


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_every_scenario_opens_with_a_comment_saying_how_to_run_it(path: Path) -> None:
    head = path.read_text().splitlines()[:20]
    assert head[0].startswith("#")
    assert any("workbook " in line for line in head if line.startswith("#"))


def write(tmp_path: Path, text: str, name: str = "s.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


BASE = "\n" + NPU_SCENARIO


def with_fields(extra: str) -> str:
    """BASE with ``extra``'s keys in place of its own (a key may appear once in a YAML file)."""
    keys = {line.split(":", 1)[0] for line in extra.splitlines() if line[:1].strip()}
    kept = [line for line in BASE.splitlines() if line.split(":", 1)[0] not in keys]
    return "\n".join(kept) + "\n" + extra + "\n"


@pytest.mark.parametrize(
    "extra, field, words",
    [
        ("clip_ratio_low: -0.2", "clip_ratio_low", "inside (0, 1)"),
        ("clip_ratio_high: 1.5", "clip_ratio_high", "inside (0, 1)"),
        ("clip_ratio_c: 0.5", "clip_ratio_c", "> 1"),
        ("train_batch_size: abc", "train_batch_size", "integer"),
        ("ppo_mini_batch_size: 0", "ppo_mini_batch_size", "positive"),
        ("ppo_mini_batch_size: 64", "ppo_mini_batch_size", "larger than train_batch_size"),
        ("ppo_mini_batch_size: 12", "ppo_mini_batch_size", "not a multiple"),
        ("train_batch_size: 6\nppo_mini_batch_size: 6\nrollout_n: 1", "train_batch_size", "divisible by the 8 devices"),
        ("total_training_steps: 0", "total_training_steps", ">= 1"),
        ("rollout_tp: 3", "rollout_tp", "does not divide"),
        ("sequence_parallel_size: 3", "sequence_parallel_size", "does not divide"),
        ("profile: tpu", "profile", "npu"),
        ("clip_ration_high: 0.1", "clip_ration_high", "unknown key"),
        ("env: [1, 2]", "env", "dictionary"),
        ("overrides: [trainer.logger=x]", "overrides[0]", "set by a first-class field or by the workbook"),
        ("overrides: [actor_rollout_ref.actor.clip_ratio_high=0.1]", "overrides[0]", "first-class"),
        ("overrides: [justakey]", "overrides[0]", "not a Hydra key=value"),
        ("checks: {window: [9, 3]}", "checks.window", ""),
        ("overrides: [actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=3]",
         "overrides: actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=3", "8 samples per update"),
    ],
)
def test_each_kind_of_bad_input_is_named_by_field(tmp_path: Path, extra: str, field: str, words: str) -> None:
    with pytest.raises(ParamsError) as err:
        load_scenario(write(tmp_path, with_fields(extra)))
    fields = [path for path, _ in err.value.problems]
    assert field in fields, err.value.message
    assert words in err.value.message


def test_unknown_hydra_key_is_caught_before_launch_with_a_suggestion(tmp_path: Path) -> None:
    path = write(tmp_path, BASE + "overrides: [actor_rollout_ref.actor.entropy_coef=0]\n")
    with pytest.raises(ParamsError) as err:
        validate_scenario(path)
    assert "entropy_coeff" in err.value.message


def test_negative_clip_ratio_and_unknown_key_exit_2_together_and_nothing_launches(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    runs = tmp_path / "runs"
    monkeypatch.setenv("WORKBOOK_RUNS", str(runs))
    path = write(tmp_path, BASE + "clip_ratio_low: -3e-4\nbatchsize: 8\n")
    for command in ("validate", "run"):
        assert main([command, str(path)]) == 2
        err = capsys.readouterr().err
        assert "clip_ratio_low" in err and "batchsize: unknown key" in err
    assert not runs.exists()


def test_precedence_is_base_then_scenario_then_overrides(tmp_path: Path) -> None:
    write(tmp_path, "clip_ratio_low: 0.1\nclip_ratio_high: 0.1\nlr: 1.0e-3\n", "base.yaml")
    path = write(tmp_path, "defaults: [base.yaml]\n" + BASE + "clip_ratio_high: 0.2\n")
    s = load_scenario(path, ["clip_ratio_low=6e-4", "lr=2e-5", "lr=3e-5"])
    assert (s.clip_ratio_low, s.clip_ratio_high, s.lr) == (6e-4, 0.2, 3e-5)


def test_overrides_append_and_nested_fields_set(tmp_path: Path) -> None:
    path = write(tmp_path, BASE + "overrides: [data.shuffle=False]\n")
    s = load_scenario(path, ["overrides+=trainer.balance_batch=False", "ray.address=http://h:8265",
                             "env.MY_FLAG=1"])
    assert s.overrides == ["data.shuffle=False", "trainer.balance_batch=False"]
    assert s.ray.address == "http://h:8265" and s.env == {"MY_FLAG": 1}


def test_paths_expand_home_and_tilde_and_nothing_assumes_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", "/home/someone")
    path = write(tmp_path, BASE.replace("/m\n", "~/models/x\n").replace("/t.parquet", "${HOME}/t.parquet")
                 .replace("/v.parquet", "$HOME/v.parquet"))
    data, _ = resolve(path)
    assert data["model_path"] == "/home/someone/models/x"
    assert data["train_files"] == "/home/someone/t.parquet"
    assert data["val_files"] == "/home/someone/v.parquet"


def test_cpu_profile_reports_missing_files_with_a_hint(tmp_path: Path) -> None:
    text = BASE.replace("profile: npu", "profile: cpu").replace("devices_per_node: 8", "devices_per_node: 1")
    with pytest.raises(ParamsError) as err:
        load_scenario(write(tmp_path, text))
    assert {"model_path", "train_files", "val_files"} <= {p for p, _ in err.value.problems}


def test_defaults_cycle_is_an_error_not_a_hang(tmp_path: Path) -> None:
    write(tmp_path, "defaults: [b.yaml]\n", "a.yaml")
    write(tmp_path, "defaults: [a.yaml]\n", "b.yaml")
    with pytest.raises(ParamsError, match="cycle"):
        load_scenario(tmp_path / "a.yaml")


def test_legacy_rollout_skip_under_the_v1_trainer_warns_naming_the_key_that_works(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, BASE + "overrides: [skip.rollout.enable=True, 'skip.rollout.steps=[1]']\n")

    assert main(["validate", str(path)]) == 0

    err = capsys.readouterr().err
    assert "warning: overrides: skip.rollout.enable=True" in err
    assert "never reads skip.rollout.enable; use skip.rollout_tq.enable" in err
    assert "use skip.rollout_tq.steps" in err


def test_the_legacy_trainer_is_warned_the_other_way_round(tmp_path: Path) -> None:
    from workbook.scenario import scenario_warnings

    s = load_scenario(write(tmp_path, BASE + "overrides: [trainer.use_v1=False, "
                                             "skip.rollout_tq.enable=True]\n"))

    (warning,) = scenario_warnings(s, tmp_path)
    assert warning == ("overrides: skip.rollout_tq.enable=True",
                       "the legacy trainer never reads skip.rollout_tq.enable; use "
                       "skip.rollout.enable")


def test_a_pinned_rollout_dump_must_exist_and_hold_the_scenarios_geometry(tmp_path: Path) -> None:
    dump = tmp_path / "dump" / "x_verl-workbook" / "GBS32_N4_in512_out512" / "1" / "0"
    dump.mkdir(parents=True)
    (dump / "tq_batch.pt").touch()
    (dump / "meta.json").touch()
    missing = write(tmp_path, BASE + "rollouts: {replay: nowhere}\n")
    other = write(tmp_path, BASE + "experiment_name: x\nrollouts: {replay: dump}\n"
                                   "max_response_length: 256\n", "other.yaml")
    fits = write(tmp_path, BASE + "experiment_name: x\nrollouts: {replay: dump}\n", "fits.yaml")

    with pytest.raises(ParamsError, match="rollouts.replay: no such rollout dump folder"):
        load_scenario(missing)
    with pytest.raises(ParamsError, match="no dump for this .*GBS32_N4_in512_out256.*it holds "
                                          "x_verl-workbook/GBS32_N4_in512_out512"):
        load_scenario(other)
    assert load_scenario(fits).rollouts.replay == str(tmp_path / "dump")


def test_a_pinned_rollout_dump_must_hold_every_step_the_run_replays(tmp_path: Path) -> None:
    """A replaying run generates nothing (on cpu no inference server starts): a step missing from
    the dump, or without the metadata verl needs to replay it, is refused before launch, unless
    the run records or replays only the steps it has."""
    steps = tmp_path / "dump" / "x_verl-workbook" / "GBS32_N4_in512_out512"
    for step in ("1", "2"):
        (steps / step / "0").mkdir(parents=True)
        (steps / step / "0" / "tq_batch.pt").touch()
    (steps / "1" / "0" / "meta.json").touch()  # step 2 has its batch but not its metadata
    two = BASE + "experiment_name: x\ntotal_training_steps: 2\n"

    with pytest.raises(ParamsError, match=r"rollouts.replay: .* holds no rollouts for step 2 of "
                                          r"x_verl-workbook/GBS32_N4_in512_out512"):
        load_scenario(write(tmp_path, two + "rollouts: {replay: dump}\n"))
    (steps / "2" / "0" / "meta.json").touch()
    assert load_scenario(write(tmp_path, two + "rollouts: {replay: dump}\n"))
    (steps / "2" / "0" / "tq_batch.pt").unlink()
    assert load_scenario(write(tmp_path, two + "rollouts: {replay: dump, steps: [1]}\n"))
    assert load_scenario(write(tmp_path, two + "rollouts: {replay: dump, record: true}\n"))


def test_the_tiny_gspo_scenario_replays_its_pinned_rollouts() -> None:
    s = load_scenario(REPO / "params" / "gspo-tiny-1n1cpu-fsdp2-vllm.yaml", check_files=False)

    assert s.rollouts.replay and Path(s.rollouts.replay).is_dir()
