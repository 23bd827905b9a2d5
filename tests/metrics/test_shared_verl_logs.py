"""Every expected value of tests/data/verl_logs/README.md, read exactly from the real logs."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from workbook.metrics import diagnose, load_metrics

LOGS = Path(__file__).resolve().parents[1] / "data" / "verl_logs"
SHARED = Path("/work/shared/verl_logs")

# (file, step, canonical metric, expected value) transcribed from the README's last column.
EXPECTED_VALUES = [
    ("01_verl-notebook-ppo-oldstyle-main_task.log", 2, "critic/vf_loss", 3.138),
    ("01_verl-notebook-ppo-oldstyle-main_task.log", 7, "timing_s/gen", 23.792),
    ("02_ppo-2node-ansi-resume-from-ckpt.log", 102, "actor/pg_loss", -0.296),
    ("02_ppo-2node-ansi-resume-from-ckpt.log", 104, "critic/vf_loss", 0.045),
    ("04_npu-ascend-grpo-sync-agentloop.log", 1, "actor/pg_clipfrac", 1.0500949201741605e-05),
    ("04_npu-ascend-grpo-sync-agentloop.log", 8, "timing_s/gen", 296.18450260488316),
    ("07_sft-trainer-tqdm-inline-steps.log", 5, "train/loss", 0.9921297430992126),
    ("07_sft-trainer-tqdm-inline-steps.log", 250, "val/loss", 0.5834625363349915),
    ("08_dapo-retool-npfloat64-hardwrapped-214.log", 6, "actor/pg_clipfrac", 0.001701338811674052),
    ("08_dapo-retool-npfloat64-hardwrapped-214.log", 9, "timing_s/gen", 4616.70871562697),
    (
        "12_jsonl-file-logger-ppo-null-and-string-values.log",
        1,
        "critic/vf_loss",
        1.9340452780015767,
    ),
]

# The README's "step lines" column, as the steps each log yields (step lines of one step merge).
EXPECTED_STEPS = {
    "01_verl-notebook-ppo-oldstyle-main_task.log": list(range(0, 9)),
    "02_ppo-2node-ansi-resume-from-ckpt.log": [101, 102, 103, 104],
    "04_npu-ascend-grpo-sync-agentloop.log": list(range(0, 10)),
    "07_sft-trainer-tqdm-inline-steps.log": list(range(1, 11)) + list(range(246, 251)),
    "08_dapo-retool-npfloat64-hardwrapped-214.log": [6, 7, 8, 9],
    "12_jsonl-file-logger-ppo-null-and-string-values.log": [0, 1, 2, 3],
    "13_searchr1-ppo-main_task-cuda-oom-before-step1.log": [],
}


def test_copies_are_byte_identical_to_the_shared_logs() -> None:
    if not SHARED.is_dir():
        pytest.skip("shared log folder not mounted here")
    shared = sorted(p.name for p in SHARED.iterdir())
    assert sorted(p.name for p in LOGS.iterdir()) == shared
    for name in shared:
        assert (LOGS / name).read_bytes() == (SHARED / name).read_bytes(), name


def test_every_readme_row_has_expected_steps_here() -> None:
    rows = re.findall(r"^\| (\d\d_[^|]+?\.log) \|", (LOGS / "README.md").read_text(), re.M)
    assert sorted(rows) == sorted(EXPECTED_STEPS)


@pytest.mark.parametrize("name,step,metric,value", EXPECTED_VALUES)
def test_readme_value_is_parsed_exactly(name: str, step: int, metric: str, value: float) -> None:
    assert load_metrics(LOGS / name).steps[step][metric] == value


@pytest.mark.parametrize("name", sorted(EXPECTED_STEPS))
def test_readme_step_numbers(name: str) -> None:
    assert load_metrics(LOGS / name).step_numbers == EXPECTED_STEPS[name]


def test_old_names_are_canonical_and_originals_kept() -> None:
    run = load_metrics(LOGS / "01_verl-notebook-ppo-oldstyle-main_task.log")
    assert run.original_names["timing_s/gen"] == "timing/gen"
    assert run.original_names["timing_per_token_ms/gen"] == "timing_per_token/gen"
    assert run.original_names["actor/reward_kl_penalty"] == "critic/kl"
    assert not run.has("timing/gen")
    assert run.steps[7]["timing_s/update_actor"] == 10.897


def test_step_zero_of_verl_0_1_is_a_training_step() -> None:
    run = load_metrics(LOGS / "01_verl-notebook-ppo-oldstyle-main_task.log")
    assert run.steps[0]["actor/pg_loss"] == 0.001
    assert (
        run.steps[1]["actor/ppo_kl"] == 0.0 and math.copysign(1, run.steps[1]["actor/ppo_kl"]) == -1
    )


def test_resumed_run_starts_at_step_101_with_renamed_memory_metrics() -> None:
    run = load_metrics(LOGS / "02_ppo-2node-ansi-resume-from-ckpt.log")
    assert run.steps[102]["actor/perf/max_memory_allocated_gb"] == 38.162
    assert (
        run.original_names["actor/perf/max_memory_allocated_gb"] == "perf/max_memory_allocated_gb"
    )
    assert run.steps[101]["perf/mfu/actor"] == 0.067


def test_npu_log_step_zero_is_validation_only_and_step_five_carries_validation() -> None:
    run = load_metrics(LOGS / "04_npu-ascend-grpo-sync-agentloop.log")
    assert all(name.startswith("val-") for name in run.steps[0])
    assert run.steps[5]["val-core/openai/gsm8k/acc/mean@1"] == 0.002274450341167551
    assert run.steps[5]["actor/lr"] == 5e-07
    assert run.validation["initial"]["val-core/openai/gsm8k/acc/mean@1"] == 0.0
    assert run.validation["initial"]["val-aux/num_turns/min"] == 2


def test_sft_step_250_merges_train_and_val_lines() -> None:
    run = load_metrics(LOGS / "07_sft-trainer-tqdm-inline-steps.log")
    assert run.steps[250] == {
        "train/loss": 0.5836241245269775,
        "train/lr(1e-3)": 0.0,
        "val/loss": 0.5834625363349915,
    }
    assert run.sources[250]["train/loss"] == "07_sft-trainer-tqdm-inline-steps.log:19"
    assert run.sources[250]["val/loss"] == "07_sft-trainer-tqdm-inline-steps.log:20"


def test_hard_wrapped_rows_keep_every_pair() -> None:
    run = load_metrics(LOGS / "08_dapo-retool-npfloat64-hardwrapped-214.log")
    assert [len(run.steps[s]) for s in run.step_numbers] == [71, 71, 71, 71]
    assert run.steps[6]["critic/score/mean"] == 0.2511962950229645  # split "...502|29645"
    assert run.steps[6]["response_length_non_aborted/min"] == 121.0  # space lost at the wrap
    assert run.steps[8]["timing_s/stop_profile"] == 0.00011115986853837967  # after " -" wrap
    assert run.steps[6]["num_turns/max"] == 16.0  # np.int32(16)
    assert run.steps[6]["training/global_step"] == 6.0
    assert run.steps[9]["perf/throughput"] == 584.6641491107121


def test_jsonl_null_is_nan_and_strings_are_not_metrics() -> None:
    run = load_metrics(LOGS / "12_jsonl-file-logger-ppo-null-and-string-values.log")
    assert math.isnan(run.steps[3]["actor/pg_loss"])
    assert not run.has("resize/mode")
    assert run.steps[1]["critic/lr"] == 1e-05
    assert (
        run.sources[1]["critic/vf_loss"] == "12_jsonl-file-logger-ppo-null-and-string-values.log:2"
    )


def test_oom_log_has_no_steps_but_its_initial_validation() -> None:
    run = load_metrics(LOGS / "13_searchr1-ppo-main_task-cuda-oom-before-step1.log")
    assert len(run) == 0
    assert run.validation == {"initial": {"val/test_score/nq": 0.0}}


def test_oom_log_diagnosed_as_cuda_oom_in_update_actor() -> None:
    result = diagnose(LOGS / "13_searchr1-ppo-main_task-cuda-oom-before-step1.log").to_dict()
    assert result["status"] == "failed" and result["category"] == "oom"
    assert (
        result["evidence"][0]
        == "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.07 GiB. GPU"
    )
    assert "update_actor" in result["summary"]
    assert result["last_step"] is None


@pytest.mark.parametrize("name", [n for n in sorted(EXPECTED_STEPS) if not n.startswith("13_")])
def test_logs_without_errors_are_not_diagnosed_as_failed(name: str) -> None:
    result = diagnose(LOGS / name)
    assert (result.status, result.category) == ("incomplete", "none")
    assert result.last_step == EXPECTED_STEPS[name][-1]
